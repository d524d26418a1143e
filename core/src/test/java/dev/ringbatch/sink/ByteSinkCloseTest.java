package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.CloseReport;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A {@link ByteSink} closed while its consumer is still inside {@code write}: a batcher's close that times out
 * abandons the batch but cannot stop the consumer, which goes on when its encoder returns. Found by review: the
 * late write failed on the closed channel, and its rollback reopened the file by path and truncated it, wiping
 * the records a new sink on the same file had been told were durable, and leaking the reopened descriptor.
 */
@Timeout(60)
class ByteSinkCloseTest {
  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final String CLOSED = "ByteSink is closed: it writes nothing more to its file";
  private static final ByteSink.Encoder<String> LINES =
      (line, buffer) -> buffer.put((line + "\n").getBytes(StandardCharsets.UTF_8));

  @TempDir
  Path dir;

  /** {@link #LINES}, but the item "wait" first opens {@code entered}, then waits for {@code release}. */
  private static ByteSink.Encoder<String> waitingOn(CountDownLatch entered, CountDownLatch release) {
    return (line, buffer) -> {
      if (line.equals("wait")) {
        entered.countDown();
        awaitThroughInterrupts(release);
      }
      LINES.encode(line, buffer);
    };
  }

  /** Waits for {@code latch} as a slow encoder would, deaf to interrupts; restores a seen interrupt after. */
  private static void awaitThroughInterrupts(CountDownLatch latch) {
    boolean interrupted = false;
    while (true) {
      try {
        if (!latch.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
          throw new AssertionError("the test never released the encoder");
        }
        break;
      } catch (InterruptedException e) { // the batcher's close interrupts its consumer: keep waiting, as stated
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  /** How many of this process's open descriptors name {@code file} (Linux: /proc/self/fd). */
  private static long descriptorsOf(Path file) throws IOException {
    Path real = file.toRealPath();
    try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
      return fds.filter(fd -> {
        try {
          return Files.readSymbolicLink(fd).equals(real);
        } catch (NoSuchFileException closedMeanwhile) { // by another thread, after the listing
          return false;
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      }).count();
    }
  }

  @Test
  void closedWhileEncoding_newSinkOnTheFile_lateWriteFailsAsClosed_newRecordsKept() throws Exception {
    Path file = dir.resolve("log");
    CountDownLatch encoding = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    ByteSink<String> old = ByteSink.toFile(file, waitingOn(encoding, release)).fsync(true).build();
    CompletableFuture<RecordingBatch<String, Long>> lateBatch = new CompletableFuture<>();
    AtomicReference<Throwable> lateThrown = new AtomicReference<>();
    BatchSink<String, Long> watched = batch -> { // what the old sink tells its late batch, which the batcher drops
      RecordingBatch<String, Long> seen = RecordingBatch.of(batch.items().toArray(new String[0]));
      try {
        old.write(seen);
      } catch (Throwable t) {
        lateThrown.set(t);
        throw t;
      } finally {
        lateBatch.complete(seen);
      }
    };
    Batcher<String, Long> batcher = Batcher.of("closing", BatcherConfig.ofDefaults(), watched);
    CompletableFuture<Long> oldItem = batcher.submit("wait");
    assertThat(encoding.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();

    CloseReport report = batcher.close(Duration.ofMillis(100));
    assertThat(report.abandoned()).isEqualTo(1);
    old.close();

    try (ByteSink<String> next = ByteSink.toFile(file, LINES).fsync(true).build()) {
      RecordingBatch<String, Long> durable = RecordingBatch.of("new1", "new2");
      next.write(durable);
      assertThat(durable.completed()).containsExactly(Map.entry(0, 0L), Map.entry(1, 5L));

      release.countDown();
      RecordingBatch<String, Long> late = lateBatch.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);

      assertThat(Files.readString(file)).isEqualTo("new1\nnew2\n"); // was "": truncated by the late rollback
      assertThat(descriptorsOf(file)).isEqualTo(1); // the new sink's; was 2: the late rollback's reopen leaked
      RecordingBatch<String, Long> third = RecordingBatch.of("new3");
      next.write(third);
      assertThat(third.completed()).containsExactly(Map.entry(0, 10L));
      assertThat(Files.readString(file)).isEqualTo("new1\nnew2\nnew3\n");

      assertThat(late.completed()).isEmpty();
      assertThat(lateThrown.get()).isExactlyInstanceOf(IllegalStateException.class).hasMessage(CLOSED);
      assertThat(oldItem).failsWithin(WAIT)
        .withThrowableOfType(java.util.concurrent.ExecutionException.class);
    }
  }

  @Test
  void writeAfterClose_everyItemFailsAsClosed_fileUntouched() throws Exception {
    Path file = dir.resolve("log");
    ByteSink<String> sink = ByteSink.toFile(file, LINES).build();
    sink.write(RecordingBatch.of("a"));
    sink.close();

    RecordingBatch<String, Long> late = RecordingBatch.of("b", "c");
    sink.write(late); // reopened the file by path and appended, before the fix

    assertThat(late.completed()).isEmpty();
    assertThat(late.failed()).containsOnlyKeys(0, 1);
    assertThat(late.failed().values()).allSatisfy(cause ->
        assertThat(cause).isExactlyInstanceOf(IllegalStateException.class).hasMessage(CLOSED));
    assertThat(Files.readString(file)).isEqualTo("a\n");
    assertThat(descriptorsOf(file)).isZero();
  }

  @Test
  void closedAfterPartOfTheBatchWentOut_closeTruncatesIt_lateWriteFailsAsClosed() throws Exception {
    Path file = dir.resolve("log");
    CountDownLatch encoding = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    ByteSink<String> sink = ByteSink.toFile(file, waitingOn(encoding, release)).bufferSize(8).fsync(true).build();
    sink.write(RecordingBatch.of("kept"));
    String big = "x".repeat(20); // larger than the buffer: written alone, before "wait" is encoded
    RecordingBatch<String, Long> late = RecordingBatch.of(big, "wait");
    CompletableFuture<Throwable> lateThrown = CompletableFuture.supplyAsync(() -> {
      try {
        sink.write(late);
        return null;
      } catch (Throwable t) {
        return t;
      }
    });
    assertThat(encoding.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
    assertThat(Files.readString(file)).isEqualTo("kept\n" + big + "\n");

    sink.close();
    assertThat(Files.readString(file)).isEqualTo("kept\n"); // the batch's bytes stayed, before the fix

    release.countDown();
    assertThat(lateThrown).succeedsWithin(WAIT).isInstanceOfSatisfying(IllegalStateException.class,
        thrown -> assertThat(thrown).hasMessage(CLOSED));
    assertThat(late.completed()).isEmpty();
    assertThat(Files.readString(file)).isEqualTo("kept\n");
    assertThat(descriptorsOf(file)).isZero();
  }
}
