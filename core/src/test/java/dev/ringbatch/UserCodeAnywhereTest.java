package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringbatch.stats.StatsRecorder;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * User code (dependent actions, recorders, the ticker, log handlers, a sink that keeps its batch) runs only
 * where a close can take over from it or has already published its report: each test here broke a promise on
 * e5cbe45 (issue 19, defects 1, 2, 3, 5 and 7).
 */
class UserCodeAnywhereTest {

  private static boolean calledFrom(String simpleClass) {
    return StackWalker.getInstance().walk(frames -> frames.anyMatch(
        f -> f.getClassName().endsWith("." + simpleClass)));
  }

  private static void await(CountDownLatch latch) {
    try {
      latch.await(20, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** A ticker whose first read from {@code simpleClass} blocks until {@code release}. */
  private static Ticker blockingOnceIn(String simpleClass, CountDownLatch entered, CountDownLatch release) {
    AtomicBoolean armed = new AtomicBoolean(true);
    return () -> {
      if (calledFrom(simpleClass) && armed.compareAndSet(true, false)) {
        entered.countDown();
        await(release);
      }
      return System.nanoTime();
    };
  }

  /** Closes on another thread and returns the report, failing the test if the close takes longer than 5 s. */
  private static CloseReport closeWithin5s(Batcher<?, ?> batcher, Duration timeout) throws Exception {
    return CompletableFuture.supplyAsync(() -> batcher.close(timeout)).get(5, TimeUnit.SECONDS);
  }

  private static Thread consumerThread(String batcherName) {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.getName().equals("ringbatch-" + batcherName)).findFirst().orElseThrow();
  }

  // ---- defect 1: the closing thread runs user code only after its report is out

  @Test
  @Timeout(30)
  void dependentActionOfAnAbandonedItem_flushJoin_doesNotHangTheClose() throws Exception {
    CountDownLatch inSink = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    Batcher<Integer, Integer> batcher = Batcher.of("d1-flush", BatcherConfig.builder().ringSize(8).maxBatchSize(8).build(), batch -> {
      inSink.countDown();
      await(release);
      batch.completeRemaining(1);
    });
    try {
      batcher.submit(1);
      assertThat(inSink.await(10, TimeUnit.SECONDS)).isTrue();
      CompletableFuture<Integer> queued = batcher.submit(2);
      CompletableFuture<Long> seen = new CompletableFuture<>();
      queued.whenComplete((r, t) -> {
        batcher.flush().handle((v, e) -> null).join(); // waits for the close's report
        seen.complete(batcher.stats().abandoned());
      });
      CloseReport report = closeWithin5s(batcher, Duration.ofMillis(100));
      assertThat(report.abandoned()).isEqualTo(2);
      // On a close helper thread, done when close returns unless the machine stalled; the sink still blocks.
      assertThat(seen).as("the callback saw its own item counted").succeedsWithin(Duration.ofSeconds(10))
          .isEqualTo(2L);
    } finally {
      release.countDown();
    }
  }

  @Test
  @Timeout(30)
  void recorderToldOfAbandonedItems_callsFlushJoin_doesNotHangTheClose() throws Exception {
    CountDownLatch inSink = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    Batcher<Integer, Integer> batcher = Batcher.of("d1-recorder", BatcherConfig.builder().ringSize(8).maxBatchSize(8).build(),
        batch -> {
          inSink.countDown();
          await(release);
          batch.completeRemaining(1);
        });
    CompletableFuture<Void> flushed = new CompletableFuture<>();
    batcher.addStatsRecorder(new StatsRecorder() {
      @Override
      public void recordAbandoned(long count) {
        batcher.flush().handle((r, t) -> null).join();
        flushed.complete(null);
      }
    });
    try {
      batcher.submit(1);
      assertThat(inSink.await(10, TimeUnit.SECONDS)).isTrue();
      CloseReport report = closeWithin5s(batcher, Duration.ofMillis(50));
      assertThat(report.abandoned()).isEqualTo(1);
      // On a close helper thread, done when close returns unless the machine stalled; the sink still blocks.
      assertThat(flushed).succeedsWithin(Duration.ofSeconds(10));
    } finally {
      release.countDown();
    }
  }

  @Test
  @Timeout(30)
  void flushFromADependentActionTheConsumerRuns_throwsInsteadOfWaitingForItself() throws Exception {
    AtomicReference<Throwable> thrown = new AtomicReference<>();
    CountDownLatch attached = new CountDownLatch(1); // so that the consumer, not this thread, runs the action
    Batcher<Integer, Integer> batcher = Batcher.of("d1-self", BatcherConfig.builder().ringSize(8).maxBatchSize(8)
        .build(), batch -> {
          await(attached);
          batch.completeRemaining(1);
        });
    try (batcher) {
      CompletableFuture<Integer> first = new CompletableFuture<>();
      CompletableFuture<Integer> item = batcher.submit(1);
      item.whenComplete((r, t) -> {
        try {
          batcher.flush().get(5, TimeUnit.SECONDS); // on the consumer: it would wait for itself
        } catch (Throwable e) {
          thrown.set(e);
        }
        first.complete(r);
      });
      attached.countDown();
      assertThat(first).succeedsWithin(Duration.ofSeconds(10));
      assertThat(thrown.get()).isInstanceOf(IllegalStateException.class);
      assertThat(batcher.submit(2)).as("the consumer goes on").succeedsWithin(Duration.ofSeconds(10));
    }
  }

  // ---- defect 2: async sink + a slow ticker: the item is accounted for, and the sink never sees it after close

  @Test
  @Timeout(30)
  void asyncSink_tickerBlockingBeforeTheDispatch_itemAbandoned_sinkNeverCalledAfterClose() throws Exception {
    CountDownLatch inTicker = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    Ticker slow = blockingOnceIn("AsyncBatchWriter", inTicker, release);
    AtomicInteger sinkCalls = new AtomicInteger();
    Batcher<Integer, Integer> batcher = Batcher.ofAsync("d2", BatcherConfig.builder().ringSize(8).maxBatchSize(8).ticker(slow)
        .build(), batch -> {
          sinkCalls.incrementAndGet();
          batch.completeRemaining(1);
          return CompletableFuture.completedFuture(null);
        });
    CompletableFuture<Integer> item = batcher.submit(1);
    assertThat(inTicker.await(10, TimeUnit.SECONDS)).isTrue();
    Thread consumer = consumerThread("d2");
    CloseReport report = closeWithin5s(batcher, Duration.ofMillis(100));
    assertThat(item).as("told by the close while the ticker still blocks").failsWithin(Duration.ofSeconds(10)).withThrowableOfType(java.util.concurrent.ExecutionException.class);
    assertThat(report.abandoned()).isEqualTo(1);
    release.countDown();
    consumer.join(10_000);
    assertThat(consumer.isAlive()).isFalse();
    assertThat(sinkCalls).as("the sink was called after close returned").hasValue(0);
  }

  // ---- defect 3: a ticker read during linger, and a log handler while idle, no longer orphan the consumer

  @Test
  @Timeout(30)
  void tickerBlockingInTheLingerWait_closeTakesOver() throws Exception {
    CountDownLatch inTicker = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    Ticker slow = blockingOnceIn("ConsumerWaitStrategy", inTicker, release);
    Batcher<Integer, Integer> batcher = Batcher.of("d3-linger", BatcherConfig.builder().ringSize(8).maxBatchSize(8)
        .linger(Duration.ofMinutes(10)).ticker(slow).build(), batch -> batch.completeRemaining(1));
    try {
      CompletableFuture<Integer> item = batcher.submit(1);
      assertThat(inTicker.await(10, TimeUnit.SECONDS)).isTrue();
      CloseReport report = closeWithin5s(batcher, Duration.ofMillis(100));
      assertThat(item).as("told by the close while the ticker still blocks").failsWithin(Duration.ofSeconds(10)).withThrowableOfType(java.util.concurrent.ExecutionException.class);
      assertThat(report.abandoned()).isEqualTo(1);
      assertThat(report.stats().abandoned()).isEqualTo(1);
    } finally {
      release.countDown();
    }
  }

  @Test
  @Timeout(30)
  void logHandlerBlockingOnTheIdleConsumersInterruptLine_closeTakesOver() throws Exception {
    CountDownLatch inHandler = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    Handler blocking = new Handler() {
      @Override
      public void publish(LogRecord record) {
        if (String.valueOf(record.getMessage()).contains("interrupted while idle")) {
          inHandler.countDown();
          await(release);
        }
      }

      @Override
      public void flush() {}

      @Override
      public void close() {}
    };
    Logger logger = Logger.getLogger("dev.ringbatch");
    logger.addHandler(blocking);
    Batcher<Integer, Integer> batcher = Batcher.of("d3-log", BatcherConfig.builder().ringSize(8).maxBatchSize(8).build(),
        batch -> batch.completeRemaining(1));
    try {
      assertThat(batcher.submit(0)).succeedsWithin(Duration.ofSeconds(10)); // the consumer ran, and is idle
      consumerThread("d3-log").interrupt();
      assertThat(inHandler.await(10, TimeUnit.SECONDS)).isTrue();
      CompletableFuture<Integer> item = batcher.submit(1);
      CloseReport report = closeWithin5s(batcher, Duration.ofMillis(100));
      assertThat(item).as("told by the close while the handler still blocks").failsWithin(Duration.ofSeconds(10)).withThrowableOfType(java.util.concurrent.ExecutionException.class);
      assertThat(report.abandoned()).isEqualTo(1);
    } finally {
      release.countDown();
      logger.removeHandler(blocking);
    }
  }

  // ---- defect 5: a kept Batch (or items list) never reads another caller's item

  @Test
  @Timeout(30)
  void keptBatch_readAfterWriteReturned_throwsInsteadOfShowingTheNextBatch() throws Exception {
    AtomicReference<Batch<Integer, Integer>> kept = new AtomicReference<>();
    AtomicReference<Object> readLater = new AtomicReference<>();
    Batcher<Integer, Integer> batcher = Batcher.of("d5-sync", BatcherConfig.builder().ringSize(8).maxBatchSize(8).build(), batch -> {
      Batch<Integer, Integer> first = kept.getAndSet(batch);
      if (first != null) {
        try {
          readLater.set(first.item(0));
        } catch (IllegalStateException expected) {
          readLater.set(expected);
        }
      }
      batch.completeRemaining(1);
    });
    try (batcher) {
      batcher.submitAndWait(1);
      batcher.submitAndWait(2);
    }
    assertThat(readLater.get()).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> kept.get().items().get(0)).isInstanceOf(IllegalStateException.class);
  }

  @Test
  @Timeout(30)
  void keptItemsList_ofAResultsSink_throwsInsteadOfShowingTheNextBatch() throws Exception {
    AtomicReference<List<Integer>> kept = new AtomicReference<>();
    AtomicReference<Object> readLater = new AtomicReference<>();
    Batcher<Integer, Integer> batcher = Batcher.of("d5-list", BatcherConfig.builder().ringSize(8).maxBatchSize(8).build(),
        BatchSink.withResults(items -> {
          List<Integer> first = kept.getAndSet(items);
          if (first != null) {
            try {
              readLater.set(first.get(0));
            } catch (IllegalStateException expected) {
              readLater.set(expected);
            }
          }
          return List.copyOf(items);
        }));
    try (batcher) {
      assertThat(batcher.submitAndWait(1)).isEqualTo(1);
      assertThat(batcher.submitAndWait(2)).isEqualTo(2);
    }
    assertThat(readLater.get()).isInstanceOf(IllegalStateException.class);
  }

  @Test
  @Timeout(30)
  void keptAsyncBatch_readAfterItsStageCompleted_throws() throws Exception {
    AtomicReference<Batch<Integer, Integer>> kept = new AtomicReference<>();
    Batcher<Integer, Integer> batcher = Batcher.ofAsync("d5-async", BatcherConfig.builder().ringSize(8).maxBatchSize(8).build(),
        batch -> {
          kept.compareAndSet(null, batch);
          batch.completeRemaining(1);
          return CompletableFuture.completedFuture(null);
        });
    try (batcher) {
      batcher.submitAndWait(1);
      batcher.submitAndWait(2); // the pooled storage now holds (or held) item 2
    }
    assertThatThrownBy(() -> kept.get().item(0)).isInstanceOf(IllegalStateException.class);
  }

  // ---- defect 7: a sharded close is one close

  @Test
  @Timeout(60)
  void sharded_onceIsClosed_noShardAcceptsAnItem() throws Exception {
    for (int round = 0; round < 40; round++) {
      Batcher<Integer, Integer> batcher = Batcher.sharded("d7-" + round, BatcherConfig.builder().ringSize(8).maxBatchSize(8).build(),
          4, item -> item, shard -> batch -> batch.completeRemaining(1));
      CompletableFuture<CloseReport> closing = CompletableFuture.supplyAsync(() -> batcher.close(Duration.ofSeconds(5)));
      while (!batcher.isClosed()) {
        Thread.onSpinWait();
      }
      CompletableFuture<Integer> late = batcher.submit(3); // key 3: the last of 4 shards
      assertThat(late).as("round %s: accepted after isClosed()", round)
          .failsWithin(Duration.ofSeconds(5)).withThrowableOfType(java.util.concurrent.ExecutionException.class)
          .withCauseInstanceOf(BatcherClosedException.class);
      assertThat(closing.get(10, TimeUnit.SECONDS).drained()).isTrue();
    }
  }

  @Test
  @Timeout(30)
  void sharded_secondCloseFromAnInterruptedThread_waitsForTheFirst() throws Exception {
    CountDownLatch inSink = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    Batcher<Integer, Integer> batcher = Batcher.sharded("d7-wait", BatcherConfig.builder().ringSize(8).maxBatchSize(8).build(), 2,
        item -> item, shard -> batch -> {
          inSink.countDown();
          await(release);
          batch.completeRemaining(1);
        });
    batcher.submit(0);
    assertThat(inSink.await(10, TimeUnit.SECONDS)).isTrue();
    CompletableFuture<CloseReport> first = CompletableFuture.supplyAsync(() -> batcher.close(Duration.ofSeconds(10)));
    while (!batcher.isClosed()) {
      Thread.onSpinWait();
    }
    CountDownLatch started = new CountDownLatch(1);
    CompletableFuture<CloseReport> second = CompletableFuture.supplyAsync(() -> {
      Thread.currentThread().interrupt();
      started.countDown();
      try {
        return batcher.close(Duration.ofSeconds(10));
      } finally {
        Thread.interrupted();
      }
    });
    assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
    release.countDown();
    assertThat(second.get(10, TimeUnit.SECONDS).drained()).as("the second close's report").isTrue();
    assertThat(first.get(10, TimeUnit.SECONDS).drained()).isTrue();
  }
}
