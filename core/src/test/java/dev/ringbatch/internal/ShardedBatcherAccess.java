package dev.ringbatch.internal;

import dev.ringbatch.BatchLimits;
import dev.ringbatch.Batcher;

/** Reaches one shard of a sharded batcher, for tests of what the sharded batcher reports of its shards. */
public final class ShardedBatcherAccess {
  private ShardedBatcherAccess() {}

  /** Sets the limits of shard {@code index} alone, as its own adaptive controller would. */
  public static void setShardLimits(Batcher<?, ?> sharded, int index, BatchLimits limits) {
    ((ShardedBatcher<?, ?>) sharded).shard(index).setLimits(limits);
  }
}
