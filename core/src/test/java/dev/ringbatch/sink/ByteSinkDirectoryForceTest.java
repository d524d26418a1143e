package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Group commit on a file the sink creates: {@code fsync} of the file does not make its directory entry durable,
 * so after a power loss the new file, and every record told durable, could vanish. Found by review: the sink
 * forced only the file. The directory channels the sink opens are observed through its test seam.
 */
@Timeout(60)
class ByteSinkDirectoryForceTest {
  private static final ByteSink.Encoder<String> LINES =
      (line, buffer) -> buffer.put((line + "\n").getBytes(StandardCharsets.UTF_8));

  @TempDir
  Path dir;

  /** The directories the sink opened to force, in order, and their channels. */
  private final List<Path> opened = new CopyOnWriteArrayList<>();
  private final List<ObservingFileChannel> directories = new CopyOnWriteArrayList<>();
  /** What each directory force records in its channel's {@code onForceResults}. */
  private volatile BooleanSupplier atForce = () -> true;
  private volatile int directoryForceFailures;

  private FileChannel observe(Path directory) throws IOException {
    ObservingFileChannel channel = new ObservingFileChannel(FileChannel.open(directory, StandardOpenOption.READ));
    channel.onForce = atForce;
    channel.forceFailures = directoryForceFailures;
    opened.add(directory);
    directories.add(channel);
    return channel;
  }

  private ByteSink<String> sink(Path file, boolean fsync) throws IOException {
    return ByteSink.toFile(file, LINES).fsync(fsync).directoryOpener(this::observe).build();
  }

  @Test
  void fsync_newFile_directoryForcedOnceBeforeTheFirstItemIsTold() throws Exception {
    Path file = dir.resolve("wal");
    RecordingBatch<String, Long> first = RecordingBatch.of("a", "b");
    atForce = () -> first.completed().isEmpty() && first.failed().isEmpty();
    try (ByteSink<String> sink = sink(file, true)) {
      sink.write(first);
      sink.write(RecordingBatch.of("c"));

      assertThat(first.completed()).containsExactly(Map.entry(0, 0L), Map.entry(1, 2L));
      assertThat(sink.directoryForces()).isEqualTo(1); // was 0: only the file was forced
      assertThat(sink.forces()).isEqualTo(2);
    }
    assertThat(opened).containsExactly(dir.toAbsolutePath());
    assertThat(directories).singleElement().satisfies(directory -> {
      assertThat(directory.events).containsExactly("force");
      assertThat(directory.onForceResults).containsExactly(true); // no item of the batch told yet
      assertThat(directory.isOpen()).isFalse();
    });
    assertThat(Files.readString(file)).isEqualTo("a\nb\nc\n");
  }

  @Test
  void fsync_existingFile_directoryNotForced() throws Exception {
    Path file = dir.resolve("wal");
    Files.writeString(file, "old\n");
    try (ByteSink<String> sink = sink(file, true)) {
      sink.write(RecordingBatch.of("new"));
      assertThat(sink.directoryForces()).isZero();
    }
    assertThat(opened).isEmpty();
  }

  @Test
  void noFsync_newFile_directoryNotForced() throws Exception {
    try (ByteSink<String> sink = sink(dir.resolve("log"), false)) {
      sink.write(RecordingBatch.of("a"));
      assertThat(sink.directoryForces()).isZero();
    }
    assertThat(opened).isEmpty();
  }

  @Test
  void fsync_directoryForceFails_batchRolledBackAndThrown_nextBatchForcesIt() throws Exception {
    Path file = dir.resolve("wal");
    directoryForceFailures = 1;
    try (ByteSink<String> sink = sink(file, true)) {
      assertThatThrownBy(() -> sink.write(RecordingBatch.of("a")))
          .isExactlyInstanceOf(IOException.class)
          .hasMessage("cannot force the directory " + dir.toAbsolutePath() + " after creating wal in it, so the"
              + " file's name is not yet durable: java.io.IOException: Input/output error");
      assertThat(Files.size(file)).isZero();

      directoryForceFailures = 0;
      RecordingBatch<String, Long> retried = RecordingBatch.of("a");
      sink.write(retried);
      assertThat(retried.completed()).containsExactly(Map.entry(0, 0L));
      assertThat(sink.directoryForces()).as("the failed force and the one that worked").isEqualTo(2);
    }
    assertThat(directories).hasSize(2).allSatisfy(directory -> assertThat(directory.isOpen()).isFalse());
    assertThat(Files.readString(file)).isEqualTo("a\n");
  }
}
