package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Second hostile review: HandOver.start() returns true when the state is already OWNED, so a consumer Runnable
 * run a second time while the first run is live (a hostile ThreadFactory, or a Thread subclass whose run()
 * also hands the target to another thread) becomes a second consumer of the same ring and batch.
 */
class ConsumerRunnableRunTwiceTest {

  @Test
  @Timeout(60)
  void threadFactoryRunningTheConsumerTwice_itemsWrittenTwice() throws Exception {
    Map<Integer, AtomicInteger> writes = new ConcurrentHashMap<>();
    List<Thread> extra = new ArrayList<>();
    Batcher<Integer, Void> batcher = Batcher.of("sr-tf1", BatcherConfig.builder().ringSize(1024).maxBatchSize(16)
        .threadFactory(r -> {
          Thread second = new Thread(r, "ringbatch-sr-tf1-second");
          second.setDaemon(true);
          extra.add(second);
          second.start(); // the same Runnable, run a second time, concurrently
          Thread t = new Thread(r, "ringbatch-sr-tf1");
          t.setDaemon(true);
          return t;
        }).build(), BatchSink.<Integer>noResult(items -> {
          for (Integer i : items) {
            writes.computeIfAbsent(i, k -> new AtomicInteger()).incrementAndGet();
          }
        }));
    List<CompletableFuture<Void>> futures = new ArrayList<>();
    for (int i = 0; i < 2000; i++) {
      futures.add(batcher.submit(i));
    }
    CompletableFuture<Void> all = CompletableFuture.allOf(futures.toArray(new CompletableFuture<?>[0]));
    all.handle((r, t) -> null).completeOnTimeout(null, 10, TimeUnit.SECONDS).get();
    CloseReport report = batcher.close(Duration.ofSeconds(2));
    long twice = writes.values().stream().filter(c -> c.get() > 1).count();
    long pending = futures.stream().filter(f -> !f.isDone()).count();
    assertThat(twice + pending)
        .as("items written more than once (%s) + futures never completed (%s); report=%s", twice, pending, report)
        .isZero();
  }

  /**
   * A factory that hands the Runnable to a thread of its own that runs it later (a queue, an executor): that thread
   * must not become the consumer, or the thread the batcher started and watches dies, and a close takes the dead
   * thread for a stopped consumer and abandons the item the live one is writing.
   */
  @Test
  @Timeout(60)
  void aFactoryThatRunsTheRunnableLaterOnItsOwnThread_neverGetsTheConsumer() throws Exception {
    CountDownLatch batcherStartedItsThread = new CountDownLatch(1);
    CountDownLatch sinkEntered = new CountDownLatch(1);
    CountDownLatch lateGo = new CountDownLatch(1); // the sink was entered, or the factory's own run returned
    CountDownLatch releaseSink = new CountDownLatch(1);
    AtomicReference<Thread> returned = new AtomicReference<>();
    AtomicReference<Thread> sinkThread = new AtomicReference<>();
    AtomicInteger calls = new AtomicInteger();
    BatcherConfig config = BatcherConfig.builder().ringSize(8).threadFactory(r -> {
      if (calls.getAndIncrement() > 0) { // the close helper
        Thread helper = new Thread(r, "late-helper");
        helper.setDaemon(true);
        return helper;
      }
      Thread later = new Thread(() -> { // the factory's own thread, which runs the Runnable later
        await(batcherStartedItsThread);
        r.run(); // returns at once if it is not the consumer, as promised
        lateGo.countDown();
      }, "late-own");
      later.setDaemon(true);
      later.start();
      Thread t = new Thread(r, "late-consumer") {
        @Override
        public void run() {
          batcherStartedItsThread.countDown();
          await(lateGo); // this thread is slower to get to the Runnable than the factory's own
          super.run();
        }
      };
      t.setDaemon(true);
      returned.set(t);
      return t;
    }).build();
    Batcher<String, Void> batcher = Batcher.of("late", config, BatchSink.noResult(items -> {
      sinkThread.set(Thread.currentThread());
      sinkEntered.countDown();
      lateGo.countDown();
      await(releaseSink);
    }));
    CompletableFuture<Void> item = batcher.submit("x");
    assertThat(sinkEntered.await(10, TimeUnit.SECONDS)).isTrue();
    if (sinkThread.get() != returned.get()) {
      returned.get().join(TimeUnit.SECONDS.toMillis(10)); // it found the consumer running elsewhere, and ended
    }
    CloseReport report;
    long start = System.nanoTime();
    try {
      CompletableFuture<CloseReport> closing = CompletableFuture.supplyAsync(() -> batcher.close(Duration.ofSeconds(30)));
      // the sink finishes well within the close's 30 s
      CompletableFuture.runAsync(() -> { }, CompletableFuture.delayedExecutor(500, TimeUnit.MILLISECONDS))
          .thenRun(releaseSink::countDown);
      report = closing.get(40, TimeUnit.SECONDS);
    } finally {
      releaseSink.countDown();
    }
    item.handle((v, t) -> null).get(10, TimeUnit.SECONDS);
    SoftAssertions soft = new SoftAssertions();
    soft.assertThat(sinkThread.get()).as("the sink ran on the batcher's consumer thread, not the factory's own")
        .isSameAs(returned.get());
    soft.assertThat(report.drained()).as("close(30 s) drained a sink that returned within 0.5 s: %s (after %d ms)",
        report, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isTrue();
    soft.assertThat(item).as("the item the sink wrote: %s", item).isCompleted().isNotCompletedExceptionally();
    soft.assertAll();
  }

  private static void await(CountDownLatch latch) {
    try {
      latch.await(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * A factory whose thread hands the Runnable to another thread: the consumer runs only on the thread the factory
   * returned, so this batcher never writes; it says so in a warning naming the threadFactory, and a close fails the
   * item it holds rather than waiting on a consumer that is not there.
   */
  @Test
  @Timeout(60)
  void aFactoryWhoseThreadHandsTheRunnableOn_isWarnedOf_andACloseFailsWhatItHolds() throws Exception {
    java.util.logging.Logger log = java.util.logging.Logger.getLogger("dev.ringbatch");
    List<String> warnings = new java.util.concurrent.CopyOnWriteArrayList<>();
    CountDownLatch warned = new CountDownLatch(1);
    java.util.logging.Handler capture = new java.util.logging.Handler() {
      @Override
      public void publish(java.util.logging.LogRecord r) {
        if (r.getLevel() == java.util.logging.Level.WARNING && r.getMessage().contains("threadFactory")) {
          warnings.add(r.getMessage());
          warned.countDown();
        }
      }

      @Override
      public void flush() { }

      @Override
      public void close() { }
    };
    log.addHandler(capture);
    try {
      Batcher<String, Void> batcher = Batcher.of("handing-on", BatcherConfig.builder().ringSize(8)
          .threadFactory(r -> {
            Thread t = new Thread(() -> {
              Thread inner = new Thread(r, "handed-to");
              inner.start();
              try {
                inner.join();
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            }, "handing-on");
            t.setDaemon(true);
            return t;
          }).build(), BatchSink.<String>noResult(items -> { }));
      CompletableFuture<Void> item = batcher.submit("x");
      assertThat(warned.await(10, TimeUnit.SECONDS)).as("a warning naming threadFactory").isTrue();
      assertThat(warnings.get(0)).contains("handed-to").contains("handing-on");
      CloseReport report = batcher.close(Duration.ofMillis(200));
      assertThat(item).isCompletedExceptionally();
      assertThat(report.stats().written()).isZero();
      assertThat(report.stats().abandoned()).isEqualTo(1);
    } finally {
      log.removeHandler(capture);
    }
  }
}
