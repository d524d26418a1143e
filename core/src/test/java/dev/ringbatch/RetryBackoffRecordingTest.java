package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Second hostile review: recording stays open on a sync batch after its write threw, while it waits to retry
 * (PendingBatch.recording is cleared only by seal/clear/open). User code that runs in that window on the
 * consumer thread (RetryPolicy.retryOn, StatsRecorder.recordRetry, the JUL handler of the retry warning, the
 * exception's toString) can record into the kept Batch although "recording into it afterwards throws".
 */
class RetryBackoffRecordingTest {
  private final List<Batcher<?, ?>> batchers = new CopyOnWriteArrayList<>();

  @AfterEach
  void closeAll() {
    batchers.forEach(b -> b.close(Duration.ofMillis(200)));
  }

  /**
   * LOST + HANG: retryOn records a failure for every item of the kept batch during the backoff. The retry's
   * PendingBatch.open then finds no item left to view and returns null, which SyncBatchWriter.attempt reads as
   * "a close took the batch" and throws ConsumerStop.TAKEN: the consumer thread ends silently with no close
   * anywhere. The batch's futures are never completed, every later item sits in the ring, and flush() never
   * completes, until someone closes the batcher.
   */
  @Test
  @Timeout(60)
  void retryOnRecordsIntoTheKeptBatch_consumerDiesSilently_futuresAndFlushNeverComplete() throws Exception {
    AtomicReference<Batch<Integer, String>> kept = new AtomicReference<>();
    AtomicInteger calls = new AtomicInteger();
    AtomicReference<Throwable> lateRecord = new AtomicReference<>();
    RetryPolicy policy = RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ofMillis(1))
        .retryOn(t -> {
          Batch<Integer, String> b = kept.get();
          try {
            for (int i = 0; i < b.size(); i++) {
              b.fail(i, new IllegalStateException("recorded late, from retryOn"));
            }
            lateRecord.set(null);
          } catch (Throwable refused) {
            lateRecord.set(refused);
          }
          return true;
        }).build();
    Batcher<Integer, String> batcher = Batcher.of("sr-rt1", BatcherConfig.builder().ringSize(8).maxBatchSize(8)
        .retryPolicy(policy).build(), batch -> {
          if (calls.incrementAndGet() == 1) {
            kept.set(batch);
            throw new java.io.IOException("transient");
          }
          batch.completeRemaining("ok");
        });
    batchers.add(batcher);
    CompletableFuture<String> first = batcher.submit(1);
    boolean firstDone = first.handle((r, t) -> Boolean.TRUE).completeOnTimeout(Boolean.FALSE, 5, TimeUnit.SECONDS)
        .get();
    CompletableFuture<String> second = batcher.submit(2);
    CompletableFuture<Void> flush = batcher.flush();
    boolean flushDone = flush.handle((r, t) -> Boolean.TRUE).completeOnTimeout(Boolean.FALSE, 5, TimeUnit.SECONDS)
        .get();
    assertThat(firstDone && flushDone)
        .as("the retried item's future and a flush complete within 5 s; first=%s, flush=%s, late record refused=%s,"
            + " consumer thread alive=%s, stats=%s", first, flush, lateRecord.get(), consumerAlive("sr-rt1"),
            batcher.stats())
        .isTrue();
    assertThat(second.handle((r, t) -> Boolean.TRUE))
        .as("a later item completes; first=%s, late record refused=%s, consumer alive=%s", first, lateRecord.get(),
            consumerAlive("sr-rt1"))
        .succeedsWithin(Duration.ofSeconds(5));
  }

  /**
   * The same window, without the consumer dying: retryOn records a failure for ONE item of two. Batch says
   * "recording into it afterwards throws IllegalStateException"; here it is accepted and becomes that item's
   * final outcome, after write() returned by throwing.
   */
  @Test
  @Timeout(60)
  void retryOnRecordsIntoTheKeptBatchAfterWriteThrew_isAccepted() throws Exception {
    AtomicReference<Batch<Integer, String>> kept = new AtomicReference<>();
    AtomicInteger calls = new AtomicInteger();
    AtomicReference<Throwable> lateRecord = new AtomicReference<>(new AssertionError("retryOn not called"));
    RetryPolicy policy = RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ofMillis(1))
        .retryOn(t -> {
          try {
            kept.get().fail(0, new IllegalStateException("recorded late, from retryOn"));
            lateRecord.set(null);
          } catch (Throwable refused) {
            lateRecord.set(refused);
          }
          return true;
        }).build();
    Batcher<Integer, String> batcher = Batcher.of("sr-rt2", BatcherConfig.builder().ringSize(8).maxBatchSize(8)
        .linger(Duration.ofMillis(200)).retryPolicy(policy).build(), batch -> {
          if (calls.incrementAndGet() == 1) {
            kept.set(batch);
            throw new java.io.IOException("transient");
          }
          batch.completeRemaining("ok");
        });
    batchers.add(batcher);
    CompletableFuture<String> a = batcher.submit(1);
    CompletableFuture<String> b = batcher.submit(2);
    batcher.flush();
    a.handle((r, t) -> null).get(10, TimeUnit.SECONDS);
    b.handle((r, t) -> null).get(10, TimeUnit.SECONDS);
    assertThat(lateRecord.get())
        .as("recording into the Batch after write() threw must throw IllegalStateException; a=%s b=%s", a, b)
        .isInstanceOf(IllegalStateException.class);
  }

  private static boolean consumerAlive(String name) {
    return Thread.getAllStackTraces().keySet().stream().anyMatch(t -> t.getName().equals("ringbatch-" + name));
  }
}
