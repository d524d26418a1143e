package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.OutcomeUnknownException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A stray interrupt of the consumer thread during a {@code toFile} batch. The batcher tolerates stray interrupts
 * (SyncBatchWriter.clearStrayInterrupt: "must neither fail a batch"), but an interrupt seen by
 * {@link java.nio.channels.FileChannel#write} closes the channel
 * ({@link java.nio.channels.ClosedByInterruptException}).
 * Found by review: the sink then could not truncate its file back, reported items that never reached the file
 * as outcome unknown, and failed every later batch for good, although it owns the path and can reopen it.
 */
@Timeout(30)
class ByteSinkInterruptTest {
  /** An encoder that, on item "poke", re-asserts an interrupt, as code restoring a swallowed interrupt does. */
  private static final ByteSink.Encoder<String> LINES = (line, buffer) -> {
    if (line.equals("poke")) {
      Thread.currentThread().interrupt();
    }
    buffer.put((line + "\n").getBytes(StandardCharsets.UTF_8));
  };

  @TempDir
  Path dir;

  @AfterEach
  void clearInterrupt() {
    Thread.interrupted();
  }

  /** Writes a batch whose encoder re-asserts an interrupt; returns what write threw, or null. */
  private static Throwable writeInterrupted(ByteSink<String> sink, RecordingBatch<String, Long> batch) {
    try {
      sink.write(batch);
      return null;
    } catch (Exception e) {
      return e;
    } finally {
      Thread.interrupted(); // as the batcher does before its next sink call (clearStrayInterrupt)
    }
  }

  @Test
  void afterAnInterruptedBatch_theNextBatchIsWritten() throws Exception {
    Path file = dir.resolve("log");
    try (ByteSink<String> sink = ByteSink.toFile(file, LINES).build()) {
      writeInterrupted(sink, RecordingBatch.of("a", "poke", "b"));
      assertThat(Files.size(file)).isZero(); // FileChannel.write saw the interrupt on entry and wrote nothing

      RecordingBatch<String, Long> second = RecordingBatch.of("c");
      sink.write(second); // threw "cannot truncate the file back to offset 0 ..." before the fix, every time

      assertThat(second.completed()).containsEntry(0, 0L);
      assertThat(Files.readString(file)).isEqualTo("c\n");
    }
  }

  @Test
  void interruptedBatch_nothingInTheFile_isThrownAsRetryable_notOutcomeUnknown() throws Exception {
    Path file = dir.resolve("log");
    try (ByteSink<String> sink = ByteSink.toFile(file, LINES).build()) {
      RecordingBatch<String, Long> first = RecordingBatch.of("a", "poke", "b");
      Throwable thrown = writeInterrupted(sink, first);

      assertThat(Files.size(file)).isZero();
      // The sink owns the path: it can reopen it, roll back, and throw, as for any other failed file write.
      assertThat(first.failed().values()).noneMatch(OutcomeUnknownException::isIn); // all 3 were, before the fix
      assertThat(thrown).isNotNull();
    } // and close() succeeds: it no longer has a failed truncation to finish
  }

  @Test
  void fsync_fileGoneWhenReopened_createdAgain_itsDirectoryForced() throws Exception {
    Path file = dir.resolve("log");
    Files.createFile(file);
    try (ByteSink<String> sink = ByteSink.toFile(file, LINES).fsync(true).build()) {
      Files.delete(file); // the sink's channel still holds the old file
      writeInterrupted(sink, RecordingBatch.of("poke")); // the rollback reopens the path: a new file

      RecordingBatch<String, Long> next = RecordingBatch.of("c");
      sink.write(next);

      assertThat(next.completed()).containsEntry(0, 0L);
      assertThat(sink.directoryForces()).isEqualTo(1); // the file existed when built: only the new one's entry
    }
    assertThat(Files.readString(file)).isEqualTo("c\n");
  }
}
