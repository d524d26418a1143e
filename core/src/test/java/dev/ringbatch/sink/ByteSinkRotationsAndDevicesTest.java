package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.ringbatch.OutcomeUnknownException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** ByteSink against rotations during a write, channels without APPEND, devices and pipes, and forces that throw. */
@Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class ByteSinkRotationsAndDevicesTest {
  private static final ByteSink.Encoder<String> LINES =
      (line, buffer) -> buffer.put((line + "\n").getBytes(StandardCharsets.UTF_8));

  @TempDir
  Path dir;

  @AfterEach
  void clearInterrupt() {
    Thread.interrupted();
  }


  /**
   * toChannel with a FileChannel opened without APPEND (allowed), and the file truncated (copytruncate) between
   * two write calls of one batch: the class comment promises that a file that changed during a batch's writes tells
   * its items outcome unknown; the channel writes at its old position instead, leaving a hole of NULs, and the
   * items are told written at offsets that hold NULs.
   */
  @Test
  void nonAppendingFileChannel_truncatedBetweenTwoWriteCalls_noItemToldWrittenWhereItsBytesAreNot() throws Exception {
    Path file = dir.resolve("log");
    Files.createFile(file);
    String big = "x".repeat(20); // larger than the buffer: written alone, in a call of its own
    ByteSink.Encoder<String> rotating = (line, buffer) -> {
      if (line.equals("r")) { // logrotate's copytruncate, between the batch's two write calls
        try (FileChannel rotate = FileChannel.open(file, StandardOpenOption.WRITE)) {
          rotate.truncate(0);
        } catch (java.io.IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      }
      LINES.encode(line, buffer);
    };
    RecordingBatch<String, Long> batch = RecordingBatch.of(big, "r");
    byte[] content;
    try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE);
        ByteSink<String> sink = ByteSink.toChannel(channel, rotating).bufferSize(8).build()) {
      sink.write(RecordingBatch.of("kept"));
      try {
        sink.write(batch);
      } catch (Exception failedWhole) {
        // acceptable: then nothing is told written
      }
      content = Files.readAllBytes(file);
    }
    String text = new String(content, StandardCharsets.ISO_8859_1);
    String[] records = {big + "\n", "r\n"};
    for (Map.Entry<Integer, Long> told : batch.completed().entrySet()) {
      assertThat(text.startsWith(records[told.getKey()], told.getValue().intValue()))
          .as("item %s told written at offset %s; the file holds '%s'", told.getKey(), told.getValue(),
              text.replace("\n", "\\n").replace("\0", "\\0"))
          .isTrue();
    }
  }


  /** build() documents IllegalStateException when fsync is set but the target is not a file. */
  @Test
  void toFileOnDevNull_withFsync_throwsTheDocumentedIllegalStateException() {
    assertThatThrownBy(() -> ByteSink.toFile(Path.of("/dev/null"), LINES).fsync(true).build())
        .isInstanceOf(IllegalStateException.class);
  }

  /**
   * A rename rotation (logrotate's "create": rename, then a new empty file at the path) before the sink's batch,
   * and an interrupt during that batch's write call to the renamed file. The sink reopens the path, finds the new
   * empty file, whose size matches "nothing returned", truncates it and says nothing of the batch is in the file,
   * retryable: the record is whole in the renamed file.
   */
  @Test
  void renameRotation_interruptDuringTheWrite_batchToldNotWritten_butItIsInTheRenamedFile() throws Exception {
    Path file = dir.resolve("log");
    Path rotated = dir.resolve("log.1");
    int size = 128 << 20;
    byte[] chunk = new byte[1 << 20];
    java.util.Arrays.fill(chunk, (byte) 'x');
    ByteSink.Encoder<String> renaming = (line, buffer) -> {
      try {
        Files.move(file, rotated);
        Files.createFile(file);
      } catch (java.io.IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
      for (int i = 0; i < size / chunk.length; i++) {
        buffer.put(chunk);
      }
    };
    RecordingBatch<String, Long> batch = RecordingBatch.of("big");
    try (ByteSink<String> sink = ByteSink.toFile(file, renaming).bufferSize(size).maxRecordBytes(size).build()) {
      CompletableFuture<Throwable> thrown = new CompletableFuture<>();
      Thread consumer = new Thread(() -> {
        try {
          sink.write(batch);
          thrown.complete(null);
        } catch (Throwable t) {
          thrown.complete(t);
        }
      });
      consumer.start();
      await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(1))
          .until(() -> Files.exists(rotated) && Files.size(rotated) > 0);
      consumer.interrupt(); // while the write call is in progress
      Throwable outcome = thrown.get(30, TimeUnit.SECONDS);
      long inRotated = Files.size(rotated);
      boolean toldNotWritten = outcome != null && !OutcomeUnknownException.isIn(outcome)
          || batch.failed().values().stream().anyMatch(f -> !OutcomeUnknownException.isIn(f));
      if (toldNotWritten) {
        assertThat(inRotated).as("bytes of a batch told 'not written' (%s) in the renamed file", outcome).isZero();
      }
    }
  }

  /** toChannel with a FileChannel on a named pipe (as FileOutputStream(FileDescriptor.out).getChannel() in a container). */
  @Test
  void toChannel_fileChannelOnAPipe_builds_andWrites() throws Exception {
    Path fifo = dir.resolve("pipe2");
    assertThat(new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor()).isZero();
    CompletableFuture<byte[]> read = OwnThread.supply(() -> {
      try (java.io.InputStream in = Files.newInputStream(fifo)) {
        return in.readAllBytes();
      } catch (java.io.IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    });
    RecordingBatch<String, Long> batch = RecordingBatch.of("a", "b");
    try (FileChannel pipe = FileChannel.open(fifo, StandardOpenOption.WRITE);
        ByteSink<String> sink = ByteSink.toChannel(pipe, LINES).build()) {
      sink.write(batch);
    }
    assertThat(read.get(10, TimeUnit.SECONDS)).asString().isEqualTo("a\nb\n");
    assertThat(batch.failed()).isEmpty();
  }

  /** forces() counts a force that threw (ByteSinkCallCountsTest); directoryForces() does not. */
  @Test
  void directoryForceThatThrows_isCounted_asAFileForceThatThrowsIs() throws Exception {
    Path file = dir.resolve("log");
    int[] opens = {0};
    OwnedFile.DirectoryOpener failingOnce = directory -> {
      ObservingFileChannel observed = new ObservingFileChannel(FileChannel.open(directory, StandardOpenOption.READ));
      if (opens[0]++ == 0) {
        observed.forceFailures = 1;
      }
      return observed;
    };
    try (ByteSink<String> sink = ByteSink.toFile(file, LINES).fsync(true).directoryOpener(failingOnce).build()) {
      try {
        sink.write(RecordingBatch.of("a"));
      } catch (Exception expected) {
        // the directory force failed: the batch is rolled back
      }
      sink.write(RecordingBatch.of("b"));
      assertThat(opens[0]).isEqualTo(2);
      assertThat(sink.directoryForces()).as("directory fsync calls made, the first of which threw").isEqualTo(2);
    }
  }
}
