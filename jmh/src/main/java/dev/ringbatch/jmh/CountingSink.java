package dev.ringbatch.jmh;

import dev.ringbatch.Batch;
import dev.ringbatch.BatchSink;

/** A no-op sink that only counts what it sees, so that the JIT cannot drop the consumer's work. */
final class CountingSink<T> implements BatchSink<T, Void> {
  private volatile long items;

  @Override
  public void write(Batch<T, Void> batch) {
    items += batch.size(); // written by the consumer thread only
    batch.completeRemaining(null);
  }

  long items() {
    return items;
  }
}
