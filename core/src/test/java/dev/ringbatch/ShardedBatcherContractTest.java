package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringbatch.testing.Holds;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A sharded batcher keeps the promises of the batcher interface as an unsharded one does: what its flush fails with,
 * whose name a refusal carries, and limits set from two threads at once.
 */
@Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class ShardedBatcherContractTest {
  @RegisterExtension
  final Holds holds = new Holds();

  private static Throwable failureOf(CompletableFuture<?> future) throws Exception {
    return future.handle((v, e) -> e).get(10, TimeUnit.SECONDS);
  }

  @Test
  void flushAfterAnAbandoningClose_failsWithBatcherClosedException_asAnUnshardedBatchersDoes() throws Exception {
    Holds.Gate gate = holds.gate();
    CountDownLatch inSink = new CountDownLatch(2);
    Batcher<Integer, Integer> sharded = holds.track(Batcher.sharded("flushed", BatcherConfig.ofDefaults(), 2,
        shard -> batch -> {
          inSink.countDown();
          gate.await();
          batch.completeRemaining(1);
        }));
    sharded.submit(1);
    sharded.submit(2); // round robin: one in each shard's sink
    assertThat(inSink.await(10, TimeUnit.SECONDS)).isTrue();
    sharded.close(Duration.ofMillis(50));
    assertThat(failureOf(sharded.flush())).isInstanceOf(BatcherClosedException.class);
  }

  @Test
  void refusals_nameTheShardedBatcher_notItsShard() throws Exception {
    Holds.Gate gate = holds.gate();
    CountDownLatch inSink = new CountDownLatch(1);
    Batcher<Integer, Integer> sharded = holds.track(Batcher.sharded("orders", BatcherConfig.builder().ringSize(2)
        .overflowPolicy(OverflowPolicy.DROP).build(), 2, i -> 0, shard -> batch -> {
          inSink.countDown();
          gate.await();
          batch.completeRemaining(1);
        }));
    sharded.submit(1);
    assertThat(inSink.await(10, TimeUnit.SECONDS)).isTrue();
    sharded.submit(2);
    sharded.submit(3); // shard 0's ring of 2 is full now
    Throwable full = failureOf(sharded.submit(4));
    assertThat(full).isInstanceOf(BatcherFullException.class).hasMessageContaining("'orders'");
    gate.open();
    sharded.close(Duration.ofSeconds(10));
    Throwable closed = failureOf(sharded.submit(5));
    assertThat(closed).isInstanceOf(BatcherClosedException.class).hasMessageContaining("'orders'");
    assertThat(List.of(((BatcherFullException) full).batcherName(), ((BatcherClosedException) closed).batcherName()))
        .containsOnly("orders");
  }

  @Test
  void setLimitsFromTwoThreadsAtOnce_leavesEveryShardWithOneCallersLimits() throws Exception {
    Batcher<Integer, Integer> sharded = holds.track(Batcher.sharded("limits", BatcherConfig.builder().ringSize(64)
        .limits(BatchLimits.of(4, BatchLimits.NO_BYTE_LIMIT, Duration.ZERO)).build(), 8,
        shard -> batch -> batch.completeRemaining(1)));
    BatchLimits one = BatchLimits.of(8, BatchLimits.NO_BYTE_LIMIT, Duration.ZERO);
    BatchLimits other = BatchLimits.of(16, BatchLimits.NO_BYTE_LIMIT, Duration.ofMillis(1));
    for (int round = 0; round < 2000; round++) {
      AtomicInteger ready = new AtomicInteger();
      Thread a = new Thread(() -> setAfter(ready, sharded, one));
      Thread b = new Thread(() -> setAfter(ready, sharded, other));
      a.start();
      b.start();
      a.join();
      b.join();
      List<BatchLimits> each = sharded.shardStats().stream().map(BatcherStats::limits).toList();
      assertThat(each).as("round %s", round).containsOnly(each.get(0));
    }
  }

  /** Sets {@code limits} once both threads are ready: spinning, so that the two calls overlap as closely as they can. */
  private static void setAfter(AtomicInteger ready, Batcher<?, ?> batcher, BatchLimits limits) {
    ready.incrementAndGet();
    while (ready.get() < 2) {
      Thread.onSpinWait();
    }
    batcher.setLimits(limits);
  }

  /**
   * A key is compared by equals and hashCode: an array (equal by identity only) would spread one key's items over
   * every shard, out of order, so it is refused, naming the batcher, and nothing is accepted.
   */
  @Test
  void arrayKey_isRefusedWhenSubmitted_namingTheBatcher() {
    try (Batcher<byte[], Void> batcher = Batcher.sharded("array-key", BatcherConfig.ofDefaults(), 4,
        bytes -> bytes.clone(), shard -> BatchSink.noResult(items -> { }))) {
      assertThatThrownBy(() -> batcher.submit(new byte[] {1, 2}))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'array-key'")
          .hasMessageContaining("array (byte[])");
      assertThatThrownBy(() -> batcher.offer(new byte[] {1, 2})).isInstanceOf(IllegalArgumentException.class);
      assertThat(batcher.stats().accepted()).isZero();
    }
  }
}
