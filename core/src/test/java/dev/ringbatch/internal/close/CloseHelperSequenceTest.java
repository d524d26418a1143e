package dev.ringbatch.internal.close;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.lmax.disruptor.RingBuffer;
import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherClosedException;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.BatcherStats;
import dev.ringbatch.CloseReport;
import dev.ringbatch.internal.consume.CoalescingConsumer;
import dev.ringbatch.internal.ring.ItemFuture;
import dev.ringbatch.internal.ring.PublishGate;
import dev.ringbatch.internal.ring.SubmissionSlot;
import dev.ringbatch.testing.Holds;
import dev.ringbatch.testing.Holds.Gate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The close's user code on one helper thread (issue 33): what a single sequence for every kind of user code, and for
 * every shard, must still keep. Each test states the promise; the helper runs the shards' callers, the interrupt of a
 * consumer taken from its sink, and the watch over slots claimed but not published one after the other, so user code
 * (or a thread factory's thread) that waits for something later in that sequence must not leave a future untold.
 */
@Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class CloseHelperSequenceTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  @RegisterExtension
  final Holds holds = new Holds();
  /** The sinks' entries, per batcher of {@link #heldInSink}: {@link #awaitInSink} waits for the first. */
  private final Map<Batcher<?, ?>, CountDownLatch> inSinks = new ConcurrentHashMap<>();

  /** Plays a producer descheduled between its claim and its publish, as CloseStragglerTest does. */
  private record Producer(PublishGate gate, RingBuffer<SubmissionSlot> ring) {
    @SuppressWarnings("unchecked")
    static Producer of(Batcher<?, ?> batcher) throws ReflectiveOperationException {
      return new Producer(CloseStragglerTest.field(batcher, "gate", PublishGate.class),
          CloseStragglerTest.field(batcher, "ring", RingBuffer.class));
    }

    long claim() {
      long claimed = gate.tryClaim();
      assertThat(claimed).isNotNegative();
      return claimed;
    }

    ItemFuture<Object> publish(long claimed) {
      ItemFuture<Object> late = new ItemFuture<>();
      ring.get(claimed).fill("late", late, 0, SubmissionSlot.NOT_STAMPED);
      ring.publish(claimed);
      return late;
    }
  }

  /**
   * Two shards, both stuck in their sinks; the close abandons item a (shard 0) and item b (shard 1), and a's
   * dependent action waits (up to 2 s) for b's outcome. A batcher starts one close helper for all its shards, which
   * tells the shards' callers one shard after the other, so a callback that waits for an item told after it holds
   * that item up until it returns, as a callback on a consumer thread holds up the items after it: the close still
   * returns in time, and b is told as soon as a's callback returns. (Telling b meanwhile would need a second
   * thread; a batcher of N shards starts N + 1: the note of issue 33 says why.)
   */
  @Test
  void sharded_dependentActionWaitingForAnotherShardsItem_holdsItUpUntilItReturns_notTheClose() throws Exception {
    Gate sinkRelease = holds.gate();
    CountDownLatch inSinks = new CountDownLatch(2);
    Batcher<Integer, Void> batcher = holds.track(Batcher.sharded("helper-cross", BatcherConfig.ofDefaults(), 2,
        i -> i, shard -> BatchSink.noResult(items -> {
          inSinks.countDown();
          sinkRelease.await();
        })));
    CompletableFuture<Void> a = batcher.submit(0); // key 0: shard 0
    CompletableFuture<Void> b = batcher.submit(1); // key 1: shard 1
    assertThat(inSinks.await(10, SECONDS)).as("both shards hold their item in the sink").isTrue();
    CountDownLatch bTold = new CountDownLatch(1);
    b.whenComplete((v, t) -> bTold.countDown());
    CompletableFuture<Boolean> aAction = a.handle((v, t) -> awaitQuietly(bTold, 2));

    long start = System.nanoTime();
    CloseReport report = batcher.close(Duration.ofMillis(100));
    long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);

    assertThat(tookMs).as("close(100 ms) took, ms; report %s", report).isLessThan(1_100);
    assertThat(aAction).as("a's action waited for b in vain: b is told after it").succeedsWithin(WAIT)
        .isEqualTo(false);
    assertThat(b).as("b (shard 1) told once a's action returned; report %s", report).failsWithin(WAIT)
        .withThrowableOfType(ExecutionException.class).withCauseInstanceOf(BatcherClosedException.class);
  }

  /**
   * The sink holds a lock while it waits in interruptible I/O; the close takes over from it and interrupts the
   * consumer so that the sink gives up (and lets go of the lock). The abandoned callers' dependent actions take the
   * same lock (a connection, a cache): they must get it once the sink is interrupted, and every caller be told.
   */
  @Test
  void abandonedCallersActionsNeedingTheLockTheInterruptedSinkHolds_allCallersAreTold() throws Exception {
    ReentrantLock lock = new ReentrantLock();
    Gate sinkRelease = holds.gate();
    CountDownLatch inSink = new CountDownLatch(1);
    Batcher<Integer, Void> batcher = holds.track(Batcher.of("helper-lock", BatcherConfig.ofDefaults(),
        BatchSink.noResult(items -> {
          lock.lock();
          try {
            inSink.countDown();
            sinkRelease.awaitInterruptibly(); // gives up when the close interrupts the consumer
          } finally {
            lock.unlock();
          }
        })));
    List<CompletableFuture<Void>> items = new ArrayList<>();
    items.add(batcher.submit(1));
    assertThat(inSink.await(10, SECONDS)).isTrue();
    items.add(batcher.submit(2)); // in the ring behind the stuck batch
    List<CompletableFuture<Boolean>> actions = new ArrayList<>();
    for (CompletableFuture<Void> item : items) {
      actions.add(item.handle((v, t) -> {
        try {
          boolean got = lock.tryLock(15, SECONDS);
          if (got) {
            lock.unlock();
          }
          return got;
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return false;
        }
      }));
    }

    CloseReport report = batcher.close(Duration.ofMillis(100));

    assertThat(report.drained()).isFalse();
    for (int i = 0; i < actions.size(); i++) {
      assertThat(actions.get(i)).as("item %s's action got the lock; report %s", i + 1, report)
          .succeedsWithin(WAIT).isEqualTo(true);
    }
  }

  /**
   * A thread factory whose thread for the close helper never runs its Runnable (the close notices and runs the user
   * code itself). A producer descheduled between claim and publish publishes its accepted item after the close:
   * its caller must still be told, as when the helper runs.
   */
  @Test
  void helperThreadThatNeverRunsItsRunnable_itemPublishedAfterTheCloseIsStillFailed() throws Exception {
    ThreadFactory factory = helperRunning("helper-ignoring", helper -> () -> { }); // ignores the helper's Runnable
    Batcher<String, Void> batcher = holds.track(Batcher.of("helper-ignoring",
        BatcherConfig.builder().threadFactory(factory).build(), BatchSink.noResult(items -> { })));
    Producer producer = Producer.of(batcher);
    long claimed = producer.claim();

    CloseReport report = batcher.close(Duration.ofMillis(50));
    ItemFuture<Object> late = producer.publish(claimed);

    assertThat(report.drained()).isFalse();
    assertThat(late).as("the late item is failed; report %s", report).failsWithin(WAIT)
        .withThrowableOfType(ExecutionException.class).withCauseInstanceOf(BatcherClosedException.class);
    await().atMost(WAIT).untilAsserted(() -> assertThat(batcher.stats().abandoned()).isEqualTo(1));
  }

  /**
   * The same factory (its helper thread ignores its Runnable) and an abandoned caller's dependent action that
   * blocks: close(100 ms) must still return by its timeout and grace, whoever ends up running that action.
   */
  @Test
  void helperThreadThatNeverRunsItsRunnable_blockingDependentAction_closeReturnsInTime() throws Exception {
    Gate actionRelease = holds.gate();
    Batcher<String, Void> batcher = heldInSink("helper-ignoring2",
        helperRunning("helper-ignoring2", helper -> () -> { })); // ignores the helper's Runnable
    CompletableFuture<Void> item = batcher.submit("held");
    awaitInSink(batcher);
    item.whenComplete((v, t) -> actionRelease.await()); // user code that blocks (until the test ends)

    CompletableFuture<CloseReport> closed = new CompletableFuture<>();
    Thread closer = new Thread(() -> closed.complete(batcher.close(Duration.ofMillis(100))), "helper-closer");
    closer.setDaemon(true);
    long start = System.nanoTime();
    closer.start();

    assertThat(closed).as("close(100 ms) returned in time").succeedsWithin(Duration.ofSeconds(2));
    assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(1_100);
  }

  /**
   * A thread factory whose thread for the close helper starts but is held in the factory's own code before it runs
   * its Runnable (a permit, a context to set up; as a consumer thread starting late, which the close takes over
   * from). The caller of an item the close abandoned must still be told by the time the close has returned.
   */
  @Test
  void helperThreadHeldBeforeItsRunnable_abandonedCallerIsStillTold() throws Exception {
    Gate factoryRelease = holds.gate();
    Batcher<String, Void> batcher = heldInSink("helper-late", helperRunning("helper-late", helper -> () -> {
      factoryRelease.await(); // the factory's own code, before the Runnable (until the test ends)
      helper.run();
    }));
    CompletableFuture<Void> item = batcher.submit("held");
    awaitInSink(batcher);

    CloseReport report = batcher.close(Duration.ofMillis(100));

    assertThat(report.abandoned()).isEqualTo(1);
    assertThat(item).as("told; report %s", report).failsWithin(WAIT)
        .withThrowableOfType(ExecutionException.class).withCauseInstanceOf(BatcherClosedException.class);
  }

  /**
   * A thread factory's consumer thread whose interrupt() blocks (user code; the close calls it for a consumer it
   * took from its sink). A straggler published after the close must still be failed, whatever interrupt() does.
   */
  @Test
  void consumerThreadWhoseInterruptBlocks_itemPublishedAfterTheCloseIsStillFailed_theInterruptComesAfter() throws Exception {
    Gate interruptRelease = holds.gate();
    CountDownLatch interrupted = new CountDownLatch(1);
    ThreadFactory factory = r -> {
      Thread t = new Thread(r, "helper-interrupt-" + r.getClass().getSimpleName()) {
        @Override
        public void interrupt() {
          if (Thread.currentThread() != this) {
            interrupted.countDown();
            interruptRelease.await(); // blocks until the test ends
          }
          super.interrupt();
        }
      };
      t.setDaemon(true);
      return t;
    };
    Batcher<String, Void> batcher = heldInSink("helper-interrupt", factory);
    CompletableFuture<Void> first = batcher.submit("first");
    awaitInSink(batcher);
    Producer producer = Producer.of(batcher);
    long claimed = producer.claim();

    CloseReport report = batcher.close(Duration.ofMillis(50));
    ItemFuture<Object> late = producer.publish(claimed);

    assertThat(first).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
        .withCauseInstanceOf(BatcherClosedException.class);
    assertThat(late).as("the late item is failed; report %s", report).failsWithin(WAIT)
        .withThrowableOfType(ExecutionException.class).withCauseInstanceOf(BatcherClosedException.class);
    // the overridden interrupt() comes after the watch, so that it cannot hold the watch up; then it blocks
    assertThat(interrupted.await(10, SECONDS)).as("the close interrupted the consumer").isTrue();
  }

  /**
   * A thread factory that makes non-daemon threads (Executors.defaultThreadFactory(), the JDK's own). A producer
   * that never publishes the slot it claimed (it died between the two) keeps the watch over that slot for the life
   * of the process, by design; it must not keep the process from exiting once the batcher is closed: no thread the
   * batcher had its factory make may stay alive and non-daemon.
   */
  @Test
  void nonDaemonThreadFactory_slotNeverPublished_noNonDaemonThreadOutlivesTheClose() throws Exception {
    List<Thread> made = new CopyOnWriteArrayList<>();
    ThreadFactory jdk = Executors.defaultThreadFactory();
    ThreadFactory factory = r -> {
      Thread t = jdk.newThread(r);
      made.add(t);
      return t;
    };
    Batcher<String, Void> batcher = holds.track(Batcher.of("helper-nondaemon",
        BatcherConfig.builder().threadFactory(factory).build(), BatchSink.noResult(items -> { })));
    Producer producer = Producer.of(batcher);
    long claimed = producer.claim();
    try {
      CloseReport report = batcher.close(Duration.ofMillis(50));
      assertThat(report.drained()).isFalse();
      await().atMost(WAIT).untilAsserted(() -> assertThat(made)
          .as("threads the factory made still alive and non-daemon after the close")
          .filteredOn(t -> t.isAlive() && !t.isDaemon()).isEmpty());
    } finally {
      producer.publish(claimed); // lets the watch end, whoever runs it
    }
  }

  /**
   * Shard 0's consumer thread never runs (a factory's thread that ignores its Runnable) and its ring is full, so
   * its close marker can never go in. A single batcher's close sees the consumer gone and takes over at once; a
   * sharded close must too, not wait out its whole timeout for a marker nobody will make room for.
   */
  @Test
  void sharded_shardWhoseConsumerNeverRanWithAFullRing_closeDoesNotWaitOutItsTimeout() throws Exception {
    AtomicInteger consumers = new AtomicInteger();
    ThreadFactory factory = r -> {
      boolean dud = r.getClass().getSimpleName().equals("CoalescingConsumer") && consumers.getAndIncrement() == 0;
      Thread t = dud ? new Thread(() -> { }, "helper-dud-consumer") : new Thread(r, "helper-dud-other");
      t.setDaemon(true);
      return t;
    };
    Batcher<Integer, Void> batcher = holds.track(Batcher.sharded("helper-dud",
        BatcherConfig.builder().ringSize(8).maxBatchSize(8).threadFactory(factory).build(), 2, i -> i,
        shard -> BatchSink.noResult(items -> { })));
    List<CompletableFuture<Void>> shard0 = new ArrayList<>();
    for (int i = 0; i < 16; i += 2) {
      shard0.add(batcher.submit(i)); // even keys: shard 0, whose ring of 8 is now full
    }

    long start = System.nanoTime();
    CloseReport report = batcher.close(Duration.ofSeconds(5));
    long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);

    shard0.forEach(f -> assertThat(f).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
        .withCauseInstanceOf(BatcherClosedException.class));
    assertThat(tookMs).as("close(5 s) took; report %s", report).isLessThan(1_500);
  }

  /**
   * What held (kept as a guard): one shard stuck in its sink beside a healthy one with items queued; the healthy
   * shard drains all of them, the close returns by timeout + grace, keeps the closing thread's interrupt, and the
   * stats balance once every future is told.
   */
  @Test
  void sharded_oneShardStuck_healthyShardDrainsAndCloseReturnsInTimeWithItsInterrupt() throws Exception {
    Gate sinkRelease = holds.gate();
    CountDownLatch stuck = new CountDownLatch(1);
    Batcher<Integer, Void> batcher = holds.track(Batcher.sharded("helper-stuck", BatcherConfig.ofDefaults(), 2,
        i -> i % 2, shard -> BatchSink.noResult(items -> {
          if (shard == 0) {
            stuck.countDown();
            sinkRelease.await();
          }
        })));
    List<CompletableFuture<Void>> healthy = new ArrayList<>();
    CompletableFuture<Void> held = batcher.submit(0);
    assertThat(stuck.await(10, SECONDS)).isTrue();
    for (int i = 1; i < 200; i += 2) {
      healthy.add(batcher.submit(i));
    }

    Thread.currentThread().interrupt();
    long start = System.nanoTime();
    CloseReport report = batcher.close(Duration.ofMillis(300));
    long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    boolean interruptKept = Thread.interrupted();

    assertThat(interruptKept).as("the closing thread's interrupt is set again").isTrue();
    assertThat(tookMs).as("close(300 ms) took").isLessThan(300 + 200 + 150);
    healthy.forEach(f -> assertThat(f).succeedsWithin(WAIT));
    assertThat(held).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
        .withCauseInstanceOf(BatcherClosedException.class);
    BatcherStats stats = batcher.stats();
    assertThat(stats.accepted()).as("accepted == written + failed + abandoned in %s", stats)
        .isEqualTo(stats.written() + stats.failed() + stats.abandoned());
    assertThat(report.drained()).isFalse();
  }

  /** A factory whose consumer threads run their Runnable and whose close helper's thread runs {@code body}. */
  private static ThreadFactory helperRunning(String name, Function<Runnable, Runnable> body) {
    return r -> {
      boolean consumer = r.getClass().getSimpleName().equals("CoalescingConsumer");
      Thread t = consumer ? new Thread(r, name + "-consumer") : new Thread(body.apply(r), name + "-close");
      t.setDaemon(true);
      return t;
    };
  }

  /** A batcher whose sink holds every batch until the test ends. */
  private Batcher<String, Void> heldInSink(String name, ThreadFactory factory) {
    Gate sinkRelease = holds.gate();
    CountDownLatch inSink = new CountDownLatch(1);
    Batcher<String, Void> batcher = holds.track(Batcher.of(name, BatcherConfig.builder().threadFactory(factory)
        .build(), BatchSink.noResult(items -> {
          inSink.countDown();
          sinkRelease.await();
        })));
    inSinks.put(batcher, inSink);
    return batcher;
  }

  private void awaitInSink(Batcher<?, ?> batcher) throws InterruptedException {
    assertThat(inSinks.get(batcher).await(10, SECONDS)).as("the sink holds the first batch").isTrue();
  }

  private static boolean awaitQuietly(CountDownLatch latch, long seconds) {
    try {
      return latch.await(seconds, SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }
}
