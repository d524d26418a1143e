package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.OutcomeUnknownException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.BufferOverflowException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The file is rotated (logrotate's copytruncate, or a rename) after the first write call of a batch and before its
 * second, which then fails (a stray interrupt). The first call's bytes are in the rotated file: their items are told
 * their outcome is unknown, not "failed" (not written), which would invite a retry that duplicates them.
 */
@Timeout(30)
class ByteSinkRotatedBetweenWritesTest {
  @TempDir
  Path dir;

  @AfterEach
  void clearInterrupt() {
    Thread.interrupted();
  }

  private interface Rotation {
    void rotate(Path file, Path rotated) throws IOException;
  }

  private static ByteSink.Encoder<String> rotatingOn(String trigger, Path file, Path rotated, Rotation rotation) {
    return (line, buffer) -> {
      byte[] bytes = (line + "\n").getBytes(StandardCharsets.UTF_8);
      if (buffer.remaining() < bytes.length) {
        throw new BufferOverflowException(); // called again after the sink wrote the buffer
      }
      if (line.equals(trigger)) { // the first write call of the batch went out: rotate, then a stray interrupt
        try {
          rotation.rotate(file, rotated);
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
        Thread.currentThread().interrupt();
      }
      buffer.put(bytes);
    };
  }

  private List<String> toldFailedButInRotatedFile(Rotation rotation) throws Exception {
    Path file = dir.resolve("log");
    Path rotated = dir.resolve("log.1");
    RecordingBatch<String, Long> batch = RecordingBatch.of("a", "bbbbbbbbbb", "c");
    try (ByteSink<String> sink = ByteSink.toFile(file, rotatingOn("c", file, rotated, rotation)).bufferSize(13)
        .build()) {
      sink.write(RecordingBatch.of("kept"));
      Throwable thrown = null;
      try {
        sink.write(batch);
      } catch (Exception e) {
        thrown = e;
      } finally {
        Thread.interrupted();
      }
      String inRotated = Files.readString(rotated);
      assertThat(inRotated).as("the rotated file holds the first write call's bytes")
          .isEqualTo("kept\na\nbbbbbbbbbb\n");
      List<String> wrong = new ArrayList<>();
      for (int i = 0; i < 2; i++) { // 'a' and 'bbbbbbbbbb': in the rotated file
        Throwable told = batch.failed().get(i);
        if (thrown != null && told == null && !batch.completed().containsKey(i)) {
          told = thrown; // write() threw: every item without an outcome fails with it
        }
        if (told != null && !OutcomeUnknownException.isIn(told)) {
          wrong.add(batch.item(i) + " told failed with " + told);
        }
      }
      return wrong;
    }
  }

  @Test
  void copytruncateBetweenTwoWriteCallsOfAFailingBatch_itemsInTheRotatedCopyAreNotToldNotWritten()
      throws Exception {
    List<String> wrong = toldFailedButInRotatedFile((file, rotated) -> {
      Files.copy(file, rotated); // logrotate copytruncate: copy, then truncate in place
      try (FileChannel f = FileChannel.open(file, StandardOpenOption.WRITE)) {
        f.truncate(0);
      }
    });
    assertThat(wrong).as("items whose bytes are in log.1 but were told failed (not written)").isEmpty();
  }

  @Test
  void renameBetweenTwoWriteCallsOfAFailingBatch_itemsInTheRenamedFileAreNotToldNotWritten() throws Exception {
    List<String> wrong = toldFailedButInRotatedFile(
        (file, rotated) -> Files.move(file, rotated, StandardCopyOption.ATOMIC_MOVE));
    assertThat(wrong).as("items whose bytes are in the very file the sink wrote (renamed to log.1), told failed")
        .isEmpty();
  }
}
