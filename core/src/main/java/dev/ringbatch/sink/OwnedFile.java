package dev.ringbatch.sink;

import static java.util.Objects.requireNonNull;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import org.jspecify.annotations.Nullable;

/**
 * The file a {@code ByteSink.toFile} sink opens itself, by path, and opens again when an interrupt closed its
 * channel. With fsync, forcing a file it created is not enough: {@code fsync} of a file does not make durable the
 * directory entry that names it, so after a power loss the file, and every record told durable, could be gone. The
 * parent directory is therefore forced once after the sink creates the file (or creates it again on a reopen),
 * before any item written after that is told so. Called under {@code ByteTarget}'s lock.
 */
final class OwnedFile {
  /** Opens a directory so that it can be forced; replaced in tests to observe the force. */
  @FunctionalInterface
  interface DirectoryOpener {
    FileChannel open(Path directory) throws IOException;
  }

  static final DirectoryOpener READ_DIRECTORY = directory -> FileChannel.open(directory, StandardOpenOption.READ);

  /**
   * Whether a directory can be opened as a channel to be forced. Not on Windows, where that open throws: there the
   * directory is not forced, and a new file's name is as durable as the file system makes it without.
   */
  private static final boolean DIRECTORIES_FORCEABLE = !System.getProperty("os.name", "").startsWith("Windows");

  private final Path path;
  private final boolean fsync;
  private final DirectoryOpener directories;
  /** The directory that names a file the sink created, not yet forced; null when none needs it. */
  private @Nullable Path unsyncedDirectory;
  private long directoryForces;
  /** The opened file's key (device and inode on Linux), to tell a reopen that finds another file. */
  private @Nullable Object fileKey;
  private boolean replaced;

  OwnedFile(Path path, boolean fsync, DirectoryOpener directories) {
    this.path = path;
    this.fsync = fsync;
    this.directories = requireNonNull(directories, "directories");
  }

  /**
   * Whether the last {@link #open()} found another file at the path than the one before (rotated away by a rename,
   * or replaced): false when either has no key to tell.
   */
  boolean replaced() {
    return replaced;
  }

  /** Opens the file for appending, creating it if it does not exist. */
  FileChannel open() throws IOException {
    FileChannel opened = openAtPath();
    Object key = null;
    try {
      key = Files.readAttributes(path, BasicFileAttributes.class).fileKey();
    } catch (IOException | RuntimeException noKey) {
      // no key to compare: taken as the same file
    }
    replaced = fileKey != null && key != null && !fileKey.equals(key);
    fileKey = key;
    return opened;
  }

  private FileChannel openAtPath() throws IOException {
    try {
      FileChannel created = FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE,
          StandardOpenOption.APPEND);
      created(created);
      return created;
    } catch (FileAlreadyExistsException exists) { // the usual case on a reopen: the file is there, named durably
      // CREATE still, for a symbolic link to a file that does not exist yet, which CREATE_NEW refuses: then the
      // link's target is created here, and its directory needs the force as much
      boolean existed = Files.exists(path);
      FileChannel opened = FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
          StandardOpenOption.APPEND);
      if (!existed) {
        created(opened);
      }
      return opened;
    }
  }

  /**
   * The file was just created: with fsync, its directory is to be forced before any item is told written. The
   * directory it really is in (through a symbolic link, to the file or to a directory on the way) is resolved now,
   * while the path names it: a rename before the first batch must not leave the force looking for it.
   */
  private void created(FileChannel channel) throws IOException {
    if (fsync && DIRECTORIES_FORCEABLE) {
      try {
        unsyncedDirectory = requireNonNull(path.toRealPath().getParent(), "parent");
      } catch (IOException | RuntimeException e) {
        channel.close();
        throw e;
      }
    }
  }

  /** Forces the parent directory if the file was created since it was last forced; a no-op otherwise. */
  void syncDirectory() throws IOException {
    Path parent = unsyncedDirectory;
    if (parent == null) {
      return;
    }
    directoryForces++; // a force that throws counts, as the file's do
    try (FileChannel directory = directories.open(parent)) {
      directory.force(true);
    } catch (IOException e) {
      throw new IOException("cannot force the directory " + parent + " after creating " + path.getFileName()
          + " in it, so the file's name is not yet durable: " + e, e);
    }
    unsyncedDirectory = null;
  }

  long directoryForces() {
    return directoryForces;
  }
}
