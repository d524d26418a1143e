package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Many producers against one consumer with a sink that fails at random. The short run is part of every
 * build; {@code -Dringbatch.stress.items=1000000} runs the full one.
 */
@Tag("stress")
class BatcherStressTest {
  private static final int ITEMS = Integer.getInteger("ringbatch.stress.items", 200_000);
  private static final int PRODUCERS = 8;
  private static final byte SINK_OK = 1;
  private static final byte SINK_FAILED = 2;

  /** An item names its producer and its place in that producer's order; {@code id} indexes the checks. */
  record Item(int producer, int sequence, int id) {}

  /** Records what the sink saw of each item and checks per-producer order; consumer thread only. */
  static final class CheckingSink implements BatchSink<Item, Integer> {
    final AtomicIntegerArray seen;
    final byte[] outcome;
    final int[] lastSequence = new int[PRODUCERS];
    final AtomicLong orderViolations = new AtomicLong();
    final AtomicLong batches = new AtomicLong();
    private final SplittableRandom random = new SplittableRandom(42);

    CheckingSink(int items) {
      seen = new AtomicIntegerArray(items);
      outcome = new byte[items];
      java.util.Arrays.fill(lastSequence, -1);
    }

    @Override
    public void write(Batch<Item, Integer> batch) {
      batches.incrementAndGet();
      for (Item item : batch.items()) {
        seen.incrementAndGet(item.id());
        if (item.sequence() <= lastSequence[item.producer()]) {
          orderViolations.incrementAndGet();
        }
        lastSequence[item.producer()] = item.sequence();
      }
      if (random.nextInt(100) < 5) {
        for (Item item : batch.items()) {
          outcome[item.id()] = SINK_FAILED;
        }
        throw new IllegalStateException("random batch failure");
      }
      for (int i = 0; i < batch.size(); i++) {
        Item item = batch.item(i);
        if (random.nextInt(100) < 2) {
          outcome[item.id()] = SINK_FAILED;
          batch.fail(i, new IllegalArgumentException("random item failure"));
        } else {
          outcome[item.id()] = SINK_OK;
          batch.complete(i, item.id());
        }
      }
    }
  }

  @Test
  void manyProducers_randomFailures_everyItemAccountedForExactlyOnce() throws Exception {
    CheckingSink sink = new CheckingSink(ITEMS);
    Batcher<Item, Integer> batcher = Batcher.of("stress", BatcherConfig.builder()
        .ringSize(1024).maxBatchSize(256).submitTimeout(Duration.ofMillis(1)).build(), sink);
    @SuppressWarnings("unchecked")
    CompletableFuture<Integer>[] futures = (CompletableFuture<Integer>[]) new CompletableFuture<?>[ITEMS];
    boolean[] offered = new boolean[ITEMS];
    boolean[] offerAccepted = new boolean[ITEMS];
    int perProducer = ITEMS / PRODUCERS;
    CyclicBarrier start = new CyclicBarrier(PRODUCERS);
    List<Thread> producers = new ArrayList<>();
    for (int p = 0; p < PRODUCERS; p++) {
      int producer = p;
      producers.add(new Thread(() -> {
        await(start);
        for (int s = 0; s < perProducer; s++) {
          int id = producer * perProducer + s;
          Item item = new Item(producer, s, id);
          if (s % 4 == 3) {
            offered[id] = true;
            offerAccepted[id] = batcher.offer(item);
          } else {
            futures[id] = batcher.submit(item);
          }
        }
      }, "producer-" + p));
    }
    producers.forEach(Thread::start);
    for (Thread producer : producers) {
      producer.join(TimeUnit.MINUTES.toMillis(5));
      assertThat(producer.isAlive()).as("producer finished").isFalse();
    }
    CloseReport report = batcher.close(Duration.ofSeconds(30));

    assertThat(report.drained()).isTrue();
    int total = perProducer * PRODUCERS;
    long rejected = 0;
    long succeeded = 0;
    for (int id = 0; id < total; id++) {
      int seen = sink.seen.get(id);
      assertThat(seen).as("times the sink saw item %s", id).isLessThanOrEqualTo(1);
      if (offered[id]) {
        assertThat(seen).as("offer %s accepted %s", id, offerAccepted[id]).isEqualTo(offerAccepted[id] ? 1 : 0);
        rejected += offerAccepted[id] ? 0 : 1;
        continue;
      }
      CompletableFuture<Integer> future = futures[id];
      assertThat(future).as("future %s", id).isDone();
      if (!future.isCompletedExceptionally()) {
        succeeded++;
        assertThat(future.join()).isEqualTo(id);
        assertThat(sink.outcome[id]).isEqualTo(SINK_OK);
      } else if (rejectionOf(future)) {
        rejected++;
        assertThat(seen).as("rejected item %s reached the sink", id).isZero();
      } else {
        assertThat(sink.outcome[id]).as("item %s failed without the sink failing it", id).isEqualTo(SINK_FAILED);
      }
    }
    BatcherStats stats = report.stats();
    assertThat(sink.orderViolations).hasValue(0);
    assertThat(stats.submitted()).isEqualTo(total);
    assertThat(stats.written() + stats.failed() + stats.rejected()).isEqualTo(stats.submitted());
    assertThat(stats.rejected()).isEqualTo(rejected);
    assertThat(stats.abandoned()).isZero();
    assertThat(stats.batches()).isEqualTo(sink.batches.get());
    assertThat(stats.written()).isGreaterThanOrEqualTo(succeeded);
    System.out.printf("stress: %d items, %s%n", total, stats);
  }

  @RepeatedTest(10)
  void closeRacingSubmitters_everyAcceptedItemWrittenOnceAndEveryFutureCompleted() throws Exception {
    int maxPerProducer = Math.max(1_000, ITEMS / PRODUCERS / 4);
    int capacity = maxPerProducer * PRODUCERS;
    CheckingSink sink = new CheckingSink(capacity);
    Batcher<Item, Integer> batcher = Batcher.of("race", BatcherConfig.builder()
        .ringSize(256).maxBatchSize(64).submitTimeout(BatcherConfig.NO_TIMEOUT).build(), sink);
    @SuppressWarnings("unchecked")
    CompletableFuture<Integer>[] futures = (CompletableFuture<Integer>[]) new CompletableFuture<?>[capacity];
    AtomicInteger attempts = new AtomicInteger();
    CountDownLatch running = new CountDownLatch(PRODUCERS);
    List<Thread> producers = new ArrayList<>();
    for (int p = 0; p < PRODUCERS; p++) {
      int producer = p;
      producers.add(new Thread(() -> {
        running.countDown();
        for (int s = 0; s < maxPerProducer; s++) {
          int id = producer * maxPerProducer + s;
          attempts.incrementAndGet();
          futures[id] = batcher.submit(new Item(producer, s, id));
          if (futures[id].isCompletedExceptionally() && rejectionOf(futures[id])) {
            return; // closed: stop, as a real caller would
          }
        }
      }, "racer-" + p));
    }
    producers.forEach(Thread::start);
    assertThat(running.await(10, TimeUnit.SECONDS)).isTrue();

    CloseReport report = batcher.close(Duration.ofSeconds(30));
    for (Thread producer : producers) {
      producer.join(TimeUnit.MINUTES.toMillis(1));
      assertThat(producer.isAlive()).isFalse();
    }

    assertThat(report.drained()).isTrue();
    long accepted = 0;
    for (int id = 0; id < capacity; id++) {
      CompletableFuture<Integer> future = futures[id];
      int seen = sink.seen.get(id);
      assertThat(seen).isLessThanOrEqualTo(1);
      if (future == null) {
        assertThat(seen).isZero();
        continue;
      }
      assertThat(future).as("future %s completed", id).isDone();
      if (future.isCompletedExceptionally() && rejectionOf(future)) {
        assertThat(seen).as("refused item %s reached the sink", id).isZero();
      } else {
        accepted++;
        assertThat(seen).as("accepted item %s reached the sink", id).isEqualTo(1);
      }
    }
    // The report's snapshot is taken while late producers may still be refused; once they stopped, it is exact.
    BatcherStats stats = batcher.stats();
    assertThat(sink.orderViolations).hasValue(0);
    assertThat(stats.submitted()).isEqualTo(attempts.get());
    assertThat(stats.accepted()).isEqualTo(accepted);
    assertThat(stats.written() + stats.failed()).isEqualTo(accepted);
  }

  /**
   * The soak: 8 producers submit until the batcher closes at a random moment, the sink failing about 10% of
   * the items (whole batches and single ones). The short run is part of every build;
   * {@code -Dringbatch.soak.items=20000000} runs the full one (the close comes after 50-95% of the items, so
   * at least 10 million are submitted). Futures are not kept: each one's completion is
   * counted instead, so the full run fits in a small heap.
   */
  @Test
  @Tag("soak")
  void soak_randomFailuresAndCloseAtARandomMoment_everythingAccountedFor() throws Exception {
    int items = Integer.getInteger("ringbatch.soak.items", 400_000);
    int perProducer = items / PRODUCERS;
    AtomicIntegerArray completions = new AtomicIntegerArray(items);
    AtomicIntegerArray seen = new AtomicIntegerArray(items);
    SplittableRandom chance = new SplittableRandom(7);
    Batcher<Item, Integer> batcher = Batcher.of("soak", BatcherConfig.builder().ringSize(4096).maxBatchSize(512)
        .submitTimeout(Duration.ofSeconds(30)).build(), (Batch<Item, Integer> batch) -> {
          for (Item item : batch.items()) {
            seen.incrementAndGet(item.id());
          }
          if (chance.nextInt(100) < 5) {
            throw new IllegalStateException("random batch failure");
          }
          for (int i = 0; i < batch.size(); i++) {
            if (chance.nextInt(100) < 5) {
              batch.fail(i, new IllegalArgumentException("random item failure"));
            }
          }
        });
    AtomicLong attempts = new AtomicLong();
    List<Thread> producers = new ArrayList<>();
    for (int p = 0; p < PRODUCERS; p++) {
      int producer = p;
      Thread t = new Thread(() -> {
        for (int s = 0; s < perProducer; s++) {
          int id = producer * perProducer + s;
          attempts.incrementAndGet();
          CompletableFuture<Integer> f = batcher.submit(new Item(producer, s, id));
          f.whenComplete((r, e) -> completions.incrementAndGet(id));
          if (f.isCompletedExceptionally() && f.handle((r, e) -> e).join() instanceof BatcherClosedException) {
            return;
          }
        }
      }, "soak-" + p);
      producers.add(t);
      t.start();
    }
    long closeAt = (long) (items * (0.5 + 0.45 * new SplittableRandom().nextDouble()));
    org.awaitility.Awaitility.await().atMost(Duration.ofMinutes(10)).pollInterval(Duration.ofMillis(5))
        .until(() -> batcher.stats().written() + batcher.stats().failed() >= closeAt
            || producers.stream().noneMatch(Thread::isAlive));
    CloseReport report = batcher.close(Duration.ofSeconds(30));
    for (Thread t : producers) {
      t.join(TimeUnit.MINUTES.toMillis(1));
      assertThat(t.isAlive()).isFalse();
    }

    BatcherStats stats = batcher.stats();
    long submitted = attempts.get();
    long duplicates = 0;
    long pending = 0;
    for (int id = 0; id < items; id++) {
      duplicates += Math.max(0, seen.get(id) - 1);
      int producer = id / perProducer;
      int sequence = id % perProducer;
      boolean attempted = producer < PRODUCERS && sequence < perProducer;
      if (attempted && completions.get(id) != 1 && seen.get(id) + completions.get(id) > 0) {
        pending++;
      }
      assertThat(completions.get(id)).as("completions of future %s", id).isLessThanOrEqualTo(1);
    }
    assertThat(report.drained()).isTrue();
    assertThat(duplicates).isZero();
    assertThat(pending).isZero();
    assertThat(stats.submitted()).isEqualTo(submitted);
    assertThat(stats.written() + stats.failed() + stats.rejected() + stats.abandoned()).isEqualTo(submitted);
    long completed = 0;
    for (int id = 0; id < items; id++) {
      completed += completions.get(id);
    }
    assertThat(completed).as("every submitted future completed exactly once").isEqualTo(submitted);
    System.out.printf("soak: %d submitted (close after ~%d): %d written, %d failed, %d rejected, %d abandoned,"
        + " 0 duplicates, every future completed once%n", submitted, closeAt, stats.written(), stats.failed(),
        stats.rejected(), stats.abandoned());
  }

  private static boolean rejectionOf(CompletableFuture<?> future) {
    try {
      future.join();
      return false;
    } catch (CompletionException e) {
      return e.getCause() instanceof BatcherFullException || e.getCause() instanceof BatcherClosedException;
    }
  }

  private static void await(CyclicBarrier barrier) {
    try {
      barrier.await(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException("producers did not start together", e);
    }
  }
}
