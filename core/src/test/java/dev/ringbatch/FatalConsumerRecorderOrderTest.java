package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.ringbatch.stats.StatsRecorder;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A consumer that fails fatally (an Error in its own code; Thread.stop stands in for it, JDK < 20) fails what it
 * holds itself and tells recordAbandoned on its own thread, before the callers, as a close does, then ends. A close that comes after must still tell recordClosed
 * after that recordAbandoned, as StatsRecorder promises: the close leaves nobody behind here. Found by the review of
 * fb1ab7b, which told "closed" while recordAbandoned still ran.
 */
class FatalConsumerRecorderOrderTest {

  /** A recorder whose recordAbandoned takes its time (a remote push, up to 2 s here), and notes every call. */
  private static final class SlowAbandonRecorder implements StatsRecorder {
    final List<String> calls = new CopyOnWriteArrayList<>();
    final CountDownLatch closed = new CountDownLatch(1);
    final CountDownLatch abandonedDone = new CountDownLatch(1);

    @Override
    public void recordAbandoned(long count) {
      calls.add("abandoned " + count + " begins");
      // Its work takes up to 2 s; it returns early only if recordClosed came meanwhile. An interrupt (the killed
      // consumer thread has its flag set, where it recorded before fb1ab7b) does not cut it short.
      long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
      boolean interrupted = Thread.interrupted();
      while (closed.getCount() > 0 && System.nanoTime() - until < 0) {
        try {
          closed.await(until - System.nanoTime(), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
      calls.add("abandoned ends");
      abandonedDone.countDown();
    }

    @Override
    public void recordClosed(CloseReport report) {
      calls.add("closed");
      closed.countDown();
    }
  }

  private static Method stopMethod() {
    try {
      Method stop = Thread.class.getMethod("stop");
      return Runtime.version().feature() < 20 ? stop : null;
    } catch (NoSuchMethodException gone) {
      return null;
    }
  }

  private static BatcherConfig lingering(String name, AtomicReference<Thread> consumer) {
    return BatcherConfig.builder().ringSize(8).maxBatchSize(8).linger(Duration.ofSeconds(30)).threadFactory(r -> {
      Thread t = new Thread(r, name + "-consumer");
      t.setDaemon(true);
      consumer.compareAndSet(null, t); // the first thread made is the consumer, then the close helper
      return t;
    }).build();
  }

  /** Waits until the consumer is parked lingering over item 1 (OWNED, batch FILLING), then kills it. */
  @SuppressWarnings("deprecation")
  private static void killWhileLingering(Thread thread, Method stop) throws Exception {
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!parkedInWaitStrategy(thread) && System.nanoTime() - until < 0) {
      Thread.onSpinWait();
    }
    assertThat(parkedInWaitStrategy(thread)).as("consumer parked, lingering (30 s)").isTrue();
    stop.invoke(thread); // ThreadDeath out of the park: the consumer's own code fails (failFatally)
  }

  @Test
  @Timeout(60)
  void aConsumerThatFailedFatally_recordsAbandonedBeforeTheCloseRecordsClosed() throws Exception {
    AtomicReference<Thread> consumer = new AtomicReference<>();
    assertRecordClosedComesLast(consumer, Batcher.of("fatal-order", lingering("fatal-order", consumer),
        batch -> batch.completeRemaining(1)));
  }

  @Test
  @Timeout(60)
  void aShardWhoseConsumerFailedFatally_recordsAbandonedBeforeTheShardedCloseRecordsClosed() throws Exception {
    AtomicReference<Thread> consumer = new AtomicReference<>();
    assertRecordClosedComesLast(consumer, Batcher.sharded("fatal-shard", lingering("fatal-shard", consumer), 1,
        shard -> batch -> batch.completeRemaining(1)));
  }

  @Test
  @Timeout(60)
  void aConsumerThatFailedFatally_failsEveryFlush_withoutWaitingForAClose() throws Exception {
    Method stop = stopMethod();
    assumeTrue(stop != null, "Thread.stop works on this JDK");
    AtomicReference<Thread> consumer = new AtomicReference<>();
    Batcher<Integer, Integer> batcher = Batcher.of("fatal-flush", lingering("fatal-flush", consumer),
        batch -> batch.completeRemaining(1));
    try {
      CompletableFuture<Integer> item = batcher.submit(1); // lingers in the batch being filled
      Thread thread = consumer.get();
      killWhileLingering(thread, stop);
      assertThat(item).failsWithin(Duration.ofSeconds(10)).withThrowableOfType(ExecutionException.class)
          .withCauseInstanceOf(BatcherClosedException.class);
      assertThat(batcher.isClosed()).isTrue();

      // Every item accepted before it has failed, as a close that abandoned items fails its flushes (a flush before
      // the failure would cut the linger short: the item would be written, so only flushes after it are asked).
      assertThat(batcher.flush()).as("a flush after the failure, no close").failsWithin(Duration.ofSeconds(10))
          .withThrowableOfType(ExecutionException.class).withCauseInstanceOf(BatcherClosedException.class);
    } finally {
      batcher.close(Duration.ofSeconds(5));
    }
  }

  /** Kills the consumer while it lingers over one item, then closes: recordClosed must come last. */
  private static void assertRecordClosedComesLast(AtomicReference<Thread> consumer, Batcher<Integer, Integer> batcher)
      throws Exception {
    Method stop = stopMethod();
    assumeTrue(stop != null, "Thread.stop works on this JDK");
    SlowAbandonRecorder recorder = new SlowAbandonRecorder();
    batcher.addStatsRecorder(recorder);
    CompletableFuture<Integer> item = batcher.submit(1); // lingers in the batch being filled
    Thread thread = consumer.get();
    killWhileLingering(thread, stop);
    assertThat(item).failsWithin(Duration.ofSeconds(10)).withThrowableOfType(ExecutionException.class)
        .withCauseInstanceOf(BatcherClosedException.class);
    thread.join(TimeUnit.SECONDS.toMillis(10));
    assertThat(thread.isAlive()).as("the consumer thread ended").isFalse();

    CloseReport report = batcher.close(Duration.ofSeconds(5)); // the consumer is gone: nothing to wait for
    assertThat(recorder.abandonedDone.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(recorder.closed.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(batcher.stats().abandoned()).isEqualTo(1);
    assertThat(recorder.calls).as("report=%s", report)
        .containsExactly("abandoned 1 begins", "abandoned ends", "closed");
  }

  private static boolean parkedInWaitStrategy(Thread t) {
    if (t.getState() != Thread.State.TIMED_WAITING) { // the linger's parkNanos, not the idle park before the item
      return false;
    }
    for (StackTraceElement e : t.getStackTrace()) {
      if (e.getClassName().endsWith("ConsumerWaitStrategy") && e.getMethodName().equals("park")) {
        return true;
      }
    }
    return false;
  }
}
