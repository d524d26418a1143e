package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringbatch.testing.Holds;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What {@code stats()} counts as a batch: every batch handed to the sink, once however often it is retried, whoever
 * settles it (the consumer, or a close that takes it from the sink); and the mean batch size is a mean of those.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class BatchCountTest {
  @RegisterExtension
  final Holds holds = new Holds();

  /** Retries are 20 s apart: a close always finds the batch waiting for its next attempt. */
  private static final RetryPolicy SLOW_RETRY = RetryPolicy.builder().maxAttempts(3)
      .initialBackoff(Duration.ofSeconds(20)).maxBackoff(Duration.ofSeconds(20)).jitter(0)
      .maxElapsed(Duration.ofSeconds(60)).retryOn(e -> e instanceof IOException).build();

  /** Two items per batch: full at two, and the linger keeps the first waiting for the second. */
  private static BatcherConfig twoPerBatch() {
    return BatcherConfig.builder().ringSize(8).maxBatchSize(2).linger(Duration.ofSeconds(30))
        .retryPolicy(SLOW_RETRY).build();
  }

  private static void assertConsistent(BatcherStats s, long batches, long batchedItems) {
    assertThat(s.submitted()).as("%s", s).isEqualTo(s.written() + s.failed() + s.abandoned() + s.rejected());
    assertThat(s.batches()).as("batches handed to the sink: %s", s).isEqualTo(batches);
    assertThat(s.batchedItems()).as("their items: %s", s).isEqualTo(batchedItems);
    assertThat(s.meanBatchSize()).as("%s", s).isEqualTo((double) batchedItems / batches)
        .isLessThanOrEqualTo(s.largestBatchSize());
  }

  @Test
  void aBatchACloseTakesFromInsideTheSink_countsAsHandedToTheSink() throws Exception {
    Holds.Gate gate = holds.gate();
    CountDownLatch entered = new CountDownLatch(1);
    Batcher<String, Void> batcher = holds.track(Batcher.of("count-in-sink", BatcherConfig.builder().ringSize(8)
        .build(), BatchSink.noResult(items -> {
          entered.countDown();
          gate.await();
        })));
    CompletableFuture<Void> item = batcher.submit("x");
    assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
    BatcherStats report = batcher.close(Duration.ofMillis(50)).stats();
    assertThat(item).isCompletedExceptionally();
    assertThat(report.abandoned()).isEqualTo(1);
    assertConsistent(report, 1, 1);
    assertThat(report.largestBatchSize()).isEqualTo(1);
    gate.open();
    assertConsistent(batcher.stats(), 1, 1); // the sink returning later changes nothing
  }

  @Test
  void anAsyncBatchACloseTakesWhileInFlight_countsAsHandedToTheSink() throws Exception {
    CompletableFuture<Void> never = new CompletableFuture<>();
    CountDownLatch entered = new CountDownLatch(1);
    Batcher<String, Void> batcher = holds.track(Batcher.ofAsync("count-async", BatcherConfig.builder().ringSize(8)
        .build(), batch -> {
          entered.countDown();
          return never;
        }));
    CompletableFuture<Void> item = batcher.submit("x");
    assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
    BatcherStats report = batcher.close(Duration.ofMillis(50)).stats();
    assertThat(item).isCompletedExceptionally();
    assertConsistent(report, 1, 1);
  }

  @Test
  void aBatchACloseTakesWhileItWaitsToRetry_countsOnce_andTheMeanStaysAMeanOfBatches() throws Exception {
    CountDownLatch failedOnce = new CountDownLatch(1);
    AtomicInteger calls = new AtomicInteger();
    Batcher<Integer, Integer> batcher = holds.track(Batcher.of("count-backing-off", twoPerBatch(), batch -> {
      if (calls.incrementAndGet() == 1) {
        batch.completeRemaining(0); // the first batch, of two items, is written
        return;
      }
      batch.fail(0, new IllegalArgumentException("bad row")); // kept as this item's outcome
      failedOnce.countDown();
      throw new IOException("and the commit failed: retry the other");
    }));
    batcher.submit(1);
    batcher.submit(2).get(10, TimeUnit.SECONDS);
    CompletableFuture<Integer> third = batcher.submit(3);
    CompletableFuture<Integer> fourth = batcher.submit(4);
    assertThat(failedOnce.await(10, TimeUnit.SECONDS)).isTrue();
    BatcherStats report = batcher.close(Duration.ofMillis(100)).stats();
    assertThat(third).isCompletedExceptionally();
    assertThat(fourth).isCompletedExceptionally();
    assertThat(report.written()).isEqualTo(2);
    assertThat(report.failed()).isEqualTo(1);
    assertThat(report.abandoned()).isEqualTo(1);
    assertConsistent(report, 2, 4);
    assertThat(calls).hasValue(2);
  }

  @Test
  void aRetriedBatch_countsOnce() throws Exception {
    AtomicInteger calls = new AtomicInteger();
    RetryPolicy quickRetry = RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ofMillis(1))
        .retryOn(e -> e instanceof IOException).build();
    Batcher<Integer, Integer> batcher = holds.track(Batcher.of("count-retried", BatcherConfig.builder().ringSize(8)
        .maxBatchSize(2).linger(Duration.ofSeconds(30)).retryPolicy(quickRetry).build(), batch -> {
          if (calls.incrementAndGet() == 1) {
            batch.fail(0, new IllegalArgumentException("bad row"));
            throw new IOException("transient: retry the other");
          }
          batch.completeRemaining(7);
        }));
    CompletableFuture<Integer> first = batcher.submit(1);
    assertThat(batcher.submit(2).get(10, TimeUnit.SECONDS)).isEqualTo(7);
    assertThatThrownBy(() -> first.get(10, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class);
    assertThat(calls).hasValue(2);
    assertConsistent(batcher.close(Duration.ofSeconds(10)).stats(), 1, 2);
  }

  /** A snapshot taken while batches of one are handed over pairs its counts: the mean never exceeds the largest. */
  @Test
  void statsReadWhileBatchesAreHandedOver_neverShowAMeanAboveTheLargestBatch() throws Exception {
    Batcher<Integer, Void> batcher = holds.track(Batcher.of("count-live", BatcherConfig.builder().ringSize(1024)
        .maxBatchSize(1).overflowPolicy(OverflowPolicy.DROP).build(), BatchSink.noResult(items -> { })));
    AtomicBoolean stop = new AtomicBoolean();
    Thread producer = new Thread(() -> {
      while (!stop.get()) {
        batcher.offer(1);
      }
    });
    producer.start();
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
    BatcherStats torn = null;
    try {
      while (System.nanoTime() < end && torn == null) {
        BatcherStats s = batcher.stats();
        if (s.meanBatchSize() > s.largestBatchSize()) {
          torn = s;
        }
      }
    } finally {
      stop.set(true);
      producer.join();
    }
    assertThat(torn).as("a snapshot with a mean above the largest batch").isNull();
  }
}
