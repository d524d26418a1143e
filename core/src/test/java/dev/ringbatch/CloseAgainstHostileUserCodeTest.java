package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.testing.Holds;
import dev.ringbatch.testing.Holds.Gate;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.Timeout;

/**
 * A close against user code on the paths it shares with the consumer: a ticker, a dependent action, a recorder, a
 * thread factory's thread, a sink's exception or result list that blocks, throws or calls back. Each test's name and
 * assertions state the promise (every item told once, the report balanced, the close within its bound, no user code
 * on the closing thread before the report); its javadoc describes how an earlier protocol broke it (the hostile
 * review of issue 19). Where the fix removed the mechanism itself (the gap, the cast, the hook on the closing
 * thread), the test checks that it stays removed.
 */
class CloseAgainstHostileUserCodeTest {

  /** Everything a test parks on; released after each test so no thread stays parked. */
  @RegisterExtension
  final Holds holds = new Holds();

  private static void assertBalanced(CloseReport report) {
    BatcherStats s = report.stats();
    assertThat(report.written() + report.failed() + report.abandoned())
        .as("report written + failed + abandoned == accepted; report=%s stats=%s", report, s)
        .isEqualTo(s.accepted());
  }

  /** The future completes, either way, within {@code seconds} (AssertJ's failsWithin passes on a timeout). */
  private static void assertCompletes(CompletableFuture<?> future, int seconds, String what) {
    assertThat(future.handle((r, t) -> Boolean.TRUE)).as(what).succeedsWithin(Duration.ofSeconds(seconds));
  }

  private static Thread thread(String name) {
    return Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().equals(name)).findFirst()
        .orElseThrow();
  }

  // ------------------------------------------------------------------------------------------------ A

  /**
   * An async stage completed on another thread: AsyncBatchWriter.settle wins the ticket CAS and then reads the
   * Ticker (user code) BEFORE the batch is counted. A close meanwhile sees every ticket settled, reports
   * drained=true once awaitCompletions gives up at the deadline, and the report/stats leave the item out.
   */
  @Test
  @Timeout(30)
  void asyncStageCompletingWhileTheTickerBlocks_closeTellsTheItem_andItsReportBalances()
      throws Exception {
    CountDownLatch inTicker = new CountDownLatch(1);
    Gate tickerRelease = holds.gate();
    AtomicBoolean armed = new AtomicBoolean(true);
    Ticker ticker = () -> {
      if (Thread.currentThread().getName().equals("review-completer") && armed.compareAndSet(true, false)) {
        inTicker.countDown();
        tickerRelease.await();
      }
      return System.nanoTime();
    };
    AtomicReference<CompletableFuture<Void>> stage = new AtomicReference<>();
    CountDownLatch inSink = new CountDownLatch(1);
    Batcher<Integer, Integer> batcher = holds.track(Batcher.ofAsync("ra-a", BatcherConfig.builder().ringSize(8)
        .maxBatchSize(8).ticker(ticker).build(), batch -> {
          batch.completeRemaining(1);
          CompletableFuture<Void> f = new CompletableFuture<>();
          stage.set(f);
          inSink.countDown();
          return f;
        }));
    CompletableFuture<Integer> item = batcher.submit(1);
    assertThat(inSink.await(10, TimeUnit.SECONDS)).isTrue();
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (stage.get().getNumberOfDependents() == 0 && System.nanoTime() - until < 0) {
      Thread.onSpinWait(); // the consumer attaches its settle callback after write returns
    }
    Thread completer = new Thread(() -> stage.get().complete(null), "review-completer");
    completer.setDaemon(true);
    completer.start();
    assertThat(inTicker.await(10, TimeUnit.SECONDS)).isTrue();

    CloseReport report = batcher.close(Duration.ofMillis(300));
    // Fixed: the ticker is read before the settle is won, so the close takes the batch over while it blocks:
    // the close tells the item "outcome unknown" (the ticker still blocks: nobody else can), and the report
    // counts it abandoned.
    assertCompletes(item, 10, "item, told by a close that reports drained=" + report.drained() + " while the"
        + " completing thread's ticker still blocks; report=" + report);
    tickerRelease.open();
    assertBalanced(report);
  }

  // ------------------------------------------------------------------------------------------------ B

  /**
   * A list sink (BatchSink.withResults) now receives the BatchView itself as its items list, so it CAN record
   * (the ListSink comment says it "never sees a way to record"). recordAll then overwrites the recorded item and
   * adds viewSize to {@code recorded} again: failedCount() goes negative and written exceeds accepted.
   */
  @Test
  @Timeout(30)
  @SuppressWarnings("unchecked")
  void listSinkCastingItsItemsToABatch_failsTheItemOnce_outcomesNeverExceedAccepted() throws Exception {
    Batcher<Integer, Integer> batcher = holds.track(Batcher.of("ra-b", BatcherConfig.builder().ringSize(8).maxBatchSize(8)
        .build(), BatchSink.<Integer, Integer>withResults(items -> {
          ((Batch<Integer, Integer>) (Object) items).complete(0, 42); // the items list is a Batch
          List<Integer> results = new ArrayList<>();
          for (int i = 0; i < items.size(); i++) {
            results.add(i);
          }
          return results;
        })));
    CompletableFuture<Integer> item = batcher.submit(1);
    // Fixed: a list sink's items list is no Batch any more; the cast fails, and so does the item, once.
    assertThat(item).failsWithin(Duration.ofSeconds(10)).withThrowableOfType(java.util.concurrent.ExecutionException.class)
        .withCauseInstanceOf(ClassCastException.class);
    BatcherStats s = batcher.stats();
    assertThat(s.written() + s.failed() + s.abandoned())
        .as("outcomes never exceed accepted; stats=%s", s).isLessThanOrEqualTo(s.accepted());
    assertThat(s.failed()).as("failed count; stats=%s", s).isGreaterThanOrEqualTo(0);
  }

  // ------------------------------------------------------------------------------------------------ C

  /**
   * Producers keep offering to a batcher that is closing/closed: PublishGate.acceptedWhenSettled gives up after
   * 16 reads that see the cursor move and returns the estimate, which counts claims not yet turned into
   * tombstones. The CloseReport is frozen with accepted > written + failed + abandoned.
   */
  @Test
  @Timeout(180)
  void producersOfferingWhileTheBatcherCloses_closeReportBalances() throws Exception {
    for (int round = 0; round < 80; round++) {
      Batcher<Integer, Void> batcher = holds.track(Batcher.of("ra-c-" + round, BatcherConfig.builder()
          .ringSize(1 << 18).maxBatchSize(4096).build(), BatchSink.<Integer>noResult(items -> { })));
      AtomicBoolean stop = new AtomicBoolean();
      List<Thread> producers = new ArrayList<>();
      for (int p = 0; p < 2; p++) {
        Thread t = new Thread(() -> {
          while (!stop.get()) {
            batcher.offer(1);
          }
        }, "ra-c-producer-" + p);
        t.setDaemon(true);
        producers.add(t);
        t.start();
      }
      long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
      while (batcher.stats().accepted() < 20_000 && System.nanoTime() - until < 0) {
        Thread.onSpinWait();
      }
      CloseReport report = batcher.close(Duration.ofSeconds(10));
      stop.set(true);
      for (Thread t : producers) {
        t.join(10_000);
      }
      BatcherStats later = batcher.stats();
      assertThat(report.drained()).isTrue();
      assertThat(report.stats().accepted())
          .as("round %s: report accepted vs written+failed+abandoned; report=%s, stats now=%s", round,
              report.stats(), later)
          .isEqualTo(report.written() + report.failed() + report.abandoned());
    }
  }

  // ------------------------------------------------------------------------------------------------ D

  /**
   * A sharded close gives each shard timeout + 1 s; a shard whose closer thread is held by a dependent action
   * of an item it abandoned has ALREADY counted and published its report, yet the sharded report adds only the
   * shards that returned: report.abandoned() leaves those items out while stats().abandoned() has them.
   */
  @Test
  @Timeout(30)
  void sharded_shardCloserHeldByADependentAction_reportCountsItsAbandonedItems() throws Exception {
    CountDownLatch inSink = new CountDownLatch(1);
    Gate sinkRelease = holds.gate();
    Gate actionRelease = holds.gate();
    Batcher<Integer, Integer> batcher = holds.track(Batcher.sharded("ra-d", BatcherConfig.builder().ringSize(8)
        .maxBatchSize(1).build(), 2, item -> 0, shard -> batch -> {
          inSink.countDown();
          sinkRelease.await();
          batch.completeRemaining(1);
        }));
    CompletableFuture<Integer> first = batcher.submit(1);
    assertThat(inSink.await(10, TimeUnit.SECONDS)).isTrue();
    CompletableFuture<Integer> queued = batcher.submit(2);
    CountDownLatch inAction = new CountDownLatch(1);
    first.whenComplete((r, t) -> {
      inAction.countDown();
      actionRelease.await(); // runs on the shard's closer thread, after its report is out
    });
    CloseReport report = batcher.close(Duration.ofMillis(200));
    assertThat(inAction.await(10, TimeUnit.SECONDS)).isTrue();
    actionRelease.open();
    sinkRelease.open();
    assertCompletes(queued, 10, "queued item");
    assertThat(report.abandoned()).as("report.abandoned vs its own stats; report=%s stats=%s", report,
        report.stats()).isEqualTo(report.stats().abandoned());
    assertBalanced(report);
  }

  // ------------------------------------------------------------------------------------------------ E

  /**
   * finishIdle (the close marker, tombstones) advances flush progress in the OWNED state: a flush future's
   * dependent action then runs where no close can take over. Blocking there orphans the consumer: the close
   * reports drained=false and fails the other flush waiters although every item was written in time.
   */
  @Test
  @Timeout(30)
  void flushDependentActionBlockingAtTheCloseMarker_otherFlushSucceeds_closeDrained() throws Exception {
    CountDownLatch inSink = new CountDownLatch(1);
    Gate sinkRelease = holds.gate();
    Gate actionRelease = holds.gate();
    AtomicInteger writes = new AtomicInteger();
    Batcher<Integer, Integer> batcher = holds.track(Batcher.of("ra-e", BatcherConfig.builder().ringSize(8)
        .maxBatchSize(8).build(), batch -> {
          if (writes.incrementAndGet() == 1) {
            inSink.countDown();
            sinkRelease.await();
          }
          batch.completeRemaining(1);
        }));
    CompletableFuture<Integer> item = batcher.submit(1);
    assertThat(inSink.await(10, TimeUnit.SECONDS)).isTrue();
    CompletableFuture<CloseReport> closing = CompletableFuture.supplyAsync(() -> batcher.close(Duration.ofMillis(500)));
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (batcher.stats().remainingCapacity() != 7 && System.nanoTime() - until < 0) { // the close marker
      Thread.onSpinWait();
    }
    assertThat(batcher.stats().remainingCapacity()).isEqualTo(7);
    CompletableFuture<Void> blockingFlush = batcher.flush();
    CountDownLatch inAction = new CountDownLatch(1);
    AtomicReference<String> actionThread = new AtomicReference<>();
    blockingFlush.thenRun(() -> {
      actionThread.set(Thread.currentThread().getName());
      inAction.countDown();
      actionRelease.await();
    });
    CompletableFuture<Void> otherFlush = batcher.flush();
    sinkRelease.open();
    assertThat(item).succeedsWithin(Duration.ofSeconds(5)); // written well before the close's timeout
    assertThat(inAction.await(10, TimeUnit.SECONDS)).isTrue();
    CloseReport report = closing.get(10, TimeUnit.SECONDS);
    actionRelease.open();
    Throwable otherOutcome = otherFlush.handle((r, t) -> t).get(10, TimeUnit.SECONDS);
    assertThat(otherOutcome).as("a flush whose items were all written; the blocking action ran on %s; report=%s",
        actionThread.get(), report).isNull();
    assertThat(report.drained()).as("every item was written before the timeout; report=%s", report).isTrue();
  }

  // ------------------------------------------------------------------------------------------------ G

  /**
   * A withResults writer that wrote its items and returned (not threw) a list of the wrong size: the batcher
   * turns that into an IllegalStateException and the RetryPolicy (default retryOn: any Exception) hands the
   * written items to the writer again. RetryPolicy promises a retry "only because the sink threw".
   */
  @Test
  @Timeout(30)
  void resultsSinkReturningAWrongSizeList_itemsItWroteAreNotHandedToItAgain() throws Exception {
    List<Integer> seen = Collections.synchronizedList(new ArrayList<>());
    AtomicInteger calls = new AtomicInteger();
    Batcher<Integer, Integer> batcher = holds.track(Batcher.of("ra-g", BatcherConfig.builder().ringSize(8).maxBatchSize(8)
        .retryPolicy(RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ofMillis(1)).build()).build(),
        BatchSink.<Integer, Integer>withResults(items -> {
          seen.addAll(items); // written
          if (calls.incrementAndGet() == 1) {
            return List.of(); // a result list of the wrong size, returned normally
          }
          List<Integer> results = new ArrayList<>();
          for (int i = 0; i < items.size(); i++) {
            results.add(7);
          }
          return results;
        })));
    CompletableFuture<Integer> item = batcher.submit(5);
    item.handle((r, t) -> null).get(10, TimeUnit.SECONDS);
    assertThat(seen).as("items handed to the writer; outcome=%s", item).containsExactly(5);
  }

  // ------------------------------------------------------------------------------------------------ F

  private static boolean inFrame(Thread thread, String simpleClass, String method) {
    for (StackTraceElement e : thread.getStackTrace()) {
      if (e.getClassName().endsWith("." + simpleClass) && e.getMethodName().equals(method)) {
        return true;
      }
    }
    return false;
  }

  /**
   * AsyncBatchWriter.write CASes the batch FILLING -> IN_SINK and registers its ticket, and only then takes a
   * storage from the pool (allocating one when the pool is empty) before it calls the sink, all in CALLING_OUT.
   * A close that takes over in that gap fails the batch "outcome unknown" and returns; the consumer then calls
   * the sink anyway, after close() returned (and re-opens recording on the sealed batch).
   */
  @Test
  @Timeout(120)
  void asyncCloseJustBeforeTheSinkCall_sinkNeverCalledAfterCloseReturned() throws Exception {
    int hits = 0;
    List<String> afterClose = new CopyOnWriteArrayList<>();
    for (int warm = 0; warm < 20; warm++) { // the close path loaded and compiled: it must not be the slow part
      Batcher<Integer, Integer> w = Batcher.ofAsync("ra-f-warm-" + warm, BatcherConfig.builder().ringSize(8)
          .maxBatchSize(8).build(), batch -> new CompletableFuture<Void>());
      w.submit(1);
      w.close(Duration.ZERO);
    }
    for (int round = 0; round < 3 && afterClose.isEmpty(); round++) {
      String name = "ra-f-" + round;
      CountDownLatch inTicker = new CountDownLatch(1);
      Gate tickerRelease = holds.gate();
      AtomicBoolean armed = new AtomicBoolean(true);
      Ticker ticker = () -> {
        if (Thread.currentThread().getName().equals("ringbatch-" + name) && armed.compareAndSet(true, false)) {
          inTicker.countDown();
          tickerRelease.await();
        }
        return System.nanoTime();
      };
      AtomicBoolean closeReturned = new AtomicBoolean();
      AtomicBoolean sinkEntered = new AtomicBoolean();
      int big = 1 << 21; // the pool's first storage: four arrays of a million entries, zeroed
      Batcher<Integer, Integer> batcher = Batcher.ofAsync(name, BatcherConfig.builder().ringSize(big)
          .maxBatchSize(big).maxInFlightBatches(1).ticker(ticker).build(), batch -> {
            // Read before the entry is signalled: the test closes as soon as it sees the entry, and a sink entered
            // before close() was even called must not read that close's return as its own lateness.
            boolean late = closeReturned.get();
            sinkEntered.set(true);
            if (late) {
              afterClose.add(name + ": sink got " + batch.size() + " item(s) after close() returned");
            }
            batch.completeRemaining(1);
            return CompletableFuture.completedFuture(null);
          });
      CompletableFuture<Integer> item = batcher.submit(1);
      assertThat(inTicker.await(10, TimeUnit.SECONDS)).isTrue();
      Thread consumer = thread("ringbatch-" + name);
      tickerRelease.open();
      boolean inGap = false;
      long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
      while (!sinkEntered.get() && System.nanoTime() - until < 0) {
        if (inFrame(consumer, "PendingBatch", "<init>")) {
          inGap = true;
          break;
        }
      }
      CloseReport report = batcher.close(Duration.ZERO);
      closeReturned.set(true);
      consumer.join(10_000);
      if (inGap) {
        hits++;
        assertThat(item).isDone();
      }
      assertThat(afterClose).as("round %s, inGap=%s, report=%s, item=%s", round, inGap, report, item).isEmpty();
    }
    // Fixed: the storage is taken before the batch enters the sink, so no round can land in that gap any more;
    // in every round the sink is never called after close() returned.
    assertThat(hits).as("rounds in which the close landed in the gap").isZero();
  }

  // ------------------------------------------------------------------------------------------------ H

  /** A failure whose getCause() (user code, as its toString) throws. */
  static final class BrokenCompletion extends java.util.concurrent.CompletionException {
    private static final long serialVersionUID = 1L;

    BrokenCompletion() {
      super("broken");
    }

    @Override
    public synchronized Throwable getCause() {
      throw new IllegalStateException("getCause() is user code too");
    }
  }

  /**
   * AsyncBatchWriter.settle wins the ticket CAS and then calls failure.getCause() unguarded: if it throws, the
   * settle stops with the ticket settled, inFlight never given back and the futures never completed. A close
   * later skips the settled ticket: the item's future is never completed at all, and the report leaves it out.
   */
  @Test
  @Timeout(30)
  void asyncStageFailedWithAThrowingGetCause_itemsCompleteByTheClose() throws Exception {
    Batcher<Integer, Integer> batcher = holds.track(Batcher.ofAsync("ra-h", BatcherConfig.builder().ringSize(8)
        .maxBatchSize(1).maxInFlightBatches(1).build(),
        batch -> CompletableFuture.failedFuture(new BrokenCompletion())));
    CompletableFuture<Integer> first = batcher.submit(1);
    CompletableFuture<Integer> second = batcher.submit(2);
    CloseReport report = batcher.close(Duration.ofMillis(300));
    assertCompletes(second, 10, "queued behind it");
    assertCompletes(first, 10, "the item whose stage failed, after close returned; report=" + report + " stats="
        + report.stats());
  }

  // ------------------------------------------------------------------------------------------------ I

  /**
   * CloseProtocol promises that no user code runs on the closing thread before the report is out. But
   * SyncBatchWriter.failInFlight, on the closing thread, builds the message of a batch taken while it waited to
   * retry with SafeLog.describe(lastAttemptFailure): the sink's exception's toString(). Calling back there
   * (flush().get) finds the close NOT finished, and the close overruns its timeout for as long as it blocks.
   */
  @Test
  @Timeout(30)
  void sinkExceptionsToString_neverRunsOnTheClosingThreadBeforeTheReport() throws Exception {
    AtomicReference<Thread> closer = new AtomicReference<>();
    AtomicReference<Batcher<Integer, Integer>> self = new AtomicReference<>();
    AtomicReference<Object> flushSeen = new AtomicReference<>();
    CountDownLatch inToString = new CountDownLatch(1);
    class Nasty extends RuntimeException {
      private static final long serialVersionUID = 1L;

      @Override
      public String toString() {
        if (Thread.currentThread() == closer.get()) {
          inToString.countDown();
          try {
            self.get().flush().get(2, TimeUnit.SECONDS);
            flushSeen.set("completed");
          } catch (Exception e) {
            flushSeen.set(e);
          }
        }
        return "Nasty";
      }
    }
    CountDownLatch inRetryOn = new CountDownLatch(1);
    Gate retryRelease = holds.gate();
    AtomicBoolean first = new AtomicBoolean(true);
    Batcher<Integer, Integer> batcher = holds.track(Batcher.of("ra-i", BatcherConfig.builder().ringSize(8).maxBatchSize(8)
        .retryPolicy(RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ofMillis(10)).retryOn(e -> {
          if (first.compareAndSet(true, false)) {
            inRetryOn.countDown();
            retryRelease.await(); // BACKING_OFF, in user code: the close takes over from here
          }
          return true;
        }).build()).build(), batch -> {
          throw new Nasty();
        }));
    self.set(batcher);
    CompletableFuture<Integer> item = batcher.submit(1);
    assertThat(inRetryOn.await(10, TimeUnit.SECONDS)).isTrue();
    CompletableFuture<CloseReport> closed = new CompletableFuture<>();
    Thread t = new Thread(() -> closed.complete(batcher.close(Duration.ofMillis(100))), "review-closer");
    t.setDaemon(true);
    closer.set(t);
    long start = System.nanoTime();
    t.start();
    CloseReport report = closed.get(20, TimeUnit.SECONDS);
    long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    assertCompletes(item, 10, "item, told by the close while the retry predicate still blocks");
    retryRelease.open();
    // Fixed: the closing thread no longer asks the sink's exception for its toString() before the report.
    assertThat(inToString.getCount()).as("toString() ran on the closing thread; report=%s", report).isOne();
    assertThat(tookMs).as("close(100 ms) took").isLessThan(1_100);
  }

  // ------------------------------------------------------------------------------------------------ J

  /**
   * Same promise, another hook: after a take-over the closing thread calls consumerThread.interrupt() BEFORE the
   * report; a ThreadFactory's Thread subclass (or a custom InterruptibleChannel the sink is blocked in) runs
   * user code there.
   */
  @Test
  @Timeout(30)
  void threadFactorysInterrupt_runsAfterTheReport_aFlushCalledThereFindsTheCloseDone() throws Exception {
    AtomicReference<Thread> closer = new AtomicReference<>();
    AtomicReference<Batcher<Integer, Integer>> self = new AtomicReference<>();
    AtomicReference<Object> flushSeen = new AtomicReference<>();
    CountDownLatch flushTried = new CountDownLatch(1);
    CountDownLatch inSink = new CountDownLatch(1);
    Gate sinkRelease = holds.gate();
    Batcher<Integer, Integer> batcher = stuckInSinkWithInterrupt("ra-j", 8, inSink, sinkRelease, () -> {
      if (flushSeen.get() == null) {
        try {
          self.get().flush().get(2, TimeUnit.SECONDS);
          flushSeen.set("completed");
        } catch (java.util.concurrent.ExecutionException abandonedByTheClose) {
          flushSeen.set("completed"); // completed: failed, as documented, since the close abandoned items
        } catch (Exception e) {
          flushSeen.set(e);
        }
        flushTried.countDown();
      }
    });
    self.set(batcher);
    CompletableFuture<Integer> item = batcher.submit(1);
    assertThat(inSink.await(10, TimeUnit.SECONDS)).isTrue();
    CompletableFuture<CloseReport> closed = new CompletableFuture<>();
    Thread t = new Thread(() -> closed.complete(batcher.close(Duration.ofMillis(100))), "review-closer-j");
    t.setDaemon(true);
    closer.set(t);
    long start = System.nanoTime();
    t.start();
    CloseReport report = closed.get(20, TimeUnit.SECONDS);
    long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    assertCompletes(item, 10, "item, told by the close while the sink still blocks");
    assertThat(flushTried.await(10, TimeUnit.SECONDS)).as("interrupt() called; report=%s", report).isTrue();
    sinkRelease.open();
    assertThat(flushSeen.get()).as("flush().get() called back from Thread.interrupt() on the closing thread;"
        + " report=%s", report).isEqualTo("completed");
    assertThat(tookMs).as("close(100 ms) took").isLessThan(1_100);
  }

  /**
   * J3: a thread factory's interrupt() that blocks (user code, like a blocking dependent action) must not hold up
   * the callers the close abandoned: they are told by the time close returns, and close keeps its bound.
   */
  @Test
  @Timeout(30)
  void threadFactorysInterruptThatBlocks_holdsUpNoAbandonedCaller() throws Exception {
    CountDownLatch interruptCalled = new CountDownLatch(1);
    CountDownLatch inSink = new CountDownLatch(1);
    Gate interruptRelease = holds.gate();
    Gate sinkRelease = holds.gate();
    Batcher<Integer, Integer> batcher = stuckInSinkWithInterrupt("ra-j3", 8, inSink, sinkRelease, () -> {
      interruptCalled.countDown();
      interruptRelease.await(); // blocks, ignoring interrupts, until the test opens it
    });
    CompletableFuture<Integer> item = batcher.submit(1);
    assertThat(inSink.await(10, TimeUnit.SECONDS)).isTrue();
    long start = System.nanoTime();
    CloseReport report = batcher.close(Duration.ofMillis(100));
    long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    assertThat(interruptCalled.await(10, TimeUnit.SECONDS)).as("the consumer was interrupted").isTrue();
    // told while interrupt() still blocks (it did not hold the callers up), and the sink too (only the close tells)
    assertThat(item).as("report=%s", report).failsWithin(Duration.ofSeconds(10))
        .withThrowableOfType(java.util.concurrent.ExecutionException.class)
        .havingCause().isInstanceOfSatisfying(BatcherClosedException.class,
            e -> assertThat(e.isOutcomeUnknown()).isTrue());
    interruptRelease.open();
    sinkRelease.open();
    assertThat(tookMs).as("close(100 ms) took").isLessThan(1_100);
    assertBalanced(report);
  }

  /**
   * J4: a StatsRecorder whose recordAbandoned blocks (user code) holds up neither the close nor, for good, the callers
   * it abandoned: they are told as soon as it returns, after it, as the consumer tells a written batch's callers after
   * its recorders (so a caller whose future is done finds its item in every recorder). The close runs that code on
   * its one helper thread, in that order; a recorder that blocks holds up what follows it there, as on the consumer.
   */
  @Test
  @Timeout(30)
  void recorderBlockingInRecordAbandoned_holdsUpNeitherTheClose_andItsCallersAreToldWhenItReturns() throws Exception {
    CountDownLatch inSink = new CountDownLatch(1);
    Gate sinkRelease = holds.gate();
    CountDownLatch inRecorder = new CountDownLatch(1);
    Gate recorderRelease = holds.gate();
    Batcher<Integer, Integer> batcher = stuckInSinkWithInterrupt("ra-j4", 8, inSink, sinkRelease, () -> { });
    batcher.addStatsRecorder(new dev.ringbatch.stats.StatsRecorder() {
      @Override
      public void recordAbandoned(long count) {
        inRecorder.countDown();
        recorderRelease.await();
      }
    });
    CompletableFuture<Integer> item = batcher.submit(1);
    assertThat(inSink.await(10, TimeUnit.SECONDS)).isTrue();
    long start = System.nanoTime();
    CloseReport report = batcher.close(Duration.ofMillis(100));
    long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    assertThat(inRecorder.await(10, TimeUnit.SECONDS)).as("recordAbandoned called; report=%s", report).isTrue();
    assertThat(item).as("not told before every recorder includes it").isNotDone();
    recorderRelease.open();
    assertThat(item).as("told once the recorder returned; report=%s", report).failsWithin(Duration.ofSeconds(10))
        .withThrowableOfType(java.util.concurrent.ExecutionException.class)
        .withCauseInstanceOf(BatcherClosedException.class);
    sinkRelease.open();
    assertThat(tookMs).as("close(100 ms) took").isLessThan(1_100);
    assertBalanced(report);
  }

  /**
   * A batcher (ring of 8) whose sink signals {@code inSink} and waits for {@code sinkRelease}, on a consumer thread whose
   * {@code interrupt()}, called from another thread, first runs {@code onInterrupt} (user code in a hook).
   */
  private Batcher<Integer, Integer> stuckInSinkWithInterrupt(String name, int maxBatchSize, CountDownLatch inSink,
      Gate sinkRelease, Runnable onInterrupt) {
    return holds.track(Batcher.of(name, BatcherConfig.builder().ringSize(8).maxBatchSize(maxBatchSize)
        .threadFactory(r -> {
      Thread th = new Thread(r, name + "-consumer") {
        @Override
        public void interrupt() {
          if (Thread.currentThread() != this) { // the close's interrupt, wherever it runs
            onInterrupt.run();
          }
          super.interrupt();
        }
      };
      th.setDaemon(true);
      return th;
    }).build(), batch -> {
      inSink.countDown();
      sinkRelease.await();
      batch.completeRemaining(1);
    }));
  }

  // ------------------------------------------------------------------------------------------------ K

  /**
   * The ORPHANED hand-over: a consumer thread (from a ThreadFactory) that runs the consumer late. close
   * returns a report with drained=false, abandoned=0 and the accepted item neither written, failed nor
   * abandoned: the report does not balance, and the caller's future is pending after close returned.
   */
  @Test
  @Timeout(30)
  void consumerThreadStartingLate_closeTellsTheItem_andItsReportBalances() throws Exception {
    Gate startRelease = holds.gate();
    Batcher<Integer, Integer> batcher = holds.track(Batcher.of("ra-k", BatcherConfig.builder().ringSize(8).maxBatchSize(8)
        .threadFactory(r -> {
          Thread th = new Thread(() -> {
            startRelease.await(); // e.g. a wrapper that sets up a context first
            r.run();
          }, "ra-k-consumer");
          th.setDaemon(true);
          return th;
        }).build(), batch -> batch.completeRemaining(1)));
    CompletableFuture<Integer> item = batcher.submit(1);
    CloseReport report = batcher.close(Duration.ofMillis(100));
    assertCompletes(item, 10, "item, told by the close while the consumer thread has not started; report=" + report);
    startRelease.open();
    assertBalanced(report);
  }

  /**
   * K2: a consumer thread that never began to run is taken over at once; its thread is in its factory's code (a
   * wrapper that sets up a context first, say), not the batcher's, so the close does not interrupt it.
   */
  @Test
  @Timeout(30)
  void consumerThreadStartingLate_isNotInterruptedByTheClose() throws Exception {
    Gate startRelease = holds.gate();
    AtomicInteger interrupts = new AtomicInteger();
    Batcher<Integer, Integer> batcher = holds.track(Batcher.of("ra-k2", BatcherConfig.builder().ringSize(8)
        .maxBatchSize(8).threadFactory(r -> {
          Thread th = new Thread(() -> {
            startRelease.await();
            r.run();
          }, "ra-k2-consumer") {
            @Override
            public void interrupt() {
              if (Thread.currentThread() != this) {
                interrupts.incrementAndGet();
              }
              super.interrupt();
            }
          };
          th.setDaemon(true);
          return th;
        }).build(), batch -> batch.completeRemaining(1)));
    CompletableFuture<Integer> item = batcher.submit(1);
    CloseReport report = batcher.close(Duration.ofMillis(100));
    assertCompletes(item, 10, "item, told by the close while the consumer thread has not started");
    // The close waits for its user-code threads (the interrupt among them) before it returns, unless one blocks.
    assertThat(interrupts.get()).as("interrupts of a consumer thread in its factory's code; report=%s", report)
        .isZero();
    startRelease.open();
    assertBalanced(report);
  }

  // ------------------------------------------------------------------------------------------------ J2

  /**
   * The same consumerThread.interrupt() before the report, when it throws: CloseProtocol.close rethrows, the
   * report is never published, and the items the close already gathered (settled, counted) are never told.
   */
  @Test
  @Timeout(30)
  void threadFactorysInterruptThrowing_everyItemAndFlushStillCompletes() throws Exception {
    CountDownLatch inSink = new CountDownLatch(1);
    Gate sinkRelease = holds.gate();
    Batcher<Integer, Integer> batcher = stuckInSinkWithInterrupt("ra-j2", 1, inSink, sinkRelease, () -> {
      throw new UnsupportedOperationException("this thread is not to be interrupted");
    });
    CompletableFuture<Integer> inFlight = batcher.submit(1);
    assertThat(inSink.await(10, TimeUnit.SECONDS)).isTrue();
    CompletableFuture<Integer> queued = batcher.submit(2);
    Object closeOutcome;
    try {
      closeOutcome = batcher.close(Duration.ofMillis(100));
    } catch (RuntimeException e) {
      closeOutcome = e;
    }
    sinkRelease.open();
    CompletableFuture<Void> flush = batcher.flush();
    assertCompletes(queued, 5, "queued item after close returned " + closeOutcome + "; stats=" + batcher.stats());
    assertCompletes(inFlight, 5, "in-flight item after close returned " + closeOutcome);
    assertCompletes(flush, 5, "flush after close returned " + closeOutcome);
  }
}
