package dev.ringbatch;

/**
 * What a producer does when the ring is full.
 *
 * <p>Whatever the policy, a rejected item is never lost silently: {@link Batcher#submit} returns a future
 * failed with {@link BatcherFullException}, {@link Batcher#offer} returns {@code false}, and the rejection
 * is counted in {@link BatcherStats#rejected()}.
 */
public enum OverflowPolicy {
  /**
   * Wait for room, up to {@link BatcherConfig#submitTimeout()}; then reject with
   * {@link RejectionReason#TIMEOUT}. Give {@link BatcherConfig#NO_TIMEOUT} to wait for as long as it takes.
   * An interrupted producer stops waiting and is rejected with {@link RejectionReason#INTERRUPTED}, its
   * interrupt flag kept.
   */
  BLOCK,

  /** Reject at once with {@link RejectionReason#FULL}: the caller is told and the item is not queued. */
  DROP
}
