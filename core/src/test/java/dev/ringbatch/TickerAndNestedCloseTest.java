package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Review findings: a ticker that throws once, and a close from a completing thread beside another close. */
class TickerAndNestedCloseTest {

  private static boolean calledFrom(String simpleClass, String method) {
    return StackWalker.getInstance().walk(frames -> frames.anyMatch(
        f -> f.getClassName().endsWith("." + simpleClass) && f.getMethodName().equals(method)));
  }

  /**
   * Ticker is documented as "nanoseconds from an arbitrary origin; only differences are meaningful". GuardedTicker
   * replaces a throwing read by System.nanoTime(), a different origin: if the read for batchStart throws once, the
   * linger deadline was armed in nanoTime terms while every later read was in the ticker's terms, so a batch with a
   * 50 ms linger waited for as long as the two origins differ (here one hour) unless a flush, a full batch or a
   * close rescues it.
   */
  @Test
  @Timeout(30)
  void tickerThrowingOnceWithOtherOrigin_lingerStillEndsOnTime() throws Exception {
    long origin = TimeUnit.HOURS.toNanos(1);
    AtomicBoolean armed = new AtomicBoolean(true);
    Ticker offset = () -> {
      if (calledFrom("Coalescer", "take") && armed.compareAndSet(true, false)) {
        throw new IllegalStateException("test ticker: transient failure");
      }
      return System.nanoTime() - origin;
    };
    Batcher<Integer, Integer> batcher = Batcher.of("ticker-throws-once", BatcherConfig.builder().ringSize(64)
        .maxBatchSize(32)
        .linger(Duration.ofMillis(50)).ticker(offset).build(), batch -> batch.completeRemaining(1));
    CompletableFuture<Integer> item = batcher.submit(1);
    try {
      assertThat(item).as("item with a 50 ms linger, after the ticker threw once")
          .succeedsWithin(Duration.ofSeconds(5));
      assertThat(armed).as("the ticker threw when read from Coalescer.take").isFalse();
    } finally {
      batcher.close(Duration.ofSeconds(5));
    }
  }

  /** A ticker that steps back (a corrected wall clock) during writes: recorders never get a negative write time. */
  @Test
  @Timeout(30)
  void tickerSteppingBack_recordBatchNeverGetsANegativeWriteTime() throws Exception {
    java.util.concurrent.atomic.AtomicLong clock = new java.util.concurrent.atomic.AtomicLong(1_000_000_000L);
    Ticker steppingBack = () -> clock.addAndGet(-1_000); // each read 1 µs before the last
    java.util.List<Long> writeTimes = new java.util.concurrent.CopyOnWriteArrayList<>();
    for (boolean async : new boolean[] {false, true}) {
      BatcherConfig config = BatcherConfig.builder().ringSize(8).maxBatchSize(8).linger(Duration.ZERO)
          .ticker(steppingBack).build();
      Batcher<Integer, Integer> batcher = async
          ? Batcher.ofAsync("ticker-back-async", config, batch -> {
            batch.completeRemaining(7);
            return CompletableFuture.completedFuture(null);
          })
          : Batcher.of("ticker-back", config, batch -> batch.completeRemaining(7));
      batcher.addStatsRecorder(new dev.ringbatch.stats.StatsRecorder() {
        @Override
        public void recordBatch(int size, long weight, long writeNanos, int failed) {
          writeTimes.add(writeNanos);
        }
      });
      try {
        assertThat(batcher.submit(1)).succeedsWithin(Duration.ofSeconds(10)).isEqualTo(7); // recorded first
      } finally {
        batcher.close(Duration.ofSeconds(5));
      }
    }
    assertThat(writeTimes).hasSize(2).allSatisfy(w -> assertThat(w).as("writeNanos").isNotNegative());
  }

  /**
   * A close (thread A) and a dependent action of an async item's future that also calls close() on the completion
   * thread T. A drains at once, then CloseProtocol.awaitCompletions waits for T's settle() to finish; T's close
   * waited in awaitEarlier for A's report. Each waited for the other until A's whole timeout ran out, though
   * everything was written (and T, a sink's completion thread, is held just as long).
   */
  @Test
  @Timeout(60)
  void closeWhileDependentActionAlsoCloses_neitherWaitsOutTheTimeout() throws Exception {
    AtomicReference<CompletableFuture<Void>> stage = new AtomicReference<>();
    AtomicReference<Batch<Integer, Integer>> inFlight = new AtomicReference<>();
    CountDownLatch dispatched = new CountDownLatch(1);
    Batcher<Integer, Integer> batcher = Batcher.ofAsync("nested-close", BatcherConfig.builder().ringSize(16)
        .maxBatchSize(16).build(), batch -> {
          CompletableFuture<Void> s = new CompletableFuture<>();
          inFlight.set(batch);
          stage.set(s);
          dispatched.countDown();
          return s;
        });
    CompletableFuture<CloseReport> dependentClose = batcher.submit(1)
        .thenApply(r -> batcher.close(Duration.ofSeconds(8)));
    assertThat(dispatched.await(10, TimeUnit.SECONDS)).isTrue();
    Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> stage.get().getNumberOfDependents() > 0);

    ExecutorService threads = Executors.newFixedThreadPool(2);
    try {
      long start = System.nanoTime();
      CompletableFuture<CloseReport> closeA = CompletableFuture.supplyAsync(
          () -> batcher.close(Duration.ofSeconds(8)), threads);
      Awaitility.await().atMost(Duration.ofSeconds(10)).until(batcher::isClosed); // A is the first close
      CompletableFuture.runAsync(() -> {
        inFlight.get().completeRemaining(1);
        stage.get().complete(null); // this thread settles the batch and runs the dependent close
      }, threads);
      CloseReport report = closeA.get(30, TimeUnit.SECONDS);
      long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      assertThat(report.drained()).isTrue();
      assertThat(tookMs).as("close that drained as soon as the stage completed took %d ms; report=%s", tookMs, report)
          .isLessThan(3_000);
      assertThat(dependentClose).succeedsWithin(Duration.ofSeconds(10));
    } finally {
      threads.shutdownNow();
    }
  }
}
