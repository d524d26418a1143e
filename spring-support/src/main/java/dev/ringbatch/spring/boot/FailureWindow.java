package dev.ringbatch.spring.boot;

import dev.ringbatch.stats.StatsRecorder;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * The batches of one batcher in the last {@code ringbatch.health.failure-window}, for its health: the share of
 * failed items among them, and the last failure seen. A period of time, not a count of batches, so that
 * failures age out with no traffic: a readiness probe that took the pod out of service after an outage lets
 * it back once the outage is that long past.
 *
 * <p>The window is {@value #BUCKETS} buckets of a tenth of it each, so a batch counts from when it is recorded
 * until between 90% and 100% of the window later, and the memory is fixed whatever the traffic. Fed on the
 * consumer thread (once per batch, not per item; on the completing thread for an asynchronous sink), read by
 * health checks; a monitor is cheap at that rate.
 */
final class FailureWindow implements StatsRecorder {
  static final int BUCKETS = 10;
  /** An epoch no bucket can be in: the slot is empty. */
  private static final long EMPTY = Long.MIN_VALUE;

  private final LongSupplier nanoTime;
  private final long bucketNanos;
  private final long[] epochs = new long[BUCKETS];
  private final long[] sizes = new long[BUCKETS];
  private final long[] failures = new long[BUCKETS];
  private @Nullable Instant lastFailureAt;
  private int lastFailedItems;
  private int lastFailureBatchSize;
  private @Nullable String lastRetryCause;

  /** {@link #fullSinceNanos} when the ring was not seen full: not a reading, since nanoTime may be negative. */
  static final long NOT_FULL = Long.MIN_VALUE;

  /** Set by health checks: when the ring was first seen full without a non-full check since, or NOT_FULL. */
  volatile long fullSinceNanos = NOT_FULL;

  /**
   * @param window the period the failure ratio is taken over, positive
   * @param nanoTime the clock, {@code System::nanoTime} but in tests
   */
  FailureWindow(Duration window, LongSupplier nanoTime) {
    this.nanoTime = nanoTime;
    // no longer than ParallelCloser.LONGEST: toNanos() of centuries overflows
    this.bucketNanos = Math.max(1, ParallelCloser.min(window, ParallelCloser.LONGEST).toNanos() / BUCKETS);
    Arrays.fill(epochs, EMPTY);
  }

  @Override
  public synchronized void recordBatch(int size, long weight, long writeNanos, int failed) {
    long epoch = Math.floorDiv(nanoTime.getAsLong(), bucketNanos);
    int slot = (int) Math.floorMod(epoch, (long) BUCKETS);
    if (epochs[slot] != epoch) {
      epochs[slot] = epoch;
      sizes[slot] = 0;
      failures[slot] = 0;
    }
    sizes[slot] += size;
    failures[slot] += failed;
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
    long now = Math.floorDiv(nanoTime.getAsLong(), bucketNanos);
    long items = 0;
    long failed = 0;
    for (int i = 0; i < BUCKETS; i++) {
      if (epochs[i] != EMPTY && epochs[i] > now - BUCKETS && epochs[i] <= now) {
        items += sizes[i];
        failed += failures[i];
      }
    }
    return new Tally(items, failed);
  }

  /** Items and failed items of the window. */
  record Tally(long items, long failed) {
    /** Failed items over items; 0 when the window is empty. */
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
