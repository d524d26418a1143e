package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.stats.StatsRecorder;
import dev.ringbatch.testing.Holds.Gate;
import dev.ringbatch.testing.Holds;
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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What a close that takes a batch over tells and keeps: the failures the sink already recorded stay their items'
 * outcomes (and reach the offer failure handler and the recorders), a sink still writing is ignored without an
 * exception, nothing of an abandoned batch stays reachable, an abandoned item's future completes only once the
 * recorders include it, and the whole close is bound by its timeout plus one grace, however user hooks block.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CloseTakeOverOutcomesTest {
  @RegisterExtension
  final Holds holds = new Holds();

  /** A fire-and-forget item its sink failed keeps being told as failed when a close takes its batch. */
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
  /** Once a sink abandoned by a close returns, the closed batcher keeps none of that batch reachable. */
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
  /** Async: a stage that completes after a close took its batch leaves nothing of it reachable. */
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
  /** {@code close(timeout)} returns within the timeout plus one grace, however many user hooks block after it. */
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
  /** A sink still inside write() after a take-over records without an exception; it is ignored. */
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
  /** A failure the sink recorded before the take-over stays that item's outcome (sync). */
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
  /** Keeping a recorded failure runs none of its code before the close's report (its toString may block). */
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
  /** Async: the same for a batch in flight in an async sink. */
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
  /** Once an abandoned item's future is done, every recorder includes it (recorders that return in time). */
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
}
