package dev.ringbatch.internal.consume;

/**
 * What the consumer has done, read by any thread for {@code stats()}. Written once per batch, never per item:
 * by the consumer thread, or with an async sink by whichever thread completes a batch, hence the lock (one
 * uncontended acquisition per batch on the synchronous path).
 */
public final class ConsumerCounters {
  volatile long written;
  volatile long failed;
  volatile long batches;
  volatile int lastBatchSize;
  volatile int largestBatchSize;
  volatile long abandoned;

  synchronized void recordBatch(int size, int failedItems) {
    written += size - failedItems;
    failed += failedItems;
    batches++;
    lastBatchSize = size;
    if (size > largestBatchSize) {
      largestBatchSize = size;
    }
  }

  /** Items a close (or a consumer that had to fail its own holdings) abandoned. */
  synchronized void recordAbandoned(long items) {
    abandoned += items;
  }

  /**
   * What a close took: items abandoned, and items of a batch waiting to retry that keep the failure their sink
   * recorded (failed, not abandoned).
   */
  synchronized void recordTakenByClose(long abandonedItems, long failedItems) {
    abandoned += abandonedItems;
    failed += failedItems;
  }

  public long abandoned() {
    return abandoned;
  }

  public long written() {
    return written;
  }

  public long failed() {
    return failed;
  }

  public long batches() {
    return batches;
  }

  public int lastBatchSize() {
    return lastBatchSize;
  }

  public int largestBatchSize() {
    return largestBatchSize;
  }
}
