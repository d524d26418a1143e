package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class ShardedBatcherTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  /** An item of a producer, with its place in that producer's order and a routing key. */
  record Item(int producer, int sequence, int key) {}

  @Test
  void byKey_concurrentProducers_everyItemOnceAndPerKeyOrderKept() throws Exception {
    int shards = 4;
    int producers = 8;
    int perProducer = 5_000;
    List<List<Item>> written = new ArrayList<>();
    for (int i = 0; i < shards; i++) {
      written.add(new CopyOnWriteArrayList<>());
    }
    Map<Integer, Integer> shardOfKey = new ConcurrentHashMap<>();
    Batcher<Item, Void> batcher = Batcher.sharded("orders", BatcherConfig.builder().ringSize(256).build(), shards,
        Item::key, shard -> BatchSink.noResult(items -> {
          written.get(shard).addAll(items);
          for (Item item : items) {
            assertThat(shardOfKey.computeIfAbsent(item.key(), k -> shard)).isEqualTo(shard);
          }
        }));
    CyclicBarrier start = new CyclicBarrier(producers);
    List<Thread> threads = new ArrayList<>();
    for (int p = 0; p < producers; p++) {
      int producer = p;
      Thread t = new Thread(() -> {
        try {
          start.await(10, TimeUnit.SECONDS);
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
        for (int s = 0; s < perProducer; s++) {
          batcher.submit(new Item(producer, s, s % 16));
        }
      });
      threads.add(t);
      t.start();
    }
    for (Thread t : threads) {
      t.join(WAIT.toMillis() * 3);
    }
    CloseReport report = batcher.close(WAIT);

    assertThat(report.drained()).isTrue();
    assertThat(report.written()).isEqualTo((long) producers * perProducer);
    List<Item> all = new ArrayList<>();
    written.forEach(all::addAll);
    assertThat(all).hasSize(producers * perProducer).doesNotHaveDuplicates();
    for (List<Item> shard : written) {
      Map<String, Integer> last = new ConcurrentHashMap<>();
      for (Item item : shard) {
        String stream = item.producer() + "/" + item.key();
        Integer previous = last.put(stream, item.sequence());
        assertThat(previous == null || previous < item.sequence())
            .as("order of producer %s, key %s", item.producer(), item.key()).isTrue();
      }
    }
    assertThat(written).allSatisfy(shard -> assertThat(shard).isNotEmpty());
    assertThat(batcher.shardStats()).hasSize(shards);
    assertThat(batcher.shardStats().stream().mapToLong(BatcherStats::written).sum())
        .isEqualTo(batcher.stats().written());
    assertThat(batcher.stats().ringSize()).isEqualTo(shards * 256);
  }

  @Test
  void roundRobin_spreadsEvenly() {
    List<List<Integer>> written = List.of(new CopyOnWriteArrayList<>(), new CopyOnWriteArrayList<>(),
        new CopyOnWriteArrayList<>());
    Batcher<Integer, Void> batcher = Batcher.sharded("spread", BatcherConfig.ofDefaults(), 3,
        shard -> BatchSink.noResult(items -> written.get(shard).addAll(items)));
    for (int i = 0; i < 300; i++) {
      batcher.offer(i);
    }

    assertThat(batcher.flush()).succeedsWithin(WAIT);
    assertThat(written).allSatisfy(shard -> assertThat(shard).hasSize(100));
    assertThat(batcher.close(WAIT).written()).isEqualTo(300);
  }

  @Test
  void flush_waitsForEveryShard_andCloseRejectsLaterItems() {
    Batcher<Integer, Void> batcher = Batcher.sharded("orders",
        BatcherConfig.builder().linger(Duration.ofMinutes(10)).build(), 2, i -> i,
        shard -> BatchSink.noResult(items -> { }));
    CompletableFuture<Void> a = batcher.submit(1);
    CompletableFuture<Void> b = batcher.submit(2);

    assertThat(batcher.flush()).succeedsWithin(WAIT);
    assertThat(a).isDone();
    assertThat(b).isDone();
    batcher.close(WAIT);
    assertThat(batcher.isClosed()).isTrue();
    assertThat(batcher.submit(3)).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
        .withCauseInstanceOf(BatcherClosedException.class);
  }

  @Test
  void sinkSubmitsIntoAnotherFullShard_refusedAtOnceNotBlocked() throws Exception {
    AtomicReference<Batcher<Integer, Void>> self = new AtomicReference<>();
    CompletableFuture<CompletableFuture<Void>> fromSink = new CompletableFuture<>();
    java.util.concurrent.CountDownLatch hold = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch busy = new java.util.concurrent.CountDownLatch(1);
    Batcher<Integer, Void> batcher = Batcher.sharded("pair", BatcherConfig.builder().ringSize(2).maxBatchSize(2)
            .submitTimeout(BatcherConfig.NO_TIMEOUT).build(), 2, i -> i % 2,
        shard -> BatchSink.noResult(items -> {
          if (items.get(0) == 0) { // shard 0: submit into shard 1, whose consumer is held
            fromSink.complete(self.get().submit(1));
          } else if (items.get(0) == 101) {
            busy.countDown();
            hold.await(10, TimeUnit.SECONDS);
          }
        }));
    self.set(batcher);
    batcher.submit(101);
    assertThat(busy.await(10, TimeUnit.SECONDS)).isTrue(); // shard 1 is inside its sink with 101 alone
    batcher.offer(3);
    batcher.offer(5); // shard 1's ring (2 slots) full
    batcher.submit(0); // shard 0's sink submits into the full shard 1

    CompletableFuture<Void> refused = fromSink.get(10, TimeUnit.SECONDS);
    assertThat(refused).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
        .withCauseInstanceOf(BatcherFullException.class);
    hold.countDown();
    assertThat(batcher.close(WAIT).drained()).isTrue();
  }

  @Test
  void sharded_validation() {
    assertThatThrownBy(() -> Batcher.sharded("x", BatcherConfig.ofDefaults(), 0, s -> BatchSink.noResult(i -> { })))
        .isExactlyInstanceOf(IllegalArgumentException.class)
        .hasMessage("shards must be positive but was 0");
    assertThatThrownBy(() -> Batcher.sharded("x", BatcherConfig.ofDefaults(), 2, s -> s == 1 ? null
        : BatchSink.<Integer>noResult(i -> { })))
        .isExactlyInstanceOf(NullPointerException.class)
        .hasMessage("sinks returned null for shard 1");
    Batcher<Integer, Void> batcher = Batcher.sharded("keys", BatcherConfig.ofDefaults(), 2, i -> null,
        s -> BatchSink.noResult(i -> { }));
    try {
      assertThatThrownBy(() -> batcher.submit(7))
          .isExactlyInstanceOf(NullPointerException.class)
          .hasMessage("the key function of batcher 'keys' returned null for 7");
    } finally {
      batcher.close(WAIT);
    }
  }

  @Test
  void sinkClosesItsShardedBatcher_rejected() {
    AtomicReference<Batcher<Integer, Void>> self = new AtomicReference<>();
    Batcher<Integer, Void> batcher = Batcher.sharded("loop", BatcherConfig.ofDefaults(), 2,
        shard -> (Batch<Integer, Void> batch) -> self.get().close());
    self.set(batcher);

    assertThat(batcher.submit(1)).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
        .havingCause().isExactlyInstanceOf(IllegalStateException.class)
        .withMessage("close() must not be called on a consumer thread of batcher 'loop' (for example from its"
            + " sink): it would wait for itself");
    assertThat(batcher.close(WAIT).drained()).isTrue();
  }
}
