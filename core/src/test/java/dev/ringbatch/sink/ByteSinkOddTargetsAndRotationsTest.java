package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.OutcomeUnknownException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** ByteSink on targets other than a plain regular file, and rotations at odd moments: a close mid-batch, before the first batch. */
@Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class ByteSinkOddTargetsAndRotationsTest {
  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final ByteSink.Encoder<String> LINES =
      (line, buffer) -> buffer.put((line + "\n").getBytes(StandardCharsets.UTF_8));

  @TempDir
  Path dir;

  @AfterEach
  void clearInterrupt() {
    Thread.interrupted();
  }

  private static void copytruncate(Path file, Path to) throws Exception {
    Files.write(to, Files.readAllBytes(file));
    try (FileChannel f = FileChannel.open(file, StandardOpenOption.WRITE)) {
      f.truncate(0);
    }
  }

  /**
   * copytruncate in the middle of a batch (after its first write call), then close() while the consumer is still in
   * the batch: the first item's bytes are in the rotated copy; the sink must not tell it "failed".
   */
  @Test
  void closeMidBatchAfterCopytruncate_itemInTheRotatedCopyIsNotToldFailed() throws Exception {
    Path file = dir.resolve("log");
    CountDownLatch encoding = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    ByteSink.Encoder<String> waiting = (line, buffer) -> {
      if (line.equals("wait")) {
        encoding.countDown();
        try {
          assertThat(release.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
        } catch (InterruptedException e) {
          throw new AssertionError(e);
        }
      }
      LINES.encode(line, buffer);
    };
    ByteSink<String> sink = ByteSink.toFile(file, waiting).bufferSize(8).build();
    sink.write(RecordingBatch.of("kept"));
    String big = "x".repeat(20); // larger than the buffer: written alone, before "wait" is encoded
    RecordingBatch<String, Long> late = RecordingBatch.of(big, "wait");
    CompletableFuture<Throwable> lateThrown = OwnThread.supply(() -> {
      try {
        sink.write(late);
        return null;
      } catch (Throwable t) {
        return t;
      }
    });
    assertThat(encoding.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
    copytruncate(file, dir.resolve("log.1"));
    sink.close();
    release.countDown();
    Throwable thrown = lateThrown.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);

    String rotated = Files.readString(dir.resolve("log.1"));
    assertThat(rotated).isEqualTo("kept\n" + big + "\n");
    // thrown by write(): "every item fails with it, nothing of the batch is in the file" -- but 'big' is in log.1
    Throwable toldBig = thrown != null ? thrown : late.failed().get(0);
    assertThat(late.completed()).doesNotContainKey(0);
    assertThat(OutcomeUnknownException.isIn(toldBig))
        .as("item 0 (in log.1 at offset 5) was told: %s (write threw: %s)", toldBig, thrown)
        .isTrue();
  }

  /**
   * toChannel with a FileChannel opened without APPEND (allowed: positioned at its size): after a copytruncate the
   * class comment promises the next batch at the file's new end; a non-appending channel writes past the end, and
   * the file (and its next rotated copy) starts with a hole of NULs.
   */
  @Test
  void nonAppendingFileChannel_copytruncateBetweenBatches_nextBatchAtTheNewEnd_noHole() throws Exception {
    Path file = dir.resolve("log");
    Files.createFile(file);
    RecordingBatch<String, Long> next = RecordingBatch.of("after");
    try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE);
        ByteSink<String> sink = ByteSink.toChannel(channel, LINES).build()) {
      sink.write(RecordingBatch.of("x".repeat(1000)));
      copytruncate(file, dir.resolve("log.1"));
      sink.write(next);
    }
    assertThat(next.completed()).as("offset of 'after'").containsExactly(Map.entry(0, 0L));
    assertThat(Files.size(file)).as("size of the file, which got one line of 6 bytes since the rotation")
        .isEqualTo(6);
  }

  /**
   * fsync, the sink created its file, and the file is renamed away (a rename rotation, or mv) before the first batch:
   * the sink keeps writing to the renamed file (its channel), but forcing the directory resolves the path again,
   * fails, and every batch fails, for ever.
   */
  @Test
  void fsync_createdFileRenamedBeforeTheFirstBatch_batchesStillWritten() throws Exception {
    Path file = dir.resolve("log");
    try (ByteSink<String> sink = ByteSink.toFile(file, LINES).fsync(true).build()) {
      Files.move(file, dir.resolve("log.1"));
      Throwable first = null;
      try {
        sink.write(RecordingBatch.of("a"));
      } catch (Exception e) {
        first = e;
      }
      RecordingBatch<String, Long> second = RecordingBatch.of("b");
      Throwable secondThrown = null;
      try {
        sink.write(second);
      } catch (Exception e) {
        secondThrown = e;
      }
      assertThat(secondThrown).as("second batch threw (first threw %s)", first).isNull();
      assertThat(second.completed()).containsOnlyKeys(0);
    }
  }

  /** toFile on a device that is not a regular file (/dev/null): its size stays 0 whatever is written. */
  @Test
  void toFileOnDevNull_itemsToldWritten_notOutcomeUnknown() throws Exception {
    RecordingBatch<String, Long> batch = RecordingBatch.of("a", "b");
    Throwable thrown = null;
    try (ByteSink<String> sink = ByteSink.toFile(Path.of("/dev/null"), LINES).build()) {
      try {
        sink.write(batch);
      } catch (Exception e) {
        thrown = e;
      }
    }
    assertThat(thrown).isNull();
    assertThat(batch.failed()).as("failed items").isEmpty();
    assertThat(batch.completed()).containsOnlyKeys(0, 1);
  }

  /** toFile on a named pipe a log shipper reads (or /dev/stdout in a container): its size stays 0. */
  @Test
  void toFileOnANamedPipe_itemsToldWritten_notOutcomeUnknown() throws Exception {
    Path fifo = dir.resolve("pipe");
    assertThat(new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor()).isZero();
    CompletableFuture<byte[]> read = OwnThread.supply(() -> {
      try (java.io.InputStream in = Files.newInputStream(fifo)) {
        return in.readAllBytes();
      } catch (java.io.IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    });
    RecordingBatch<String, Long> batch = RecordingBatch.of("a", "b");
    RecordingBatch<String, Long> next = RecordingBatch.of("c");
    try (ByteSink<String> sink = ByteSink.toFile(fifo, LINES).build()) {
      sink.write(batch);
      sink.write(next);
    }
    assertThat(read.get(WAIT.toMillis(), TimeUnit.MILLISECONDS)).asString().isEqualTo("a\nb\nc\n");
    assertThat(batch.failed()).as("failed items, whose bytes the reader got").isEmpty();
    assertThat(next.failed()).as("failed items of the next batch, whose bytes the reader got").isEmpty();
  }
}
