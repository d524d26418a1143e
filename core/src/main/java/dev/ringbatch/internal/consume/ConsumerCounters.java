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
   * A batch of {@code size} items goes to the sink for the first time. Consumer thread only, under the batch's lock
   * (which a close takes to gather it), and without this one: a lone caller's round trip pays no second lock. The
   * largest size first, then the count, then the items: {@link #readBatchCounts} reads them the other way round, so
   * a snapshot's mean never exceeds its largest batch (it may trail by one batch).
   */
  void recordHandOver(int size) {
    if (size > largestBatchSize) {
      largestBatchSize = size;
    }
    lastBatchSize = size;
    batches++;
    batchedItems += size;
  }

  /** The batch counts of a snapshot. */
  public record BatchCounts(long items, long batches, int largest, int last) {}

  /** Items, then batches, then the largest: see {@link #recordHandOver}. Any thread. */
  public BatchCounts readBatchCounts() {
    long items = batchedItems;
    long count = batches;
    return new BatchCounts(items, count, largestBatchSize, lastBatchSize);
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
}
