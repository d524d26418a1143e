package dev.ringbatch.internal.consume;

/**
 * What the consumer has done, read by any thread for {@code stats()}. Written once per batch, never per item.
 * A batch is counted once, when the sink gets its first view ({@link PendingBatch#open}, consumer thread): a
 * batch a close later takes from the sink was handed to it all the same. Its items' outcomes are counted when it
 * settles: by the consumer thread, or with an async sink by whichever thread completes it, hence the lock (one
 * uncontended acquisition per batch on the synchronous path).
 */
public final class ConsumerCounters {
  volatile long written;
  volatile long failed;
  volatile long batches;
  volatile long batchedItems;
  volatile int lastBatchSize;
  volatile int largestBatchSize;
  volatile long abandoned;

  /**
   * A batch of {@code size} items goes to the sink for the first time. Consumer thread, under the batch's lock: this
   * lock is taken inside it, where {@code settle} takes the batch's inside this one; never for the same batch at once
   * (a batch is opened while filling ends, settled after its write).
   */
  synchronized void recordHandOver(int size) {
    batches++;
    batchedItems += size;
    lastBatchSize = size;
    if (size > largestBatchSize) {
      largestBatchSize = size;
    }
  }

  /** A batch settled: {@code failedItems} of its {@code size} items failed, the others were written. */
  synchronized void recordBatch(int size, int failedItems) {
    written += size - failedItems;
    failed += failedItems;
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

  public long batchedItems() {
    return batchedItems;
  }

  public int lastBatchSize() {
    return lastBatchSize;
  }

  public int largestBatchSize() {
    return largestBatchSize;
  }
}
