package dev.ringbatch;

import org.jspecify.annotations.Nullable;

/**
 * A snapshot of a batcher's counters, from {@link Batcher#stats()}. Counters are read one by one while the
 * batcher runs, so a snapshot taken under load may be off by the items in motion; once the batcher is
 * closed they are exact and {@code submitted == written + failed + abandoned + rejected}. The one exception: a
 * producer stopped between claiming a slot and publishing it when a timed-out close gave up on that slot counts
 * as accepted and {@link #inFlight() in flight} until it publishes (its item is then abandoned, or refused).
 */
public final class BatcherStats {

  private final long accepted;
  private final long rejectedFull;
  private final long rejectedTimeout;
  private final long rejectedInterrupted;
  private final long rejectedClosed;
  private final long written;
  private final long failed;
  private final long abandoned;
  private final long batches;
  private final long batchedItems;
  private final int lastBatchSize;
  private final int largestBatchSize;
  private final int ringSize;
  private final long remainingCapacity;
  private final @Nullable BatchLimits limits;

  /** Creates a snapshot without the limits in force ({@link #limits()} is then null). */
  public BatcherStats(long accepted, long rejectedFull, long rejectedTimeout, long rejectedInterrupted,
      long rejectedClosed, long written, long failed, long abandoned, long batches, long batchedItems,
      int lastBatchSize, int largestBatchSize, int ringSize, long remainingCapacity) {
    this(accepted, rejectedFull, rejectedTimeout, rejectedInterrupted, rejectedClosed, written, failed, abandoned,
        batches, batchedItems, lastBatchSize, largestBatchSize, ringSize, remainingCapacity, null);
  }

  /** Creates a snapshot; called by the batcher. */
  public BatcherStats(long accepted, long rejectedFull, long rejectedTimeout, long rejectedInterrupted,
      long rejectedClosed, long written, long failed, long abandoned, long batches, long batchedItems,
      int lastBatchSize, int largestBatchSize, int ringSize, long remainingCapacity, @Nullable BatchLimits limits) {
    this.limits = limits;
    this.accepted = accepted;
    this.rejectedFull = rejectedFull;
    this.rejectedTimeout = rejectedTimeout;
    this.rejectedInterrupted = rejectedInterrupted;
    this.rejectedClosed = rejectedClosed;
    this.written = written;
    this.failed = failed;
    this.abandoned = abandoned;
    this.batches = batches;
    this.batchedItems = batchedItems;
    this.lastBatchSize = lastBatchSize;
    this.largestBatchSize = largestBatchSize;
    this.ringSize = ringSize;
    this.remainingCapacity = remainingCapacity;
  }

  /** Items offered to the batcher: accepted plus rejected. */
  public long submitted() {
    return accepted + rejected();
  }

  /** Items that entered the ring. Each ends up written, failed or abandoned. */
  public long accepted() {
    return accepted;
  }

  /** Items refused, for any reason. */
  public long rejected() {
    return rejectedFull + rejectedTimeout + rejectedInterrupted + rejectedClosed;
  }

  /** Items refused for {@code reason}. */
  public long rejected(RejectionReason reason) {
    return switch (reason) {
      case FULL -> rejectedFull;
      case TIMEOUT -> rejectedTimeout;
      case INTERRUPTED -> rejectedInterrupted;
      case CLOSED -> rejectedClosed;
    };
  }

  /** Items the sink wrote successfully. */
  public long written() {
    return written;
  }

  /** Items the sink failed, singly or with their whole batch. */
  public long failed() {
    return failed;
  }

  /** Accepted items failed by a {@code close} that timed out before they were written. */
  public long abandoned() {
    return abandoned;
  }

  /** Items accepted and not yet written, failed or abandoned. */
  public long inFlight() {
    return Math.max(0, accepted - written - failed - abandoned);
  }

  /**
   * Batches handed to the sink, each counted once however often it is retried, and counted even if a close then
   * takes it from the sink (its items are then failed or abandoned).
   */
  public long batches() {
    return batches;
  }

  /** The items of the {@link #batches() batches handed to the sink}, each counted once. */
  public long batchedItems() {
    return batchedItems;
  }

  /** The size of the most recent batch, 0 before the first. */
  public int lastBatchSize() {
    return lastBatchSize;
  }

  /** The size of the largest batch so far. */
  public int largestBatchSize() {
    return largestBatchSize;
  }

  /** The mean size of the batches handed to the sink, 0 before the first. */
  public double meanBatchSize() {
    return batches == 0 ? 0 : (double) batchedItems / batches;
  }

  /** The ring's number of slots. */
  public int ringSize() {
    return ringSize;
  }

  /** The ring's free slots at the time of the snapshot. */
  public long remainingCapacity() {
    return remainingCapacity;
  }

  /**
   * The batch limits in force when the snapshot was taken (an adaptive batcher's current choice: see
   * {@link Adaptive}), or null if the batcher that made it did not say.
   */
  public @Nullable BatchLimits limits() {
    return limits;
  }

  @Override
  public String toString() {
    return "BatcherStats{submitted=" + submitted()
        + ", accepted=" + accepted
        + ", rejected=" + rejected()
        + ", written=" + written
        + ", failed=" + failed
        + ", abandoned=" + abandoned
        + ", inFlight=" + inFlight()
        + ", batches=" + batches
        + ", meanBatchSize=" + String.format(java.util.Locale.ROOT, "%.1f", meanBatchSize())
        + ", largestBatchSize=" + largestBatchSize
        + ", remainingCapacity=" + remainingCapacity + '/' + ringSize
        + (limits == null ? "" : ", limits=" + limits)
        + '}';
  }
}
