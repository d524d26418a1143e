package dev.ringbatch.internal;

import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * One preallocated ring entry. A producer fills it between claiming and publishing its sequence; the
 * consumer copies it out and clears it. Fields are plain: the producer's writes happen-before the
 * consumer's reads through the sequencer's release-store of the slot's availability flag and the
 * consumer's acquire-load of it; the consumer's clearing happens-before the next producer's fill through
 * the release-store of the consumer's gating sequence.
 */
final class SubmissionSlot {
  /** Nothing to do: never filled, or already taken by the consumer (or by an abandoning close). */
  static final byte EMPTY = 0;
  /** An accepted item. */
  static final byte ITEM = 1;
  /** A claimed sequence whose producer saw the batcher closing after the claim: refused, nothing to write. */
  static final byte TOMBSTONE = 2;
  /** Published by close: everything before it must be written, then the consumer stops. */
  static final byte CLOSE = 3;

  byte kind;
  @Nullable Object item;
  @Nullable CompletableFuture<Object> future;
  long weight;

  void fill(Object item, @Nullable CompletableFuture<Object> future, long weight) {
    this.kind = ITEM;
    this.item = item;
    this.future = future;
    this.weight = weight;
  }

  void mark(byte kind) {
    this.kind = kind;
    this.item = null;
    this.future = null;
    this.weight = 0;
  }
}
