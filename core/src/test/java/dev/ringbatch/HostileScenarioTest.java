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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Scenarios found by an adversarial review of the rebuilt core: a throwing ticker, a consumer thread that never
 * runs, an abandoning close under a still-running sink, a close from an async completion thread. Each failed on
 * the first rebuild commit and passes now.
 */
class HostileScenarioTest {

  /** Whether the current stack has a frame of {@code simpleClass.method} (ringbatch's internal classes). */
  private static boolean calledFrom(String simpleClass, String method) {
    return StackWalker.getInstance().walk(frames -> frames.anyMatch(
        f -> f.getClassName().endsWith("." + simpleClass) && f.getMethodName().equals(method)));
  }

  /** A ticker that throws once, the first time it is read from {@code simpleClass.method}. */
  private static Ticker throwingOnceIn(String simpleClass, String method, CountDownLatch thrown) {
    AtomicBoolean armed = new AtomicBoolean(true);
    return () -> {
      if (calledFrom(simpleClass, method) && armed.compareAndSet(true, false)) {
        thrown.countDown();
        throw new IllegalStateException("test ticker: transient failure");
      }
      return System.nanoTime();
    };
  }

  /** The future completes, either way, within {@code seconds}. */
  private static void assertCompletes(CompletableFuture<?> future, int seconds, String what) {
    assertThat(future.handle((r, t) -> Boolean.TRUE)).as(what).succeedsWithin(Duration.ofSeconds(seconds));
  }

  private static BatchSink<Integer, Integer> okSink() {
    return batch -> batch.completeRemaining(1);
  }

  private static void assertStatsAddUp(BatcherStats s) {
    assertThat(s.written() + s.failed() + s.abandoned())
        .as("accepted == written + failed + abandoned after close; stats=%s", s)
        .isEqualTo(s.accepted());
  }

  // ---------------------------------------------------------------------------------------------- D1

  /**
   * Coalescer.take marks the slot EMPTY and only then reads the Ticker for batchStart; if that read
   * throws, onBug fails the (empty) batch and the loop re-reads the now EMPTY slot: the item is in neither the
   * ring nor the batch. Its future never completes, flush() says it is done, close says drained.
   */
  @Test
  @Timeout(30)
  void tickerThrowingWhileTakingAnItem_itemSilentlyDropped() throws Exception {
    CountDownLatch thrown = new CountDownLatch(1);
    Batcher<Integer, Integer> batcher = Batcher.of("d1", BatcherConfig.builder().ringSize(16).maxBatchSize(16)
        .linger(Duration.ofMillis(5)).ticker(throwingOnceIn("Coalescer", "take", thrown)).build(),
        okSink());
    CompletableFuture<Integer> item = batcher.submit(7);
    assertThat(thrown.await(10, TimeUnit.SECONDS)).isTrue();
    batcher.flush().get(10, TimeUnit.SECONDS); // flush says every earlier item is finished...
    CloseReport report = batcher.close(Duration.ofSeconds(2));
    // ...and close says it drained, yet the item was never handed to the sink and its future is pending.
    assertCompletes(item, 2, "future of the item taken while the ticker threw; report=" + report);
  }

  // ---------------------------------------------------------------------------------------------- D2

  /**
   * A ThreadFactory whose thread dies without running the consumer (or never starts): submit accepts, and
   * close, unable to take over from a consumer in OWNED state, orphans it; nobody ever completes the future.
   */
  @Test
  @Timeout(30)
  void consumerThreadThatDies_closeLeavesAcceptedFuturePending() throws Exception {
    Batcher<Integer, Integer> batcher = Batcher.of("d2", BatcherConfig.builder().ringSize(16).maxBatchSize(16)
        .threadFactory(runnable -> new Thread(() -> { /* dies at once without running the consumer */ }))
        .build(), okSink());
    CompletableFuture<Integer> item = batcher.submit(1);
    CloseReport report = batcher.close(Duration.ofMillis(200));
    assertThat(report.drained()).isFalse();
    assertCompletes(item, 2, "accepted item after close returned; report=" + report);
  }

  // ---------------------------------------------------------------------------------------------- D3

  /**
   * A Ticker that throws where the consumer waits out a linger (ConsumerWaitStrategy.checkDeadline) used to
   * escape barrier.waitFor and kill the consumer, leaving the batcher open and its items unwritten. The ticker
   * is user code: a throw is reported once and System.nanoTime() stands in, so the consumer lives on.
   */
  @Test
  @Timeout(30)
  void tickerThrowingWhileLingering_consumerLivesAndWritesEverything() throws Exception {
    CountDownLatch thrown = new CountDownLatch(1);
    AtomicReference<Thread> consumer = new AtomicReference<>();
    Batcher<Integer, Integer> batcher = Batcher.of("d3", BatcherConfig.builder().ringSize(16).maxBatchSize(16)
        .linger(Duration.ofMinutes(10)).ticker(throwingOnceIn("ConsumerWaitStrategy", "checkDeadline", thrown))
        .threadFactory(r -> {
          Thread t = new Thread(r, "d3-consumer");
          t.setDaemon(true);
          consumer.compareAndSet(null, t); // the first thread made is the consumer, then the close helper
          return t;
        }).build(), okSink());
    CompletableFuture<Integer> first = batcher.submit(1);
    assertThat(thrown.await(10, TimeUnit.SECONDS)).isTrue();
    CompletableFuture<Integer> later = batcher.submit(2);
    assertThat(batcher.flush()).succeedsWithin(Duration.ofSeconds(10));
    assertThat(first).succeedsWithin(Duration.ofSeconds(5));
    assertThat(later).succeedsWithin(Duration.ofSeconds(5));
    assertThat(consumer.get().isAlive()).as("consumer thread alive").isTrue();
    CloseReport report = batcher.close(Duration.ofSeconds(5));
    assertThat(report.drained()).isTrue();
    assertStatsAddUp(report.stats());
  }

  // ---------------------------------------------------------------------------------------------- D4

  /**
   * AsyncBatchWriter.write reads the Ticker for the ticket after callOut(), inFlight++ and state=IN_SINK but
   * before the ticket is in `order`. If it throws, onBug cannot fail the batch (not FILLING), the in-flight
   * slot leaks, and a close that takes over finds it neither FILLING nor in `order`: the future is lost.
   */
  @Test
  @Timeout(30)
  void asyncTickerThrowingAtDispatch_batchLostEvenThroughClose() throws Exception {
    CountDownLatch thrown = new CountDownLatch(1);
    Batcher<Integer, Integer> batcher = Batcher.ofAsync("d4", BatcherConfig.builder().ringSize(16).maxBatchSize(16)
        .maxInFlightBatches(1).ticker(throwingOnceIn("AsyncBatchWriter", "write", thrown)).build(),
        batch -> {
          batch.completeRemaining(1);
          return CompletableFuture.completedFuture(null);
        });
    CompletableFuture<Integer> item = batcher.submit(1);
    assertThat(thrown.await(10, TimeUnit.SECONDS)).isTrue();
    CloseReport report = batcher.close(Duration.ofMillis(300));
    assertCompletes(item, 2, "item whose dispatch hit a throwing ticker, after close; report=" + report);
  }

  // ---------------------------------------------------------------------------------------------- D5

  /**
   * A Ticker that blocks inside take() used to hold the consumer in its own state, so the close orphaned it and
   * reported abandoned=0. The ticker is user code and now runs where a close takes over: the report counts the
   * item, and the flush fails with it (issue 19, defect 3).
   */
  @Test
  @Timeout(30)
  void tickerBlockedInTake_closeTakesOver_andCountsTheItem() throws Exception {
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicBoolean armed = new AtomicBoolean(true);
    Ticker blocking = () -> {
      if (calledFrom("Coalescer", "take") && armed.compareAndSet(true, false)) {
        entered.countDown();
        try {
          release.await(20, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      return System.nanoTime();
    };
    Batcher<Integer, Integer> batcher = Batcher.of("d5", BatcherConfig.builder().ringSize(16).maxBatchSize(16)
        .linger(Duration.ofMinutes(10)).ticker(blocking).build(), okSink());
    CompletableFuture<Integer> item = batcher.submit(1);
    assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
    CompletableFuture<Void> flush = batcher.flush();
    CloseReport report = batcher.close(Duration.ofMillis(100));
    release.countDown();
    Throwable cause = item.handle((r, t) -> t).get(10, TimeUnit.SECONDS);
    assertThat(cause).isInstanceOf(BatcherClosedException.class);
    assertThat(((BatcherClosedException) cause).isAbandoned()).isTrue();
    assertThat(report.abandoned()).isEqualTo(1);
    assertThat(report.stats().abandoned()).isEqualTo(1);
    assertStatsAddUp(batcher.stats());
    // Flushes are completed on a close helper thread: by the time close returns unless the machine stalled.
    assertThat(flush).as("flush completed normally although its item was abandoned")
        .failsWithin(Duration.ofSeconds(10)).withThrowableOfType(java.util.concurrent.ExecutionException.class)
        .withCauseInstanceOf(BatcherClosedException.class);
  }

  // ---------------------------------------------------------------------------------------------- D6

  /**
   * After a take-over, failInFlight -> BatchCompleter.abandon -> PendingBatch.clear() nulls the items while the
   * sink (sync: still on the consumer thread; async: until its stage completes) is reading them.
   */
  @Test
  @Timeout(30)
  void takeOver_clearsItemsUnderARunningSink() throws Exception {
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch done = new CountDownLatch(1);
    AtomicReference<Object> readAfter = new AtomicReference<>("unset");
    Batcher<String, Integer> batcher = Batcher.of("d6", BatcherConfig.builder().ringSize(16).maxBatchSize(16).build(),
        batch -> {
          try {
            entered.countDown();
            while (true) {
              try {
                release.await(20, TimeUnit.SECONDS);
                break;
              } catch (InterruptedException ignored) {
                // the close interrupts; a sink finishing its I/O keeps going
              }
            }
            readAfter.set(batch.item(0));
          } finally {
            done.countDown();
          }
          batch.completeRemaining(1);
        });
    CompletableFuture<Integer> item = batcher.submit("payload");
    assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
    CloseReport report = batcher.close(Duration.ofMillis(100));
    assertThat(report.abandoned()).isEqualTo(1);
    release.countDown();
    assertThat(done.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(readAfter.get()).as("Batch.item(0) read by the sink still inside write()").isEqualTo("payload");
  }

  // ---------------------------------------------------------------------------------------------- D7

  /**
   * close() from a dependent action on an async completion thread (allowed: not the consumer, not the closing
   * thread): the consumer at the marker waits in awaitSettled for the very ticket whose settle() is running the
   * close, so the close waits its whole timeout and reports drained=false although every item was written.
   */
  @Test
  @Timeout(30)
  void asyncCloseFromCompletionThread_waitsWholeTimeoutAndReportsNotDrained() throws Exception {
    AtomicReference<CompletableFuture<Void>> stage = new AtomicReference<>();
    CountDownLatch dispatched = new CountDownLatch(1);
    AtomicReference<Batch<Integer, Integer>> inFlight = new AtomicReference<>();
    Batcher<Integer, Integer> batcher = Batcher.ofAsync("d7", BatcherConfig.builder().ringSize(16).maxBatchSize(16)
        .build(), batch -> {
          CompletableFuture<Void> s = new CompletableFuture<>();
          inFlight.set(batch);
          stage.set(s);
          dispatched.countDown();
          return s;
        });
    CompletableFuture<CloseReport> closed = batcher.submit(1)
        .thenApply(r -> batcher.close(Duration.ofSeconds(2)));
    assertThat(dispatched.await(10, TimeUnit.SECONDS)).isTrue();
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10))
        .until(() -> stage.get().getNumberOfDependents() > 0); // the writer's whenComplete is attached
    inFlight.get().completeRemaining(1);
    stage.get().complete(null); // this (test) thread is the async completion thread: close runs here
    CloseReport report = closed.get(20, TimeUnit.SECONDS);
    assertThat(report.written()).isEqualTo(1);
    assertThat(report.drained()).as("every item was written; report=%s", report).isTrue();
  }
}
