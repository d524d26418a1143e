package dev.ringbatch;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringbatch.stats.StatsRecorder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class OfferFailureHandlerAndWaitTest {
  private final List<Batcher<?, ?>> batchers = new ArrayList<>();
  private final CountDownLatch release = new CountDownLatch(1);

  /** The future's failure, which must come within {@code seconds}; fails the test (not passes) on a timeout. */
  private static Throwable failedWithin(CompletableFuture<?> f, int seconds) throws InterruptedException {
    try {
      f.get(seconds, SECONDS);
    } catch (java.util.concurrent.ExecutionException e) {
      return e.getCause();
    } catch (java.util.concurrent.TimeoutException e) {
      throw new AssertionError("future not completed within " + seconds + " s: " + f);
    }
    throw new AssertionError("future succeeded: " + f);
  }

  @AfterEach
  void closeAll() {
    release.countDown();
    for (Batcher<?, ?> b : batchers) {
      b.close(Duration.ofSeconds(2));
    }
  }

  private <T, R> Batcher<T, R> track(Batcher<T, R> b) {
    batchers.add(b);
    return b;
  }

  /** Holds the batch containing "hold" until release; completes every item with 1. */
  private BatchSink<String, Integer> holding(CountDownLatch entered) {
    return batch -> {
      if (batch.items().contains("hold")) {
        entered.countDown();
        release.await(30, SECONDS);
      }
      batch.completeRemaining(1);
    };
  }

  @Test
  void eachItemWait_aRecorderThatWritesTheArray_cannotChangeWhatTheNextRecorderSees() throws Exception {
    List<String> seenBySecond = new CopyOnWriteArrayList<>();
    StatsRecorder sorterZeroer = new StatsRecorder() {
      @Override public boolean recordsItemWaits() { return true; }
      @Override public boolean recordsEachItemWait() { return true; }
      @Override public void recordEachItemWait(long[] waitNanos, int count) {
        Arrays.fill(waitNanos, 0, count, -1L); // e.g. scratch use of the array it was lent
      }
    };
    CountDownLatch done = new CountDownLatch(1);
    StatsRecorder second = new StatsRecorder() {
      @Override public boolean recordsItemWaits() { return true; }
      @Override public boolean recordsEachItemWait() { return true; }
      @Override public void recordEachItemWait(long[] waitNanos, int count) {
        for (int i = 0; i < count; i++) {
          seenBySecond.add(Long.toString(waitNanos[i]));
        }
        done.countDown();
      }
    };
    Batcher<String, Integer> b = track(Batcher.of("alias", BatcherConfig.builder().build(),
        BatchSink.<String, Integer>withResults(items -> { List<Integer> r = new ArrayList<>();
          for (String s : items) r.add(1); return r; })));
    b.addStatsRecorder(sorterZeroer);
    b.addStatsRecorder(second);
    b.submit("x").get(5, SECONDS);
    assertThat(done.await(5, SECONDS)).isTrue();
    assertThat(seenBySecond).as("each item's wait in nanoseconds, as the second recorder is promised")
        .allMatch(s -> Long.parseLong(s) >= 0);
  }

  @Test
  void handlerBlockingForever_holdsUpNoCallerOfItsBatch() throws Exception {
    List<String> batchesSeen = new CopyOnWriteArrayList<>();
    CountDownLatch inHandler = new CountDownLatch(1);
    CountDownLatch never = new CountDownLatch(1);
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch releaseFirst = new CountDownLatch(1);
    BatchSink<String, Integer> sink = batch -> {
      if (batch.items().contains("hold")) {
        entered.countDown();
        releaseFirst.await(30, SECONDS);
        batch.completeRemaining(1);
        return;
      }
      batchesSeen.add(String.join(",", batch.items()));
      throw new IllegalStateException("db down");
    };
    Batcher<String, Integer> b = track(Batcher.of("blocking-handler", BatcherConfig.builder()
        .offerFailureHandler((item, cause) -> {
          inHandler.countDown();
          while (never.getCount() > 0) {
            try { never.await(); } catch (InterruptedException e) { /* a stuck handler: ignores interrupts */ }
          }
        }).build(), sink));
    CompletableFuture<Integer> first = b.submit("hold");
    assertThat(entered.await(5, SECONDS)).isTrue();
    assertThat(b.offer("fire-and-forget")).isTrue();
    CompletableFuture<Integer> caller = b.submit("caller");
    releaseFirst.countDown();
    first.get(5, SECONDS);
    assertThat(inHandler.await(5, SECONDS)).isTrue();
    long start = System.nanoTime();
    CloseReport report = b.close(Duration.ofMillis(200));
    long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    try {
      assertThat(tookMs).as("close(200ms) took").isLessThan(200 + 1000);
      assertThat(batchesSeen).containsExactly("fire-and-forget,caller");
      BatcherStats s = b.stats();
      assertThat(s.written() + s.failed() + s.abandoned()).as(s + " / " + report).isEqualTo(s.accepted());
      // close(200ms) has returned; the caller of "caller" (accepted, counted failed above) must have been told
      Throwable cause = failedWithin(caller, 3);
      assertThat(cause).hasMessage("db down");
      
    } finally {
      never.countDown();
    }
  }

  @Test
  void handlerClosingOnTheConsumerThread_keepsStatsExactAndEveryFutureDone() throws Exception {
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch releaseFirst = new CountDownLatch(1);
    AtomicReference<Batcher<String, Integer>> self = new AtomicReference<>();
    AtomicReference<CloseReport> inner = new AtomicReference<>();
    BatchSink<String, Integer> sink = batch -> {
      if (batch.items().contains("hold")) {
        entered.countDown();
        releaseFirst.await(30, SECONDS);
        batch.completeRemaining(1);
        return;
      }
      throw new IllegalStateException("db down");
    };
    Batcher<String, Integer> b = track(Batcher.of("closing-handler", BatcherConfig.builder().ringSize(64)
        .maxBatchSize(4).offerFailureHandler((item, cause) -> {
          if (inner.get() == null) {
            inner.set(self.get().close(Duration.ofMillis(100)));
          }
        }).build(), sink));
    self.set(b);
    CompletableFuture<Integer> first = b.submit("hold");
    assertThat(entered.await(5, SECONDS)).isTrue();
    List<CompletableFuture<Integer>> futures = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      b.offer("o" + i);
      futures.add(b.submit("s" + i));
    }
    releaseFirst.countDown();
    first.get(5, SECONDS);
    for (CompletableFuture<Integer> f : futures) {
      failedWithin(f, 5);
    }
    CloseReport report = b.close(Duration.ofSeconds(2));
    BatcherStats s = b.stats();
    assertThat(s.accepted()).as(s.toString()).isEqualTo(21);
    assertThat(s.written() + s.failed() + s.abandoned()).as(s + " / " + report + " / inner " + inner.get())
        .isEqualTo(s.accepted());
    assertThat(s.inFlight()).isZero();
  }

  @Test
  void submitAndWait_hugeTimeout_returnsResult_andBlockRoomWaitEndsAtSubmitTimeout() throws Exception {
    CountDownLatch entered = new CountDownLatch(1);
    Batcher<String, Integer> b = track(Batcher.of("huge", BatcherConfig.builder().ringSize(4).maxBatchSize(1)
        .overflowPolicy(OverflowPolicy.BLOCK).submitTimeout(Duration.ofMillis(300)).build(), holding(entered)));
    assertThat(b.submitAndWait("a", Duration.ofSeconds(Long.MAX_VALUE))).isEqualTo(1);
    b.submit("hold");
    assertThat(entered.await(5, SECONDS)).isTrue();
    for (int i = 0; i < 4; i++) {
      b.submit("fill" + i);
    }
    long start = System.nanoTime();
    assertThatThrownBy(() -> b.submitAndWait("late", Duration.ofSeconds(Long.MAX_VALUE)))
        .isInstanceOf(BatcherFullException.class);
    assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isBetween(250L, 3000L);
    assertThat(b.stats().rejected(RejectionReason.TIMEOUT)).isEqualTo(1);
  }

  @Test
  void submitAndWait_zeroTimeout_onFullRing_rejectsAtOnce() throws Exception {
    CountDownLatch entered = new CountDownLatch(1);
    Batcher<String, Integer> b = track(Batcher.of("zero", BatcherConfig.builder().ringSize(4).maxBatchSize(1)
        .overflowPolicy(OverflowPolicy.BLOCK).submitTimeout(Duration.ofSeconds(20)).build(), holding(entered)));
    b.submit("hold");
    assertThat(entered.await(5, SECONDS)).isTrue();
    for (int i = 0; i < 4; i++) {
      b.submit("fill" + i);
    }
    long start = System.nanoTime();
    assertThatThrownBy(() -> b.submitAndWait("late", Duration.ZERO)).isInstanceOf(BatcherFullException.class);
    assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(2000L);
    assertThat(b.stats().rejected(RejectionReason.TIMEOUT)).isEqualTo(1);
    assertThat(b.stats().accepted()).isEqualTo(5);
  }

  @Test
  void submitAndWait_interruptedWaitingForRoom_throwsInterrupted_notAccepted() throws Exception {
    CountDownLatch entered = new CountDownLatch(1);
    Batcher<String, Integer> b = track(Batcher.of("intr", BatcherConfig.builder().ringSize(4).maxBatchSize(1)
        .overflowPolicy(OverflowPolicy.BLOCK).submitTimeout(Duration.ofSeconds(20)).build(), holding(entered)));
    b.submit("hold");
    assertThat(entered.await(5, SECONDS)).isTrue();
    for (int i = 0; i < 4; i++) {
      b.submit("fill" + i);
    }
    CompletableFuture<Throwable> outcome = new CompletableFuture<>();
    CompletableFuture<Boolean> flagAfter = new CompletableFuture<>();
    Thread t = new Thread(() -> {
      try {
        b.submitAndWait("late", Duration.ofSeconds(30));
        outcome.complete(null);
      } catch (Throwable e) {
        outcome.complete(e);
      }
      flagAfter.complete(Thread.currentThread().isInterrupted());
    });
    t.start();
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(5))
        .until(() -> t.getState() == Thread.State.WAITING || t.getState() == Thread.State.TIMED_WAITING);
    t.interrupt();
    assertThat(outcome.get(5, SECONDS)).isInstanceOf(InterruptedException.class);
    assertThat(flagAfter.get(5, SECONDS)).isFalse();
    assertThat(b.stats().rejected(RejectionReason.INTERRUPTED)).isEqualTo(1);
    assertThat(b.stats().accepted()).isEqualTo(5);
  }

  @Test
  void submitAndWait_interruptedWaitingForResult_itemStillWritten() throws Exception {
    CountDownLatch entered = new CountDownLatch(1);
    Batcher<String, Integer> b = track(Batcher.of("intr2", BatcherConfig.builder().build(), holding(entered)));
    CompletableFuture<Throwable> outcome = new CompletableFuture<>();
    Thread t = new Thread(() -> {
      try {
        b.submitAndWait("hold", Duration.ofSeconds(30));
        outcome.complete(null);
      } catch (Throwable e) {
        outcome.complete(e);
      }
    });
    t.start();
    assertThat(entered.await(5, SECONDS)).isTrue();
    t.interrupt();
    assertThat(outcome.get(5, SECONDS)).isInstanceOf(InterruptedException.class);
    release.countDown();
    b.flush().get(5, SECONDS);
    assertThat(b.stats().written()).isEqualTo(1);
  }

  @Test
  void handlerOffering_onFullRing_underBlock_doesNotWedgeTheConsumer() throws Exception {
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch releaseFirst = new CountDownLatch(1);
    AtomicReference<Batcher<String, Integer>> self = new AtomicReference<>();
    BatchSink<String, Integer> sink = batch -> {
      if (batch.items().contains("hold")) {
        entered.countDown();
        releaseFirst.await(30, SECONDS);
      }
      if (batch.items().stream().anyMatch(s -> s.startsWith("retry"))) {
        batch.completeRemaining(1);
        return;
      }
      throw new IllegalStateException("db down");
    };
    Batcher<String, Integer> b = track(Batcher.of("offering-handler", BatcherConfig.builder().ringSize(4)
        .maxBatchSize(1).overflowPolicy(OverflowPolicy.BLOCK).submitTimeout(Duration.ofSeconds(30))
        .offerFailureHandler((item, cause) -> {
          for (int i = 0; i < 8; i++) {
            self.get().offer("retry-" + item + "-" + i);
          }
        }).build(), sink));
    self.set(b);
    b.submit("hold");
    assertThat(entered.await(5, SECONDS)).isTrue();
    for (int i = 0; i < 4; i++) {
      b.offer("o" + i);
    }
    releaseFirst.countDown();
    b.flush().get(10, SECONDS);
    long start = System.nanoTime();
    b.close(Duration.ofMillis(500));
    assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(1500L);
    BatcherStats s = b.stats();
    assertThat(s.written() + s.failed() + s.abandoned()).as(s.toString()).isEqualTo(s.accepted());
  }

  @Test
  void asyncHandler_onStageThread_submitAndWaitWithTimeout_works() throws Exception {
    java.util.concurrent.ExecutorService ex = java.util.concurrent.Executors.newCachedThreadPool();
    try {
      AtomicReference<Batcher<String, Integer>> self = new AtomicReference<>();
      List<Object> results = new CopyOnWriteArrayList<>();
      CountDownLatch told = new CountDownLatch(1);
      AsyncBatchSink<String, Integer> sink = batch -> CompletableFuture.runAsync(() -> {
        if (batch.items().contains("bad")) {
          throw new IllegalStateException("db down");
        }
        batch.completeRemaining(7);
      }, ex);
      Batcher<String, Integer> b = track(Batcher.ofAsync("async-handler", BatcherConfig.builder()
          .offerFailureHandler((item, cause) -> {
            // A stage complete when write returned is completed on the consumer, where submitAndWait refuses.
            boolean onConsumer = Thread.currentThread().getName().equals("ringbatch-async-handler");
            try {
              results.add(self.get().submitAndWait("retry", Duration.ofSeconds(5)));
            } catch (Throwable t) {
              results.add(onConsumer && t instanceof IllegalStateException ? "refused on the consumer" : t);
            }
            told.countDown();
          }).build(), sink));
      self.set(b);
      b.offer("bad");
      assertThat(told.await(10, SECONDS)).isTrue();
      assertThat(results).singleElement().isIn(7, "refused on the consumer");
    } finally {
      ex.shutdownNow();
    }
  }

  @Test
  void asyncHandlerBlockingForever_closeReturnsInTime_andCallersAreTold() throws Exception {
    java.util.concurrent.ExecutorService ex = java.util.concurrent.Executors.newCachedThreadPool();
    CountDownLatch never = new CountDownLatch(1);
    CountDownLatch inHandler = new CountDownLatch(1);
    try {
      AsyncBatchSink<String, Integer> sink = batch -> CompletableFuture.runAsync(() -> {
        throw new IllegalStateException("db down");
      }, ex);
      Batcher<String, Integer> b = track(Batcher.ofAsync("async-stuck", BatcherConfig.builder().maxBatchSize(2)
          .offerFailureHandler((item, cause) -> {
            inHandler.countDown();
            while (never.getCount() > 0) {
              try { never.await(); } catch (InterruptedException e) { /* stuck */ }
            }
          }).build(), sink));
      b.offer("a");
      assertThat(inHandler.await(5, SECONDS)).isTrue();
      List<CompletableFuture<Integer>> later = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        later.add(b.submit("s" + i));
      }
      long start = System.nanoTime();
      CloseReport report = b.close(Duration.ofMillis(300));
      long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      assertThat(tookMs).as("close(300ms) took; " + report).isLessThan(300 + 1000);
      for (CompletableFuture<Integer> f : later) {
        failedWithin(f, 3);
      }
      BatcherStats s = b.stats();
      assertThat(s.written() + s.failed() + s.abandoned()).as(s.toString()).isEqualTo(s.accepted());
    } finally {
      never.countDown();
      ex.shutdownNow();
    }
  }

  static final class Evil extends RuntimeException {
    private static final long serialVersionUID = 1L;
    @Override public String getMessage() { throw new Evil(); }
    @Override public String toString() { throw new Evil(); }
    @Override public StackTraceElement[] getStackTrace() { throw new Evil(); }
    @Override public synchronized Throwable getCause() { throw new Evil(); }
  }

  @SuppressWarnings("unchecked")
  static <E extends Throwable> void sneaky(Throwable t) throws E {
    throw (E) t;
  }

  @Test
  void handlerThrowingEvilThings_everyCallerStillToldAndStatsExact() throws Exception {
    java.util.concurrent.atomic.AtomicInteger n = new java.util.concurrent.atomic.AtomicInteger();
    BatchSink<String, Integer> sink = batch -> {
      for (int i = 0; i < batch.size(); i++) {
        if (batch.items().get(i).startsWith("o")) {
          batch.fail(i, new Evil());
        } else {
          batch.complete(i, 1);
        }
      }
    };
    Batcher<String, Integer> b = track(Batcher.of("evil-handler", BatcherConfig.builder().maxBatchSize(8)
        .offerFailureHandler((item, cause) -> {
          int k = n.getAndIncrement() % 4;
          if (k == 0) {
            throw new Evil();
          } else if (k == 1) {
            OfferFailureHandlerAndWaitTest.<RuntimeException>sneaky(new java.io.IOException("checked"));
          } else if (k == 2) {
            throw new StackOverflowError();
          } else {
            throw new OutOfMemoryError("fake");
          }
        }).build(), sink));
    List<CompletableFuture<Integer>> fs = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      b.offer("o" + i);
      fs.add(b.submit("s" + i));
    }
    b.flush().get(10, SECONDS);
    for (CompletableFuture<Integer> f : fs) {
      assertThat(f.get(5, SECONDS)).isEqualTo(1);
    }
    assertThat(n.get()).isEqualTo(40);
    BatcherStats s = b.stats();
    assertThat(s.written()).as(s.toString()).isEqualTo(40);
    assertThat(s.failed()).as(s.toString()).isEqualTo(40);
  }

  /**
   * A close runs the user code after its report on one helper thread, in the consumer's order (the callers, then
   * the flushes): an abandoned item's dependent action that blocks holds up a flush taken before the close, as it
   * would on the consumer thread, but never the close; the flush is told, as failed, once the action returns.
   */
  @Test
  void abandonedItemsBlockingDependent_holdsUpNeitherTheClose_andTheEarlierFlushIsToldWhenItReturns()
      throws Exception {
    CountDownLatch never = new CountDownLatch(1);
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch inAction = new CountDownLatch(1);
    CountDownLatch actionRelease = new CountDownLatch(1);
    BatchSink<String, Integer> sink = batch -> {
      entered.countDown();
      while (never.getCount() > 0) {
        try { never.await(); } catch (InterruptedException e) { /* a sink stuck in uninterruptible I/O */ }
      }
      batch.completeRemaining(1);
    };
    Batcher<String, Integer> b = track(Batcher.of("abandon-order", BatcherConfig.builder().maxBatchSize(1).build(),
        sink));
    try {
      b.submit("stuck");
      assertThat(entered.await(5, SECONDS)).isTrue();
      CompletableFuture<Integer> queued = b.submit("queued");
      queued.whenComplete((r, t) -> {
        inAction.countDown();
        while (actionRelease.getCount() > 0) {
          try { actionRelease.await(); } catch (InterruptedException e) { /* a slow dependent action */ }
        }
      });
      CompletableFuture<Void> flush = b.flush();
      long start = System.nanoTime();
      CloseReport report = b.close(Duration.ofMillis(200));
      long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      assertThat(tookMs).as("close(200ms) took; " + report).isLessThan(200 + 1500);
      assertThat(report.abandoned()).as(report.toString()).isGreaterThanOrEqualTo(1);
      assertThat(inAction.await(5, SECONDS)).as("the abandoned item's dependent action runs").isTrue();
      assertThat(flush).as("held up by the dependent action before it").isNotDone();
      actionRelease.countDown();
      Throwable cause = failedWithin(flush, 3); // flush obtained before close: told the close abandoned items
      assertThat(cause).isInstanceOf(BatcherClosedException.class);
    } finally {
      actionRelease.countDown();
      never.countDown();
    }
  }

  @Test
  void sharded_submitAndWaitWithTimeout_nullsAndNegatives() {
    Batcher<String, Integer> b = track(Batcher.sharded("sh", BatcherConfig.builder().build(), 2,
        i -> holding(new CountDownLatch(1))));
    assertThatThrownBy(() -> b.submitAndWait(null, Duration.ofSeconds(1))).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> b.submitAndWait("x", null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> b.submitAndWait("x", Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(b.stats().accepted()).isZero();
  }
}
