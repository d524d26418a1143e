package dev.ringbatch.issues;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringbatch.AsyncBatchSink;
import dev.ringbatch.BatchWriteException;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherClosedException;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.BatcherFullException;
import dev.ringbatch.BatcherStats;
import dev.ringbatch.CloseReport;
import dev.ringbatch.RejectionReason;
import dev.ringbatch.RetryPolicy;
import dev.ringbatch.stats.StatsRecorder;
import dev.ringbatch.testing.Holds;
import dev.ringbatch.testing.Holds.Gate;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The broken promises of issue 33, each as the behaviour it must keep: what a close that takes a batch over tells
 * and keeps, what a sink's failure looks like to a caller, one bound for the whole close, and what a sharded batcher
 * reports and logs.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class Issue33Test {
  @RegisterExtension
  final Holds holds = new Holds();

  /** Item 1: a fire-and-forget item its sink failed keeps being told as failed when a close takes its batch. */
  @Test
  void closeDuringRetryBackoff_toldTheOfferFailureHandlerAndRecordersOfItemsTheSinkFailed() throws Exception {
    List<Object> handled = new CopyOnWriteArrayList<>();
    IllegalStateException rowFailure = new IllegalStateException("row 0 refused");
    CountDownLatch inSink = new CountDownLatch(1);
    Gate proceed = holds.gate();
    Batcher<Integer, Integer> second = holds.track(Batcher.of("offer-backoff-2", BatcherConfig.builder().ringSize(8)
        .maxBatchSize(8).retryPolicy(RetryPolicy.builder().maxAttempts(5).initialBackoff(Duration.ofSeconds(20))
            .maxBackoff(Duration.ofSeconds(20)).jitter(0).maxElapsed(Duration.ofSeconds(60)).build())
        .offerFailureHandler((item, cause) -> handled.add(item + ":" + cause.getMessage())).build(), batch -> {
          if (batch.item(0) == 0) { // the blocker: holds the consumer until both items wait in the ring
            inSink.countDown();
            proceed.awaitInterruptibly();
            batch.completeRemaining(0);
            return;
          }
          batch.fail(0, rowFailure);
          throw new IllegalStateException("commit failed");
        }));
    AtomicLong secondFailed = new AtomicLong();
    CountDownLatch backingOff = new CountDownLatch(1);
    second.addStatsRecorder(new StatsRecorder() {
      @Override
      public void recordBatch(int size, long weight, long writeNanos, int failed) {
        secondFailed.addAndGet(failed);
      }

      @Override
      public void recordRetry(int attempt, Throwable cause) {
        backingOff.countDown();
      }
    });
    second.submit(0);
    assertThat(inSink.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(second.offer(1)).isTrue(); // fire and forget: failed by the sink, one by one
    CompletableFuture<Integer> other = second.submit(2);
    proceed.open();
    assertThat(backingOff.await(10, TimeUnit.SECONDS)).as("the batch [1, 2] waits to retry").isTrue();
    CloseReport report = second.close(Duration.ofMillis(50));
    assertThat(other).failsWithin(Duration.ofSeconds(10)).withThrowableOfType(ExecutionException.class)
        .withCauseInstanceOf(BatcherClosedException.class);
    assertThat(report.stats().failed()).as("report=%s", report).isEqualTo(1);
    assertThat(report.abandoned()).as("report=%s", report).isEqualTo(1);
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
      assertThat(handled).as("the offer failure handler hears of the item the sink failed")
          .containsExactly("1:row 0 refused");
      assertThat(secondFailed.get()).as("the recorders hear of the item the sink failed").isEqualTo(1);
    });
  }

  /** Item 2: a sink's failure reaches the caller as a sink failure, whatever its type. */
  @Test
  void sinkFailingAnItemWithAnotherBatchersRejection_reachesSubmitAndWaitAsASinkFailure() {
    BatcherFullException othersFull = new BatcherFullException("other", 16, RejectionReason.INTERRUPTED,
        "item rejected: the producer was interrupted while waiting for room");
    BatcherClosedException othersClosed = new BatcherClosedException("other", 16, false, "item rejected");
    Batcher<Integer, Integer> batcher = holds.track(Batcher.of("sink-rejection", BatcherConfig.ofDefaults(), batch -> {
      for (int i = 0; i < batch.size(); i++) {
        batch.fail(i, batch.item(i) == 1 ? othersFull : othersClosed);
      }
    }));
    assertThatThrownBy(() -> batcher.submitAndWait(1)).isInstanceOf(BatchWriteException.class)
        .hasCause(othersFull);
    assertThat(Thread.currentThread().isInterrupted()).isFalse();
    assertThatThrownBy(() -> batcher.submitAndWait(2, Duration.ofSeconds(10))).isInstanceOf(BatchWriteException.class)
        .hasCause(othersClosed);
    assertThat(batcher.submit(1)).failsWithin(Duration.ofSeconds(10)).withThrowableOfType(ExecutionException.class)
        .havingCause().isInstanceOf(BatchWriteException.class).havingCause().isSameAs(othersFull);
  }

  /** Item 3: once a sink abandoned by a close returns, the closed batcher keeps none of that batch reachable. */
  @Test
  void batchAbandonedInsideTheSink_isNotKeptReachableOnceTheSinkReturns() throws Exception {
    CountDownLatch inSink = new CountDownLatch(1);
    Gate proceed = holds.gate();
    CountDownLatch returned = new CountDownLatch(1);
    Batcher<Object, Integer> batcher = holds.track(Batcher.of("reachable", BatcherConfig.builder().ringSize(8)
        .maxBatchSize(8).build(), batch -> {
          inSink.countDown();
          proceed.awaitInterruptibly();
          try {
            batch.completeRemaining(1);
          } finally {
            returned.countDown();
          }
        }));
    WeakReference<Object> payload = submitPayload(batcher);
    assertThat(inSink.await(10, TimeUnit.SECONDS)).isTrue();
    CloseReport report = batcher.close(Duration.ofMillis(50));
    assertThat(report.abandoned()).isEqualTo(1);
    proceed.open();
    assertThat(returned.await(10, TimeUnit.SECONDS)).isTrue();
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> {
      System.gc();
      return payload.get() == null;
    });
    assertThat(batcher.stats().remainingCapacity()).as("stats=%s", batcher.stats()).isEqualTo(8);
  }

  private static WeakReference<Object> submitPayload(Batcher<Object, Integer> batcher) {
    Object payload = new byte[1 << 20];
    batcher.submit(payload).exceptionally(t -> null);
    return new WeakReference<>(payload);
  }

  /** Item 3, async: a stage that completes after a close took its batch leaves nothing of it reachable. */
  @Test
  void asyncBatchAbandonedInFlight_isNotKeptReachableOnceItsStageCompletes() throws Exception {
    CompletableFuture<Void> stage = new CompletableFuture<>();
    CountDownLatch inSink = new CountDownLatch(1);
    Batcher<Object, Integer> batcher = holds.track(Batcher.ofAsync("reachable-async", BatcherConfig.builder().ringSize(8)
        .maxBatchSize(8).build(), (AsyncBatchSink<Object, Integer>) batch -> {
          inSink.countDown();
          return stage.thenRun(() -> { });
        }));
    WeakReference<Object> payload = submitPayload(batcher);
    assertThat(inSink.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(batcher.close(Duration.ofMillis(50)).abandoned()).isEqualTo(1);
    stage.complete(null);
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> {
      System.gc();
      return payload.get() == null;
    });
  }

  /** Item 4: close(timeout) returns within the timeout plus one grace, however many user hooks block after it. */
  @Test
  void closeWithABlockingDependentActionAndABlockingRecordClosed_returnsWithinTheTimeoutPlusOneGrace()
      throws Exception {
    CountDownLatch inAction = new CountDownLatch(1);
    Gate actionRelease = holds.gate();
    Gate recorderRelease = holds.gate();
    Gate attached = holds.gate();
    Batcher<Integer, Integer> batcher = holds.track(Batcher.of("one-grace", BatcherConfig.builder().ringSize(8)
        .maxBatchSize(1).build(), batch -> {
          attached.awaitInterruptibly(); // the dependent action is attached first, so the consumer thread runs it
          batch.completeRemaining(1);
        }));
    batcher.addStatsRecorder(new StatsRecorder() {
      @Override
      public void recordClosed(CloseReport report) {
        recorderRelease.awaitInterruptibly();
      }
    });
    batcher.submit(1).thenRun(() -> { // runs on the consumer thread, which completes the batch
      inAction.countDown();
      actionRelease.awaitInterruptibly();
    });
    attached.open();
    assertThat(inAction.await(10, TimeUnit.SECONDS)).isTrue();
    CompletableFuture<Integer> queued = batcher.submit(2); // behind the blocked consumer: abandoned
    long start = System.nanoTime();
    CloseReport report = batcher.close(Duration.ofMillis(100));
    long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    assertThat(report.abandoned()).as("report=%s", report).isEqualTo(1);
    // Told on the close's helper thread after the report: before close returns unless that thread got no CPU
    // within the grace (a loaded machine), and never later than a few seconds.
    assertThat(queued).failsWithin(Duration.ofSeconds(10)).withThrowableOfType(ExecutionException.class)
        .withCauseInstanceOf(BatcherClosedException.class);
    // One grace: about 300 ms. Two stacked graces cannot take less than 100 + 2 x 200 ms (both waits run to their
    // end while the hooks block), so the bound just below that leaves the most room for a loaded machine.
    assertThat(tookMillis).as("close(100 ms) took, ms").isLessThan(100 + 2 * 200 - 20);
  }

  /** Item 5: a sink still inside write() after a take-over records without an exception; it is ignored. */
  @Test
  void sinkStillWritingAfterATakeOver_recordsWithoutAnExceptionAndIsIgnored() throws Exception {
    CountDownLatch inSink = new CountDownLatch(1);
    Gate proceed = holds.gate();
    AtomicReference<Throwable> thrown = new AtomicReference<>();
    CountDownLatch returned = new CountDownLatch(1);
    Batcher<Integer, Integer> batcher = holds.track(Batcher.of("late-records", BatcherConfig.builder().ringSize(8)
        .maxBatchSize(8).build(), batch -> {
          inSink.countDown();
          proceed.awaitInterruptibly();
          try {
            for (int i = 0; i < batch.size(); i++) { // a per-row sink, halfway through when the close came
              Integer item = batch.item(i);
              if (item % 2 == 0) {
                batch.complete(i, item);
              } else {
                batch.fail(i, new IllegalStateException("odd"));
              }
            }
          } catch (Throwable t) {
            thrown.set(t);
          } finally {
            returned.countDown();
          }
        }));
    CompletableFuture<Integer> a = batcher.submit(2);
    CompletableFuture<Integer> b = batcher.submit(3);
    assertThat(inSink.await(10, TimeUnit.SECONDS)).isTrue();
    batcher.close(Duration.ofMillis(50));
    proceed.open();
    assertThat(returned.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(thrown.get()).as("what the sink met after the take-over").isNull();
    assertThat(a).isCompletedExceptionally();
    assertThat(b).isCompletedExceptionally();
    assertThat(batcher.stats().written()).isZero();
  }

  /** Item 6: a failure the sink recorded before the take-over stays that item's outcome (sync). */
  @Test
  void closeTakingABatchFromInsideTheSink_keepsTheFailuresTheSinkAlreadyRecorded() throws Exception {
    CountDownLatch recordedOne = new CountDownLatch(1);
    Gate proceed = holds.gate();
    IllegalStateException refused = new IllegalStateException("row refused");
    Batcher<Integer, Integer> batcher = holds.track(Batcher.of("kept-failure", BatcherConfig.builder().ringSize(8)
        .maxBatchSize(8).build(), batch -> {
          batch.fail(0, refused);
          recordedOne.countDown();
          proceed.awaitInterruptibly();
          batch.completeRemaining(1);
        }));
    CompletableFuture<Integer> refusedItem = batcher.submit(1);
    assertThat(recordedOne.await(10, TimeUnit.SECONDS)).isTrue();
    CloseReport report = batcher.close(Duration.ofMillis(50));
    assertThat(refusedItem).failsWithin(Duration.ofSeconds(10)).withThrowableOfType(ExecutionException.class)
        .withCause(refused);
    assertThat(report.abandoned()).as("report=%s", report).isZero();
    assertThat(report.stats().failed()).as("report=%s", report).isEqualTo(1);
  }

  /** Item 6: keeping a recorded failure runs none of its code before the close's report (its toString may block). */
  @Test
  void closeKeepingARecordedFailureWhoseToStringBlocks_stillReturnsInTime() throws Exception {
    CountDownLatch recordedOne = new CountDownLatch(1);
    Gate proceed = holds.gate();
    Gate toStringRelease = holds.gate();
    // A cancellation reaches the caller wrapped in a BatchWriteException, whose message reads its toString().
    java.util.concurrent.CancellationException slowToString = new java.util.concurrent.CancellationException(
        "row refused") {
      @Override
      public String toString() {
        toStringRelease.awaitInterruptibly();
        return super.toString();
      }
    };
    Batcher<Integer, Integer> batcher = holds.track(Batcher.of("slow-tostring", BatcherConfig.builder().ringSize(8)
        .maxBatchSize(8).build(), batch -> {
          batch.fail(0, slowToString);
          recordedOne.countDown();
          proceed.awaitInterruptibly();
        }));
    CompletableFuture<Integer> refused = batcher.submit(1);
    assertThat(recordedOne.await(10, TimeUnit.SECONDS)).isTrue();
    long start = System.nanoTime();
    CloseReport report = batcher.close(Duration.ofMillis(50));
    assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).as("close(50 ms) took, ms; report=%s",
        report).isLessThan(3_000);
    assertThat(report.stats().failed()).isEqualTo(1);
    toStringRelease.open();
    assertThat(refused).failsWithin(Duration.ofSeconds(10)).withThrowableOfType(ExecutionException.class)
        .havingCause().isInstanceOf(BatchWriteException.class).havingCause().isSameAs(slowToString);
  }

  /** Item 6, async: the same for a batch in flight in an async sink. */
  @Test
  void closeTakingAnAsyncBatchInFlight_keepsTheFailuresTheSinkAlreadyRecorded() throws Exception {
    CountDownLatch recordedOne = new CountDownLatch(1);
    IllegalStateException refused = new IllegalStateException("row refused");
    Batcher<Integer, Integer> batcher = holds.track(Batcher.ofAsync("kept-failure-async", BatcherConfig.builder()
        .ringSize(8).maxBatchSize(8).build(), (AsyncBatchSink<Integer, Integer>) batch -> {
          batch.fail(0, refused);
          recordedOne.countDown();
          return new CompletableFuture<Void>();
        }));
    CompletableFuture<Integer> refusedItem = batcher.submit(1);
    assertThat(recordedOne.await(10, TimeUnit.SECONDS)).isTrue();
    CloseReport report = batcher.close(Duration.ofMillis(50));
    assertThat(refusedItem).failsWithin(Duration.ofSeconds(10)).withThrowableOfType(ExecutionException.class)
        .withCause(refused);
    assertThat(report.abandoned()).as("report=%s", report).isZero();
    assertThat(report.stats().failed()).as("report=%s", report).isEqualTo(1);
  }

  /** Item 7: a sharded batcher's limits are its shards', not shard 0's alone. */
  @Test
  void shardedBatcher_reportsTheLargestLimitsInForceAmongItsShards() {
    Batcher<Integer, Integer> batcher = holds.track(Batcher.sharded("sharded-limits", BatcherConfig.builder()
        .ringSize(64).maxBatchSize(8).build(), 3, i -> i, shard -> batch -> batch.completeRemaining(1)));
    List<BatcherStats> shards = batcher.shardStats();
    assertThat(shards).hasSize(3);
    // Each shard's own limits, as an adaptive controller would set them: pinned per shard here.
    dev.ringbatch.internal.ShardedBatcherAccess.setShardLimits(batcher, 2,
        dev.ringbatch.BatchLimits.of(32, Long.MAX_VALUE, Duration.ofMillis(3)));
    assertThat(batcher.limits().maxBatchSize()).isEqualTo(32);
    assertThat(batcher.limits().linger()).isEqualTo(Duration.ofMillis(3));
    assertThat(batcher.stats().limits()).isEqualTo(batcher.limits());
  }

  /** Item 8: a sharded batcher logs its lost fire-and-forget failures once per batcher, not once per shard. */
  @Test
  void shardedBatcher_logsFailedFireAndForgetItemsOncePerBatcher() throws Exception {
    Logger ringbatch = Logger.getLogger("dev.ringbatch");
    List<LogRecord> lines = new CopyOnWriteArrayList<>();
    Handler capture = new Handler() {
      @Override
      public void publish(LogRecord record) {
        if (record.getLevel().intValue() >= Level.WARNING.intValue()
            && String.valueOf(record.getMessage()).contains("fire-and-forget")) {
          lines.add(record);
        }
      }

      @Override
      public void flush() {}

      @Override
      public void close() {}
    };
    ringbatch.addHandler(capture);
    try {
      Batcher<Integer, Integer> batcher = holds.track(Batcher.sharded("sharded-log", BatcherConfig.ofDefaults(), 4,
          i -> i, shard -> batch -> {
            throw new IllegalStateException("down");
          }));
      for (int i = 0; i < 4; i++) {
        assertThat(batcher.offer(i)).isTrue();
      }
      assertThat(batcher.flush()).succeedsWithin(Duration.ofSeconds(10));
      assertThat(batcher.stats().failed()).isEqualTo(4);
      assertThat(lines).as("lines logged").hasSize(1);
      assertThat(lines.get(0).getMessage()).contains("'sharded-log'");
    } finally {
      ringbatch.removeHandler(capture);
    }
  }

  /** Item 9: once an abandoned item's future is done, every recorder includes it (recorders that return in time). */
  @Test
  void abandonedItemsFuture_isDoneOnlyOnceTheRecordersIncludeIt() throws Exception {
    for (int round = 0; round < 5; round++) {
      CountDownLatch inSink = new CountDownLatch(1);
      Gate proceed = holds.gate();
      AtomicLong abandoned = new AtomicLong();
      Batcher<Integer, Integer> batcher = holds.track(Batcher.of("recorded-first-" + round, BatcherConfig.builder()
          .ringSize(8).maxBatchSize(8).build(), batch -> {
            inSink.countDown();
            proceed.awaitInterruptibly();
            batch.completeRemaining(1);
          }));
      batcher.addStatsRecorder(new StatsRecorder() {
        @Override
        public void recordAbandoned(long count) {
          abandoned.addAndGet(count);
        }
      });
      CompletableFuture<Long> seen = batcher.submit(1).handle((r, t) -> abandoned.get());
      assertThat(inSink.await(10, TimeUnit.SECONDS)).isTrue();
      batcher.close(Duration.ZERO);
      assertThat(seen).as("round %s", round).succeedsWithin(Duration.ofSeconds(10)).isEqualTo(1L);
    }
  }

  /** Item 10: waiting on the consumer thread for an item of its own batcher is refused, as submitAndWait is. */
  @Test
  void joiningAnItemOnTheBatchersOwnConsumerThread_isRefusedLikeSubmitAndWait() throws Exception {
    CompletableFuture<Throwable> joinRefused = new CompletableFuture<>();
    CompletableFuture<Throwable> getRefused = new CompletableFuture<>();
    AtomicReference<Batcher<Integer, Integer>> self = new AtomicReference<>();
    Batcher<Integer, Integer> batcher = holds.track(Batcher.of("join-on-consumer", BatcherConfig.ofDefaults(), batch -> {
      if (batch.item(0) == 1) {
        try {
          self.get().submit(2).join();
          joinRefused.complete(null);
        } catch (Throwable t) {
          joinRefused.complete(t);
        }
        try {
          self.get().submit(3).get(30, TimeUnit.SECONDS);
          getRefused.complete(null);
        } catch (Throwable t) {
          getRefused.complete(t);
        }
      }
      batch.completeRemaining(1);
    }));
    self.set(batcher);
    assertThat(batcher.submit(1)).succeedsWithin(Duration.ofSeconds(10));
    assertThat(joinRefused).succeedsWithin(Duration.ofSeconds(5)).isInstanceOf(IllegalStateException.class);
    assertThat(getRefused).succeedsWithin(Duration.ofSeconds(5)).isInstanceOf(IllegalStateException.class);
    assertThat(joinRefused.join().getMessage()).contains("consumer thread", "'join-on-consumer'");
  }
}
