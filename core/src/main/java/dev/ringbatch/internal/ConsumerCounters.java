package dev.ringbatch.internal;

/**
 * What the consumer has done, read by any thread for {@code stats()}. Written once per batch, never per item:
 * by the consumer thread, or with an async sink by whichever thread completes a batch, hence the lock (one
 * uncontended acquisition per batch on the synchronous path).
 */
final class ConsumerCounters {
  private volatile long written;
  private volatile long failed;
  private volatile long batches;
  private volatile int lastBatchSize;
  private volatile int largestBatchSize;
  private volatile long abandoned;

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

  long abandoned() {
    return abandoned;
  }

  long written() {
    return written;
  }

  long failed() {
    return failed;
  }

  long batches() {
    return batches;
  }

  int lastBatchSize() {
    return lastBatchSize;
  }

  int largestBatchSize() {
    return largestBatchSize;
  }
}
