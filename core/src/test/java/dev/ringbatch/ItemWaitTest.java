package dev.ringbatch;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.stats.StatsRecorder;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The time an item waits in the ring, from its publish to its batch's first write attempt, measured with a
 * hand-driven {@link Ticker} so every wait is exact; and only for recorders that ask for it.
 */
@Timeout(value = 30, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class ItemWaitTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  private final AtomicLong clock = new AtomicLong(1_000);
  private final CountDownLatch release = new CountDownLatch(1);
  private final BlockingQueue<String> sinkCalls = new LinkedBlockingQueue<>();
  private final List<Batcher<?, ?>> batchers = new CopyOnWriteArrayList<>();

  @AfterEach
  void stop() {
    release.countDown();
    batchers.forEach(b -> b.close(Duration.ofSeconds(5)));
  }

  /** Records item waits as {@code items/total/max}. */
  private static class WaitRecorder implements StatsRecorder {
    final List<String> waits = new CopyOnWriteArrayList<>();
    final AtomicInteger batches = new AtomicInteger();

    @Override
    public boolean recordsItemWaits() {
      return true;
    }

    @Override
    public void recordItemWaits(int items, long totalWaitNanos, long maxWaitNanos) {
      waits.add(items + "/" + totalWaitNanos + "/" + maxWaitNanos);
    }

    @Override
    public void recordBatch(int size, long weight, long writeNanos, int failed) {
      batches.incrementAndGet();
    }
  }

  /** A sink that holds its first batch until released, so later items queue in the ring. */
  private BatchSink<String, Integer> holdingFirstBatch() {
    return batch -> {
      sinkCalls.add(String.join(",", batch.items()));
      if (batch.items().contains("a") && !release.await(20, SECONDS)) {
        throw new AssertionError("never released");
      }
      batch.completeRemaining(batch.size());
    };
  }

  private Batcher<String, Integer> batcher(BatchSink<String, Integer> sink, StatsRecorder recorder) {
    BatcherConfig config = BatcherConfig.builder().ringSize(1024).ticker(clock::get).build();
    Batcher<String, Integer> batcher = Batcher.of("waits", config, sink);
    batchers.add(batcher);
    batcher.addStatsRecorder(recorder);
    return batcher;
  }

  @Test
  void itemsQueuedBehindASlowWrite_reportTheirExactWaitsUntilTheirWriteStarts() throws Exception {
    WaitRecorder recorder = new WaitRecorder();
    Batcher<String, Integer> batcher = batcher(holdingFirstBatch(), recorder);

    CompletableFuture<Integer> a = batcher.submit("a"); // published and written at 1000: waited 0
    assertThat(sinkCalls.poll(10, SECONDS)).isEqualTo("a");
    clock.set(1_150);
    CompletableFuture<Integer> b = batcher.submit("b");
    clock.set(1_170);
    CompletableFuture<Integer> c = batcher.submit("c");
    clock.set(1_400); // the next write starts at 1400: b waited 250, c 230
    release.countDown();

    assertThat(a).succeedsWithin(WAIT);
    assertThat(sinkCalls.poll(10, SECONDS)).isEqualTo("b,c");
    assertThat(b).succeedsWithin(WAIT);
    assertThat(c).succeedsWithin(WAIT);
    // recorded before the futures complete, so visible now
    assertThat(recorder.waits).containsExactly("1/0/0", "2/480/250");
  }

  @Test
  void recorderAskingForEachWait_hearsEveryItemsExactWait_onlyThen() throws Exception {
    List<String> each = new CopyOnWriteArrayList<>();
    WaitRecorder perItem = new WaitRecorder() {
      @Override
      public boolean recordsEachItemWait() {
        return true;
      }

      @Override
      public void recordEachItemWait(long[] waitNanos, int count) {
        each.add(java.util.Arrays.toString(java.util.Arrays.copyOf(waitNanos, count)));
      }
    };
    WaitRecorder sumsOnly = new WaitRecorder() {
      @Override
      public void recordEachItemWait(long[] waitNanos, int count) {
        throw new AssertionError("told each wait without asking");
      }
    };
    Batcher<String, Integer> batcher = batcher(holdingFirstBatch(), perItem);
    batcher.addStatsRecorder(sumsOnly);

    CompletableFuture<Integer> a = batcher.submit("a");
    assertThat(sinkCalls.poll(10, SECONDS)).isEqualTo("a");
    clock.set(1_150);
    CompletableFuture<Integer> b = batcher.submit("b");
    clock.set(1_170);
    CompletableFuture<Integer> c = batcher.submit("c");
    clock.set(1_400);
    release.countDown();

    assertThat(CompletableFuture.allOf(a, b, c)).succeedsWithin(WAIT);
    assertThat(each).containsExactly("[0]", "[250, 230]");
    assertThat(sumsOnly.waits).containsExactly("1/0/0", "2/480/250");
  }

  @Test
  void asyncSink_waitEndsWhenTheBatchIsHandedToTheSink() throws Exception {
    WaitRecorder recorder = new WaitRecorder();
    CompletableFuture<Void> firstStage = new CompletableFuture<>();
    AsyncBatchSink<String, Integer> sink = batch -> {
      sinkCalls.add(String.join(",", batch.items()));
      batch.completeRemaining(0);
      return batch.items().contains("a") ? firstStage : CompletableFuture.completedFuture(null);
    };
    BatcherConfig config = BatcherConfig.builder().ringSize(1024).maxInFlightBatches(1).ticker(clock::get).build();
    Batcher<String, Integer> batcher = Batcher.ofAsync("waits-async", config, sink);
    batchers.add(batcher);
    batcher.addStatsRecorder(recorder);

    CompletableFuture<Integer> a = batcher.submit("a");
    assertThat(sinkCalls.poll(10, SECONDS)).isEqualTo("a");
    clock.set(1_100);
    CompletableFuture<Integer> b = batcher.submit("b"); // waits for the one in-flight slot
    clock.set(1_600);
    firstStage.complete(null);
    assertThat(a).succeedsWithin(WAIT);
    assertThat(b).succeedsWithin(WAIT);
    // the two batches may be recorded in either order: a's completion gives its in-flight slot back first
    assertThat(recorder.waits).containsExactlyInAnyOrder("1/0/0", "1/500/500");
  }

  @Test
  void recorderThatDoesNotAsk_isNeverToldWaits_andOneThatThrowsWhenAskedCountsAsNo() throws Exception {
    AtomicInteger waitCalls = new AtomicInteger();
    StatsRecorder notAsking = new StatsRecorder() {
      @Override
      public void recordItemWaits(int items, long totalWaitNanos, long maxWaitNanos) {
        waitCalls.incrementAndGet();
      }
    };
    StatsRecorder throwingWhenAsked = new StatsRecorder() {
      @Override
      public boolean recordsItemWaits() {
        throw new IllegalStateException("broken recorder");
      }

      @Override
      public void recordItemWaits(int items, long totalWaitNanos, long maxWaitNanos) {
        waitCalls.incrementAndGet();
      }
    };
    Batcher<String, Integer> batcher = batcher(batch -> batch.completeRemaining(1), notAsking);
    batcher.addStatsRecorder(throwingWhenAsked);

    for (int i = 0; i < 100; i++) {
      assertThat(batcher.submit("x" + i)).succeedsWithin(WAIT).isEqualTo(1);
    }
    assertThat(waitCalls).hasValue(0);
  }

  @Test
  void removingTheLastAskingRecorder_stopsTheMeasuring_andAnotherStillHearsOnlyWhatWasStamped()
      throws Exception {
    WaitRecorder asking = new WaitRecorder();
    WaitRecorder second = new WaitRecorder();
    Batcher<String, Integer> batcher = batcher(holdingFirstBatch(), asking);

    CompletableFuture<Integer> a = batcher.submit("a");
    assertThat(sinkCalls.poll(10, SECONDS)).isEqualTo("a");
    assertThat(batcher.removeStatsRecorder(asking)).isTrue();
    CompletableFuture<Integer> b = batcher.submit("b"); // published while nobody measures: not stamped
    batcher.addStatsRecorder(second);
    clock.set(1_300);
    CompletableFuture<Integer> c = batcher.submit("c"); // stamped at 1300
    clock.set(1_350);
    release.countDown();
    assertThat(a).succeedsWithin(WAIT);
    assertThat(b).succeedsWithin(WAIT);
    assertThat(c).succeedsWithin(WAIT);
    assertThat(asking.waits).isEmpty(); // removed before batch a was recorded
    // a was stamped (at 1000, written at once); b,c were written together and only c was stamped
    assertThat(second.waits).containsExactly("1/0/0", "1/50/50");
  }

  /** Found by review: one recorder asking made every recorder hear item waits. */
  @Test
  void recorderThatSaysNo_isNotToldWaits_whenAnotherRecorderSaysYes() {
    AtomicInteger waitCallsOnNo = new AtomicInteger();
    StatsRecorder saysNo = new StatsRecorder() {
      @Override
      public void recordItemWaits(int items, long totalWaitNanos, long maxWaitNanos) {
        waitCallsOnNo.incrementAndGet();
      }
    };
    WaitRecorder saysYes = new WaitRecorder();
    Batcher<String, Integer> batcher = batcher(batch -> batch.completeRemaining(1), saysNo);
    batcher.addStatsRecorder(saysYes);

    for (int i = 0; i < 10; i++) {
      assertThat(batcher.submit("x" + i)).succeedsWithin(WAIT).isEqualTo(1);
    }
    assertThat(saysYes.waits).isNotEmpty();
    assertThat(waitCallsOnNo).hasValue(0);
  }

  /** Found by review: a ticker reading of 0 (a test clock's origin) was taken for "not stamped". */
  @Test
  void itemPublishedAtTickerZero_isMeasuredLikeAnyOther() throws Exception {
    clock.set(0);
    WaitRecorder recorder = new WaitRecorder();
    Batcher<String, Integer> batcher = batcher(holdingFirstBatch(), recorder);

    CompletableFuture<Integer> a = batcher.submit("a"); // published at 0, written at once at 0
    assertThat(sinkCalls.poll(10, SECONDS)).isEqualTo("a");
    CompletableFuture<Integer> b = batcher.submit("b"); // published at 0
    clock.set(300);
    CompletableFuture<Integer> c = batcher.submit("c"); // published at 300
    clock.set(400); // b,c written at 400: b waited 400, c 100
    release.countDown();
    assertThat(a).succeedsWithin(WAIT);
    assertThat(sinkCalls.poll(10, SECONDS)).isEqualTo("b,c");
    assertThat(b).succeedsWithin(WAIT);
    assertThat(c).succeedsWithin(WAIT);
    assertThat(recorder.waits).containsExactly("1/0/0", "2/500/400");
  }

  /**
   * The Ticker is user code: a producer reading a slow one must not hold a claimed, unpublished slot, or every
   * later caller's item waits behind it (the consumer reads the ring in order).
   */
  @Test
  void slowTickerOnOneProducer_doesNotHoldBackAnotherProducersItem() throws Exception {
    CountDownLatch inTicker = new CountDownLatch(1);
    CountDownLatch tickerGate = new CountDownLatch(1);
    Ticker ticker = () -> {
      if (Thread.currentThread().getName().equals("slow-producer")) {
        inTicker.countDown();
        try {
          tickerGate.await(20, SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      return clock.get();
    };
    BatcherConfig config = BatcherConfig.builder().ringSize(1024).ticker(ticker).build();
    Batcher<String, Integer> batcher = Batcher.of("slow-ticker", config, batch -> batch.completeRemaining(1));
    batchers.add(batcher);
    batcher.addStatsRecorder(new WaitRecorder());

    CompletableFuture<CompletableFuture<Integer>> slow = new CompletableFuture<>();
    Thread slowProducer = new Thread(() -> slow.complete(batcher.submit("slow")), "slow-producer");
    slowProducer.start();
    assertThat(inTicker.await(10, SECONDS)).isTrue();
    try {
      assertThat(batcher.submit("fast")).succeedsWithin(WAIT).isEqualTo(1);
    } finally {
      tickerGate.countDown();
    }
    assertThat(slow.get(10, SECONDS)).succeedsWithin(WAIT).isEqualTo(1);
  }
}
