package dev.ringbatch.spring.boot;

import dev.ringbatch.stats.StatsRecorder;
import java.time.Instant;
import org.jspecify.annotations.Nullable;

/**
 * The latest batches of one batcher, for its health: the share of failed items among them, and the last
 * failure seen. Fed on the consumer thread (once per batch, not per item), read by health checks; a monitor
 * is cheap at that rate.
 */
final class FailureWindow implements StatsRecorder {
  private final int[] sizes;
  private final int[] failures;
  private int next;
  private int filled;
  private @Nullable Instant lastFailureAt;
  private int lastFailedItems;
  private int lastFailureBatchSize;
  private @Nullable String lastRetryCause;

  /** {@link #fullSinceNanos} when the ring was not seen full: not a reading, since nanoTime may be negative. */
  static final long NOT_FULL = Long.MIN_VALUE;

  /** Set by health checks: when the ring was first seen full without a non-full check since, or NOT_FULL. */
  volatile long fullSinceNanos = NOT_FULL;

  FailureWindow(int batches) {
    this.sizes = new int[batches];
    this.failures = new int[batches];
  }

  @Override
  public synchronized void recordBatch(int size, long weight, long writeNanos, int failed) {
    sizes[next] = size;
    failures[next] = failed;
    next = (next + 1) % sizes.length;
    filled = Math.min(filled + 1, sizes.length);
    if (failed > 0) {
      lastFailureAt = Instant.now();
      lastFailedItems = failed;
      lastFailureBatchSize = size;
    }
  }

  @Override
  public synchronized void recordRetry(int attempt, Throwable cause) {
    lastRetryCause = cause.toString();
  }

  /** The items and the failed items of the batches in the window, read together. */
  synchronized Tally tally() {
    long items = 0;
    long failed = 0;
    for (int i = 0; i < filled; i++) {
      items += sizes[i];
      failed += failures[i];
    }
    return new Tally(items, failed);
  }

  /** Items and failed items of the window. */
  record Tally(long items, long failed) {
    /** Failed items over items; 0 before the first batch. */
    double ratio() {
      return items == 0 ? 0 : (double) failed / items;
    }
  }

  /** The last batch with failed items, as a sentence, or null if none failed. */
  synchronized @Nullable String lastFailure() {
    return lastFailureAt == null ? null
        : lastFailedItems + " of " + lastFailureBatchSize + " items failed at " + lastFailureAt;
  }

  synchronized @Nullable String lastRetryCause() {
    return lastRetryCause;
  }
}
