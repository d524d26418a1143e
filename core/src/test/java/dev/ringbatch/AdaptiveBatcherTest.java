package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Adaptive limits on a running batcher: every safety rule of {@link Adaptive}. The sink costs 2 ms of the
 * batcher's ticker per call (it moves the ticker on instead of waiting), so closed-loop callers learn a linger
 * in well under a second; the ticker can then be frozen, which makes any linger last for ever: an item that
 * completes while the ticker stands still was not held.
 */
class AdaptiveBatcherTest {
  private static final int CALLERS = 8;
  private static final int CAP = 64;
  private static final Duration MAX_LINGER = Duration.ofMillis(1);

  /** System time plus what the sink spent, or frozen. */
  private static final class SinkTicker implements Ticker {
    final AtomicLong offset = new AtomicLong();
    volatile boolean frozen;
    volatile long frozenAt;
    /** The consumer's last reading: once it is idle, the end of its last write. */
    volatile long lastConsumerRead;

    @Override
    public long read() {
      long now = frozen ? frozenAt : System.nanoTime() + offset.get();
      if (Thread.currentThread().getName().equals("adaptive-test-consumer")) {
        lastConsumerRead = now;
      }
      return now;
    }

    /** Stops the clock at the consumer's last reading: to the consumer, no time passed since its last write. */
    void freezeAtLastConsumerRead() {
      frozenAt = lastConsumerRead;
      frozen = true;
    }

    void freeze(long jumpNanos) {
      frozenAt = System.nanoTime() + offset.addAndGet(jumpNanos);
      frozen = true;
    }

    void thaw() {
      offset.set(frozenAt - System.nanoTime());
      frozen = false;
    }
  }

  private final SinkTicker ticker = new SinkTicker();
  private final AtomicInteger largestBatch = new AtomicInteger();
  private final AtomicLong written = new AtomicLong();
  private final AtomicLong lingerSeen = new AtomicLong();
  private Batcher<Integer, Void> batcher;
  private volatile Thread consumer;

  private Batcher<Integer, Void> start(Adaptive adaptive) {
    BatcherConfig config = BatcherConfig.builder().ringSize(256).maxBatchSize(CAP).adaptive(adaptive)
        .ticker(ticker).threadFactory(r -> { // the first thread made is the consumer, then the close helper
          Thread t = new Thread(r, consumer == null ? "adaptive-test-consumer" : "adaptive-test-close");
          if (consumer == null) {
            consumer = t;
          }
          return t;
        }).build();
    batcher = Batcher.of("adaptive-test", config, BatchSink.noResult(items -> {
      largestBatch.accumulateAndGet(items.size(), Math::max);
      written.addAndGet(items.size());
      ticker.offset.addAndGet(2_000_000 + 500L * items.size()); // F = 2 ms, c = 500 ns
    }));
    return batcher;
  }

  @AfterEach
  void close() {
    if (batcher != null) {
      ticker.frozen = false;
      batcher.close(Duration.ofSeconds(5));
    }
  }

  /** Runs closed-loop callers until a linger is in force once they have stopped; fails after 30 s. */
  private void learnALinger() throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (System.nanoTime() < deadline) {
      AtomicBoolean stop = new AtomicBoolean();
      List<Thread> callers = new ArrayList<>();
      for (int i = 0; i < CALLERS; i++) {
        Thread t = new Thread(() -> {
          while (!stop.get()) {
            batcher.submit(1).join();
            lingerSeen.accumulateAndGet(batcher.limits().linger().toNanos(), Math::max);
          }
        });
        t.start();
        callers.add(t);
      }
      try {
        Awaitility.await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(1))
            .until(() -> !batcher.limits().linger().isZero());
      } finally {
        stop.set(true);
      }
      for (Thread t : callers) {
        t.join(TimeUnit.SECONDS.toMillis(10));
        assertThat(t.isAlive()).as("a caller stuck").isFalse();
      }
      // The consumer reads the ticker once more after it completed the last batch: wait until it parks, idle,
      // so that a freeze that follows comes after that read.
      Awaitility.await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(1))
          .until(() -> consumer.getState() == Thread.State.WAITING);
      if (!batcher.limits().linger().isZero() && batcher.stats().lastBatchSize() >= 2) {
        return; // a linger in force, after a batch of two or more: the next item may be held
      }
    }
    throw new AssertionError("no linger learnt in 30 s: " + batcher.limits() + ", " + batcher.stats());
  }

  @Test
  void aLingerIsLearntWithinItsCapsAndTheFirstItemAfterIdleIsNotHeld() throws Exception {
    start(Adaptive.throughput().withMaxLinger(MAX_LINGER));
    learnALinger();
    assertThat(largestBatch.get()).isLessThanOrEqualTo(CAP);
    assertThat(lingerSeen.get()).isLessThanOrEqualTo(MAX_LINGER.toNanos());
    assertThat(batcher.stats().limits()).isEqualTo(batcher.limits());
    ticker.freeze(TimeUnit.SECONDS.toNanos(1)); // a second of idle, then no time passes: a held item stays held
    assertThat(batcher.limits().linger()).isPositive(); // in force: nothing changes it before the next write
    batcher.submit(1).get(10, TimeUnit.SECONDS); // the first item after idle
    batcher.submit(2).get(10, TimeUnit.SECONDS); // a lone caller's, after a batch of one
  }

  @Test
  void completingEachBatchTakesLongerThanAnIdleGap_aLingerIsStillLearnt() throws Exception {
    start(Adaptive.throughput().withMaxLinger(MAX_LINGER));
    // Completing a batch (waking its callers, the recorders) takes 1.5 ms of the batcher's time on the consumer:
    // with 256 platform callers the jdbc grid's consumer spent more of each cycle waking callers than in the sink.
    // It is the batch's own work, not an idle spell before the next.
    batcher.addStatsRecorder(new dev.ringbatch.stats.StatsRecorder() {
      @Override
      public void recordBatch(int size, long weight, long writeNanos, int failed) {
        ticker.offset.addAndGet(1_500_000);
      }
    });
    learnALinger();
  }

  @Test
  void everyChangeIsLoggedAtDebug() throws Exception {
    Logger logger = Logger.getLogger("dev.ringbatch.internal.pacing.AdaptiveLimits");
    List<LogRecord> records = new CopyOnWriteArrayList<>();
    Handler handler = new Handler() {
      @Override
      public void publish(LogRecord record) {
        records.add(record);
      }

      @Override
      public void flush() {}

      @Override
      public void close() {}
    };
    Level previous = logger.getLevel();
    logger.setLevel(Level.ALL);
    logger.addHandler(handler);
    try {
      start(Adaptive.throughput().withMaxLinger(MAX_LINGER));
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      do { // a linger in force may be a probe's, which is not logged; a move is
        learnALinger();
      } while (records.isEmpty() && System.nanoTime() < deadline);
      assertThat(records).anySatisfy(r -> {
        assertThat(r.getLevel()).isEqualTo(Level.FINE); // System.Logger's DEBUG
        assertThat(r.getMessage()).contains("batcher 'adaptive-test': adaptive limits now").contains("linger");
      });
    } finally {
      logger.removeHandler(handler);
      logger.setLevel(previous);
    }
  }

  @Test
  void aTickerThatBlocksOnTheConsumerRightAfterAWrite_closeStillReturnsAndEveryOutcomeBalances() throws Exception {
    AtomicReference<CompletableFuture<Void>> first = new AtomicReference<>();
    CountDownLatch blocked = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    Ticker blocking = () -> {
      CompletableFuture<Void> f = first.get();
      // the first read on the consumer once the item's future is complete: the next write's start (after a batch of
      // one the controller reads none of its own: it takes the writer's readings)
      if (f != null && f.isDone() && Thread.currentThread().getName().equals("adaptive-test-consumer")
          && blocked.getCount() == 1) {
        blocked.countDown();
        try {
          release.await(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      return System.nanoTime();
    };
    BatcherConfig config = BatcherConfig.builder().ringSize(256).adaptive(Adaptive.throughput()).ticker(blocking)
        .threadFactory(r -> new Thread(r, "adaptive-test-consumer")).build();
    // The sink waits until the dependent action below is attached, so that it runs on the consumer thread when the
    // item completes, before the next reading (attached later, it would run on this thread, after it).
    CountDownLatch inSink = new CountDownLatch(1);
    CountDownLatch attached = new CountDownLatch(1);
    Batcher<Integer, Void> b = Batcher.of("adaptive-blocked", config, BatchSink.noResult(items -> {
      inSink.countDown();
      assertThat(attached.await(10, TimeUnit.SECONDS)).isTrue();
    }));
    try {
      CompletableFuture<Void> one = new CompletableFuture<>();
      first.set(one);
      b.submit(1).whenComplete((v, e) -> one.complete(null));
      assertThat(inSink.await(10, TimeUnit.SECONDS)).isTrue();
      CompletableFuture<Void> late = b.submit(2); // the next batch, whose write start reads the blocking ticker
      attached.countDown();
      assertThat(blocked.await(10, TimeUnit.SECONDS)).as("the consumer blocked in the ticker").isTrue();
      long start = System.nanoTime();
      CloseReport report = b.close(Duration.ofMillis(100));
      assertThat(System.nanoTime() - start).isLessThan(TimeUnit.SECONDS.toNanos(5));
      assertThat(late).failsWithin(Duration.ofSeconds(5)).withThrowableOfType(java.util.concurrent.ExecutionException.class); // taken over: never written, and told so
      BatcherStats stats = report.stats();
      assertThat(stats.written()).isEqualTo(1);
      assertThat(stats.written() + stats.failed() + stats.abandoned() + stats.rejected())
          .isEqualTo(stats.submitted());
    } finally {
      release.countDown();
      b.close(Duration.ofSeconds(5));
    }
  }

  @Test
  void flushAndCloseCutALearntLinger() throws Exception {
    start(Adaptive.throughput().withMaxLinger(MAX_LINGER));
    learnALinger();
    // Frozen at the last write's end (no idle spell, whatever the callers and the consumer took to stop: on a
    // loaded machine that took more than the 10 ms this step once was), after a batch of two or more: the next item
    // is held, and its linger never ends.
    ticker.freezeAtLastConsumerRead();
    CompletableFuture<Void> held = batcher.submit(1);
    assertThatThrownBy(() -> held.get(50, TimeUnit.MILLISECONDS)).isInstanceOf(TimeoutException.class);
    batcher.flush().get(10, TimeUnit.SECONDS);
    assertThat(held).isCompleted();
    CompletableFuture<Void> heldAgain = batcher.submit(2);
    CompletableFuture<Void> third = batcher.submit(3);
    CloseReport report = batcher.close(Duration.ofSeconds(10));
    assertThat(report.drained()).isTrue();
    assertThat(heldAgain).isCompleted();
    assertThat(third).isCompleted();
  }

  @Test
  void tickerSteppedBackDuringIdle_theFirstItemAfterIsNotHeld() throws Exception {
    start(Adaptive.throughput().withMaxLinger(MAX_LINGER));
    learnALinger();
    // A minute back (a wall clock corrected by NTP), then no time passes: were the item held, it would stay held.
    ticker.freeze(-TimeUnit.SECONDS.toNanos(60));
    assertThat(batcher.limits().linger()).isPositive();
    batcher.submit(1).get(10, TimeUnit.SECONDS);
  }

  @Test
  void setLimitsPinsTheLimits() throws Exception {
    start(Adaptive.throughput().withMaxLinger(MAX_LINGER));
    learnALinger();
    BatchLimits pinned = BatchLimits.of(7, BatchLimits.NO_BYTE_LIMIT, Duration.ZERO);
    batcher.setLimits(pinned);
    largestBatch.set(0);
    ticker.thaw();
    List<CompletableFuture<Void>> futures = new ArrayList<>();
    for (int round = 0; round < 200; round++) { // epochs enough for the controller to have moved, were it steering
      for (int i = 0; i < 20; i++) {
        futures.add(batcher.submit(i));
      }
      CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).get(10, TimeUnit.SECONDS);
      futures.clear();
    }
    assertThat(batcher.limits()).isEqualTo(pinned);
    assertThat(batcher.stats().limits()).isEqualTo(pinned);
    assertThat(largestBatch.get()).isLessThanOrEqualTo(7);
  }

  @Test
  void latencyModeStampsItemsAndKeepsEveryOutcome() throws Exception {
    start(Adaptive.latency(Duration.ofMillis(50)).withMaxLinger(MAX_LINGER));
    learnALinger();
    assertThat(written.get()).isEqualTo(batcher.stats().written());
    assertThat(batcher.stats().failed()).isZero();
  }

  @Test
  void badInputNamesTheFieldAndTheValue() {
    assertThatThrownBy(() -> Adaptive.latency(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("p99").hasMessageContaining("PT0S");
    assertThatThrownBy(() -> Adaptive.throughput().withMaxLinger(Duration.ofMillis(-1)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxLinger");
    assertThatThrownBy(() -> Adaptive.throughput().withMaxLinger(Duration.ofSeconds(2)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxLinger").hasMessageContaining("PT2S");
    assertThatThrownBy(() -> BatcherConfig.builder().linger(Duration.ofMillis(1)).adaptive(Adaptive.throughput())
        .build()).isInstanceOf(IllegalStateException.class).hasMessageContaining("linger (PT0.001S)");
    assertThatThrownBy(() -> BatcherConfig.builder().adaptive(null)).isInstanceOf(NullPointerException.class)
        .hasMessageContaining("adaptive");
  }

  @Test
  void anAdaptiveConfigsCapIs4096OrTheSmallerRing_unlessOneIsSet() throws ExecutionException {
    BatcherConfig defaulted = BatcherConfig.builder().ringSize(8192).adaptive(Adaptive.throughput()).build();
    assertThat(defaulted.limits().maxBatchSize()).isEqualTo(4096);
    assertThat(BatcherConfig.from(defaulted).ringSize(4096).build().limits().maxBatchSize()).isEqualTo(4096);
    assertThat(BatcherConfig.from(defaulted).ringSize(512).build().limits().maxBatchSize()).isEqualTo(512);
    BatcherConfig set = BatcherConfig.builder().ringSize(8192).maxBatchSize(100).adaptive(Adaptive.throughput())
        .build();
    assertThat(set.limits().maxBatchSize()).isEqualTo(100);
    assertThat(BatcherConfig.builder().build().limits().maxBatchSize()).isEqualTo(4096); // under a ring of 16,384
    assertThat(BatcherConfig.builder().limits(BatchLimits.ofDefaults()).build().limits().maxBatchSize())
        .isEqualTo(256);
    assertThat(Adaptive.latency(Duration.ofMillis(1)).maxLinger()).isEqualTo(Duration.ofNanos(500_000));
    assertThat(defaulted.toString()).contains("adaptive=Adaptive{throughput, maxLinger=PT0.001S}");
  }
}
