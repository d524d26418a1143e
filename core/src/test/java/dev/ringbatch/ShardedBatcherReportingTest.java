package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.testing.Holds;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What a sharded batcher reports and logs: the largest limits in force among its shards, and its lost
 * fire-and-forget failures once per batcher, not once per shard.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ShardedBatcherReportingTest {
  @RegisterExtension
  final Holds holds = new Holds();

  /** A sharded batcher's limits are its shards', not shard 0's alone. */
  @Test
  void shardedBatcher_reportsTheLargestLimitsInForceAmongItsShards() {
    Batcher<Integer, Integer> batcher = holds.track(Batcher.sharded("sharded-limits", BatcherConfig.builder()
        .ringSize(64).maxBatchSize(8).build(), 3, i -> i, shard -> batch -> batch.completeRemaining(1)));
    List<BatcherStats> shards = batcher.shardStats();
    assertThat(shards).hasSize(3);
    // Each shard's own limits, as an adaptive controller would set them: pinned per shard here.
    dev.ringbatch.internal.ShardedBatcherAccess.setShardLimits(batcher, 2,
        BatchLimits.of(32, Long.MAX_VALUE, Duration.ofMillis(3)));
    assertThat(batcher.limits().maxBatchSize()).isEqualTo(32);
    assertThat(batcher.limits().linger()).isEqualTo(Duration.ofMillis(3));
    assertThat(batcher.stats().limits()).isEqualTo(batcher.limits());
  }
  /** A sharded batcher logs its lost fire-and-forget failures once per batcher, not once per shard. */
  @Test
  void shardedBatcher_logsFailedFireAndForgetItemsOncePerBatcher() throws Exception {
    Logger ringbatch = Logger.getLogger("dev.ringbatch");
    List<LogRecord> lines = new CopyOnWriteArrayList<>();
    Handler capture = new Handler() {
      @Override
      public void publish(LogRecord record) {
        if (record.getLevel().intValue() >= Level.WARNING.intValue()
            && String.valueOf(record.getMessage()).contains("fire-and-forget")) {
          lines.add(record);
        }
      }

      @Override
      public void flush() {}

      @Override
      public void close() {}
    };
    ringbatch.addHandler(capture);
    try {
      Batcher<Integer, Integer> batcher = holds.track(Batcher.sharded("sharded-log", BatcherConfig.ofDefaults(), 4,
          i -> i, shard -> batch -> {
            throw new IllegalStateException("down");
          }));
      for (int i = 0; i < 4; i++) {
        assertThat(batcher.offer(i)).isTrue();
      }
      assertThat(batcher.flush()).succeedsWithin(Duration.ofSeconds(10));
      assertThat(batcher.stats().failed()).isEqualTo(4);
      assertThat(lines).as("lines logged").hasSize(1);
      assertThat(lines.get(0).getMessage()).contains("'sharded-log'");
    } finally {
      ringbatch.removeHandler(capture);
    }
  }
}
