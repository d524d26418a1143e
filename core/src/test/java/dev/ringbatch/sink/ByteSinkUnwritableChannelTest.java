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
}
