package dev.ringbatch.internal;

import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/** The fields of a {@link SubmissionSlot}; the subclass adds padding after them. */
abstract class SlotFields {
  byte kind;
  @Nullable Object item;
  @Nullable CompletableFuture<Object> future;
  long weight;
  /** When the producer published the item ({@code Ticker} terms), or {@code NOT_STAMPED}. */
  long stamp;
}

/**
 * One preallocated ring entry. A producer fills it between claiming and publishing its sequence; the
 * consumer copies it out and clears it. Fields are plain: the producer's writes happen-before the
 * consumer's reads through the sequencer's release-store of the slot's availability flag and the
 * consumer's acquire-load of it; the consumer's clearing happens-before the next producer's fill through
 * the release-store of the consumer's gating sequence.
 */
final class SubmissionSlot extends SlotFields {
  // Padding after the fields (a subclass's fields are laid out after its superclass's): slots are allocated
  // one after another, and without it the consumer clearing slot k and a producer filling slot k + 1 would
  // write the same cache line; when the consumer keeps up closely that false sharing cost ~10x throughput.
  long p01, p02, p03, p04, p05, p06, p07, p08, p09, p10, p11, p12, p13;

  /** The stamp of an item published while nobody measured item waits; a ticker reading of it is moved by 1. */
  static final long NOT_STAMPED = Long.MIN_VALUE;

  /** Nothing to do: never filled, or already taken by the consumer (or by an abandoning close). */
  static final byte EMPTY = 0;
  /** An accepted item. */
  static final byte ITEM = 1;
  /** A claimed sequence whose producer saw the batcher closing after the claim: refused, nothing to write. */
  static final byte TOMBSTONE = 2;
  /** Published by close: everything before it must be written, then the consumer stops. */
  static final byte CLOSE = 3;

  void fill(Object item, @Nullable CompletableFuture<Object> future, long weight, long stamp) {
    this.kind = ITEM;
    this.item = item;
    this.future = future;
    this.weight = weight;
    this.stamp = stamp;
  }

  void mark(byte kind) {
    this.kind = kind;
    this.item = null;
    this.future = null;
    this.weight = 0;
  }
}
