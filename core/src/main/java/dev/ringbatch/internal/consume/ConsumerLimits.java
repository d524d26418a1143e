package dev.ringbatch.internal.consume;

import dev.ringbatch.BatchLimits;
import dev.ringbatch.internal.pacing.AdaptiveLimits;
import org.jspecify.annotations.Nullable;

/**
 * The one owner of a batcher's limits: those configured or set through {@code setLimits}, or, for an
 * {@link dev.ringbatch.Adaptive} batcher, its controller's until a {@code setLimits} pins them. Any thread sets and
 * reads them; the consumer takes them once per run of slots ({@link #forRun}).
 */
public final class ConsumerLimits {
  /** Replaced by any thread through {@link #set}. */
  private volatile BatchLimits limits;
  /** The adaptive limits' controller, or null. */
  private final @Nullable AdaptiveLimits adaptive;
  /** Whether {@link #set} pinned the limits of an adaptive batcher: the controller no longer steers. */
  private volatile boolean pinned;
  /** The controller whose limits the consumer's current run applies, or null. Consumer thread only. */
  private @Nullable AdaptiveLimits runController;

  public ConsumerLimits(BatchLimits limits, @Nullable AdaptiveLimits adaptive) {
    this.limits = limits;
    this.adaptive = adaptive;
  }

  /**
   * Consumer thread: the limits for the run it starts, the controller's unless there is none or they were pinned.
   * Notes whose they are, so that a pin from user code in the middle of the run does not drop the controller's
   * rules for the limits it already handed out ({@link #runController}).
   */
  BatchLimits forRun() {
    AdaptiveLimits a = steering();
    if (runController != a) {
      // Only on a change: a reference store into this long-lived object dirties a G1 card that a refinement
      // thread must then scan, a cost per batch that showed in the offer benchmark.
      runController = a;
    }
    return a == null ? limits : a.limits();
  }

  /** Consumer thread: the controller whose limits the current run applies, or null. */
  @Nullable AdaptiveLimits runController() {
    return runController;
  }

  /** The adaptive controller while it steers, or null. */
  @Nullable AdaptiveLimits steering() {
    AdaptiveLimits a = adaptive;
    return a == null || pinned ? null : a;
  }

  /** Replaces the limits; on an adaptive batcher, pins them (the controller stops steering). Any thread. */
  public void set(BatchLimits limits) {
    this.limits = limits;
    if (adaptive != null) {
      pinned = true;
    }
  }

  /** The limits in force. Any thread. */
  public BatchLimits current() {
    AdaptiveLimits a = steering();
    return a == null ? limits : a.published();
  }
}
