package dev.ringbatch.internal;

/**
 * What the consumer has done, written by the consumer thread only (hence plain read-modify-write of
 * volatile fields is safe) and read by any thread for {@code stats()}. Written once per batch, never per
 * item.
 */
final class ConsumerCounters {
  private volatile long written;
  private volatile long failed;
  private volatile long batches;
  private volatile int lastBatchSize;
  private volatile int largestBatchSize;

  void recordBatch(int size, int failedItems) {
    written += size - failedItems;
    failed += failedItems;
    batches++;
    lastBatchSize = size;
    if (size > largestBatchSize) {
      largestBatchSize = size;
    }
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
