package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.OutcomeUnknownException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A channel that refuses the write before taking a byte (opened for reading only, or closed before the batch):
 * the batch fails whole, not written, with a message saying why; no item is told its outcome is unknown.
 */
@Timeout(30)
class ByteSinkUnwritableChannelTest {
  private static final ByteSink.Encoder<String> LINES =
      (line, buffer) -> buffer.put((line + "\n").getBytes(StandardCharsets.UTF_8));

  @TempDir
  Path dir;

  @Test
  void readOnlyFileChannel_itemsNotToldOutcomeUnknown_failureSaysWhy() throws Exception {
    Path file = Files.createFile(dir.resolve("ro"));
    Throwable buildOrWrite = null;
    RecordingBatch<String, Long> batch = RecordingBatch.of("a", "b");
    try (FileChannel readOnly = FileChannel.open(file, StandardOpenOption.READ)) {
      try {
        ByteSink<String> sink = ByteSink.toChannel(readOnly, LINES).build();
        try {
          sink.write(batch);
        } finally {
          try {
            sink.close();
          } catch (Exception ignored) {
            // not under test here
          }
        }
      } catch (Exception e) {
        buildOrWrite = e;
      }
    }
    assertThat(Files.size(file)).isZero();
    assertThat(batch.failed().values()).as("items told 'outcome unknown' for a file that cannot be written")
        .noneMatch(OutcomeUnknownException::isIn);
    if (buildOrWrite != null) {
      assertThat(buildOrWrite.getMessage()).as("what build() or write() threw says why").isNotBlank();
    }
  }
  /** The same for a FileChannel closed before the batch: FileChannel.write throws ClosedChannelException on entry. */
  @Test
  void fileChannelClosedBeforeTheBatch_itemsNotToldOutcomeUnknown() throws Exception {
    Path file = dir.resolve("closed");
    FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
        StandardOpenOption.APPEND);
    ByteSink<String> sink = ByteSink.toChannel(channel, LINES).build();
    channel.close(); // by its owner, or by an interrupt of another thread's operation on it
    RecordingBatch<String, Long> batch = RecordingBatch.of("a", "b");
    try {
      sink.write(batch);
    } catch (Exception thrownWhole) {
      // the acceptable outcome: nothing was written, the batch fails whole
    }
    assertThat(Files.size(file)).isZero();
    assertThat(batch.failed().values()).as("items told 'outcome unknown' for a write that never started")
        .noneMatch(OutcomeUnknownException::isIn);
  }

  /** A FileChannel closed before the batch: the failure says why. */
  @Test
  void fileChannelClosedBeforeTheBatch_failureSaysWhy() throws Exception {
    Path file = dir.resolve("closed");
    FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
        StandardOpenOption.APPEND);
    ByteSink<String> sink = ByteSink.toChannel(channel, LINES).build();
    channel.close();
    Throwable thrown = null;
    try {
      sink.write(RecordingBatch.of("a", "b"));
    } catch (Exception e) {
      thrown = e;
    }
    assertThat(thrown).isNotNull();
    assertThat(thrown.getMessage()).as("what write() threw (%s) says why", thrown).isNotBlank();
  }

  /**
   * A FileChannel closed between two write calls of one batch: the item whose bytes are in the file is not told
   * that nothing was written.
   */
  @Test
  void fileChannelClosedBetweenTwoWritesOfABatch_failureDoesNotSayNothingWasWritten() throws Exception {
    Path file = dir.resolve("mid");
    FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
        StandardOpenOption.APPEND);
    ByteSink.Encoder<String> closing = (line, buffer) -> {
      byte[] bytes = (line + "\n").getBytes(StandardCharsets.UTF_8);
      if (buffer.remaining() < bytes.length) {
        throw new java.nio.BufferOverflowException();
      }
      if (line.startsWith("b")) {
        try {
          channel.close(); // after the first buffer went out, before the second
        } catch (java.io.IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      }
      buffer.put(bytes);
    };
    RecordingBatch<String, Long> batch = RecordingBatch.of("aaaaaa", "bbbbbb");
    try (ByteSink<String> sink = ByteSink.toChannel(channel, closing).bufferSize(8).build()) {
      try {
        sink.write(batch);
      } catch (Exception thrownWhole) {
        // not expected: bytes of the batch are in the file
      }
    } catch (Exception closeFailure) {
      // not under test
    }
    assertThat(Files.readString(file)).as("the first write call's bytes").isEqualTo("aaaaaa\n");
    Throwable toldA = batch.failed().get(0);
    assertThat(toldA).as("what 'aaaaaa' (in the file) was told").isNotNull();
    assertThat(String.valueOf(toldA.getMessage())).as("the message told to 'aaaaaa', whose bytes are in the file")
        .doesNotContain("nothing of the batch was written").contains("may be in the file");
  }
}
