package dev.ringbatch.sink;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * A real, small tmpfs under {@code target/} for disk-full tests, and a filler file that takes its free space.
 * Only root may mount: a test that needs the disk calls {@link #assumeMounted()}, and is skipped where mounting
 * is not permitted.
 */
final class TmpfsMount {
  private static final int PAGE = 4096;

  final Path dir;
  private final Path filler;
  /** Why the tmpfs could not be mounted, or null if it is mounted. */
  private final String unavailable;

  private TmpfsMount(Path dir, String unavailable) {
    this.dir = dir;
    this.filler = dir.resolve("filler");
    this.unavailable = unavailable;
  }

  /** Mounts a tmpfs of {@code size} (as mount's {@code size=} option takes it), if permitted. */
  static TmpfsMount mount(String name, String size) throws IOException, InterruptedException {
    Path dir = Path.of("target", "tmpfs-" + name + "-" + ProcessHandle.current().pid()).toAbsolutePath();
    Files.createDirectories(dir);
    String output = run("mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", dir.toString());
    return new TmpfsMount(dir, output == null ? null : "cannot mount a tmpfs (root only): " + output);
  }

  /** Skips the calling test unless the tmpfs is mounted. */
  void assumeMounted() {
    Assumptions.assumeTrue(unavailable == null, unavailable);
  }

  /** Unmounts (if mounted) and removes the mount point. */
  void unmount() throws IOException, InterruptedException {
    if (unavailable != null) {
      Files.deleteIfExists(dir);
      return;
    }
    String output = run("umount", dir.toString());
    if (output != null) {
      throw new IOException("umount " + dir + " failed: " + output);
    }
    Files.delete(dir);
  }

  /** Fills the file system with the filler file until a write fails because it is full. */
  void fill() throws IOException {
    ByteBuffer chunk = ByteBuffer.allocate(64 * 1024);
    try (FileChannel out = FileChannel.open(filler, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
        StandardOpenOption.APPEND)) {
      while (true) {
        try {
          out.write(chunk.clear());
        } catch (IOException full) {
          if (!String.valueOf(full.getMessage()).contains("No space left on device")) {
            throw full;
          }
          return;
        }
      }
    }
  }

  /** Frees {@code pages} pages of the filler (4 KiB each), so that the disk takes that much more. */
  void free(int pages) throws IOException {
    try (FileChannel out = FileChannel.open(filler, StandardOpenOption.WRITE)) {
      long size = out.size();
      out.truncate(Math.max(0, size - size % PAGE - (long) pages * PAGE));
    }
  }

  /** Removes the filler: the disk has room again. */
  void release() throws IOException {
    Files.deleteIfExists(filler);
  }

  /** Runs a command; returns null if it succeeded, else its exit code and output. */
  private static String run(String... command) throws IOException, InterruptedException {
    Process process;
    try {
      process = new ProcessBuilder(command).redirectErrorStream(true).start();
    } catch (IOException notInstalled) {
      return notInstalled.toString();
    }
    if (!process.waitFor(30, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      return String.join(" ", command) + " did not finish in 30 s";
    }
    String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
    return process.exitValue() == 0 ? null : "exit " + process.exitValue() + ": " + output;
  }
}
