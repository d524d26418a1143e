package dev.ringbatch;

/** Why a batcher refused an item. Each reason is counted separately in {@link BatcherStats#rejected(RejectionReason)}. */
public enum RejectionReason {
  /** The ring was full and the policy is {@link OverflowPolicy#DROP}, or the caller was the batcher's own consumer thread. */
  FULL,
  /** The ring stayed full for the whole {@link BatcherConfig#submitTimeout()} under {@link OverflowPolicy#BLOCK}. */
  TIMEOUT,
  /** The producer was interrupted while it waited for room under {@link OverflowPolicy#BLOCK}. */
  INTERRUPTED,
  /** The batcher was closing or closed. */
  CLOSED
}
