package dev.ringbatch.internal.ring;

import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.WaitStrategy;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/** The fields of a {@link SubmissionSlot}; the subclass adds padding after them. */
abstract class SlotFields {
  public byte kind;
  /**
   * Whether the slot holds a future: read on the slot's own line, so that the consumer of a fire-and-forget
   * item ({@code offer}) never loads another line for one.
   */
  boolean awaited;
  public long weight;
  /** When the producer published the item ({@code Ticker} terms), or {@code NOT_STAMPED}. */
  public long stamp;
  /** The item and future, in the slot itself; null when the ring keeps its references in dense arrays. */
  @Nullable Object item;
  @Nullable CompletableFuture<Object> future;
  /** The ring's dense arrays of items and futures, shared by every slot, or null; this slot's index in them. */
  final @Nullable Object @Nullable [] items;
  final @Nullable Object @Nullable [] futures;
  final int index;

  SlotFields(@Nullable Object @Nullable [] items, @Nullable Object @Nullable [] futures, int index) {
    this.items = items;
    this.futures = futures;
    this.index = index;
  }
}

/**
 * One preallocated ring entry. A producer fills it between claiming and publishing its sequence; the
 * consumer copies it out and clears it. Fields and array elements are plain: the producer's writes
 * happen-before the consumer's reads through the sequencer's release-store of the slot's availability flag and
 * the consumer's acquire-load of it; the consumer's clearing happens-before the next producer's fill through
 * the release-store of the consumer's gating sequence.
 *
 * <p>Where the references live is chosen once per ring ({@link #denseByDefault}). In a running service the ring
 * sits in the old generation, and every store of a new item's reference into it dirties a card (512 bytes).
 * G1 before JDK 20 refines dirty cards eagerly: in padded slots of about 144 bytes that was one card per 3.5
 * items, and on JDK 17 the refinement cost {@code offer} 8x once a full GC had promoted the ring (62.8 against
 * 8.2 ops/µs; docs/results/issue22-old-generation-ring.txt). There the slot keeps only its primitives and the
 * references live in two arrays shared by the ring, 128 to a card, as in an {@code ArrayBlockingQueue}; within
 * each block of 1,024 positions ({@link #index}) consecutive sequences lie on different cache lines, so that
 * the consumer clearing one slot and a producer filling the next rarely write the same line. From JDK 20 on,
 * G1 refines only as much as its pause goal needs, and the arrays' second line per item is the larger cost
 * ({@code offer} 0.56x young and 0.70x promoted on JDK 25), so the references stay in the slot.
 */
public final class SubmissionSlot extends SlotFields {
  // Padding after the fields (a subclass's fields are laid out after its superclass's): slots are allocated
  // one after another, and without it the consumer clearing slot k and a producer filling slot k + 1 would
  // write the same cache line; when the consumer keeps up closely that false sharing cost ~10x throughput.
  long p01, p02, p03, p04, p05, p06, p07, p08, p09, p10, p11, p12, p13;

  /** The stamp of an item published while nobody measured item waits; a ticker reading of it is moved by 1. */
  public static final long NOT_STAMPED = Long.MIN_VALUE;

  /** Nothing to do: never filled, or already taken by the consumer (or by an abandoning close). */
  public static final byte EMPTY = 0;
  /** An accepted item. */
  public static final byte ITEM = 1;
  /** A claimed sequence whose producer saw the batcher closing after the claim: refused, nothing to write. */
  public static final byte TOMBSTONE = 2;
  /** Published by close: everything before it must be written, then the consumer stops. */
  public static final byte CLOSE = 3;

  /**
   * Positions per block whose sequences are spread over the block's cache lines: 1,024 references, eight cards;
   * a smaller ring is one block.
   */
  static final int BLOCK = 1024;
  /** References per 64-byte cache line with compressed references (with 8-byte ones a line holds 8). */
  private static final int LINE = 16;

  /**
   * The system property that overrides the layout chosen for this JVM: {@code true} for dense arrays,
   * {@code false} for references in the slot (docs/tuning.md).
   */
  static final String DENSE_PROPERTY = "ringbatch.denseRingReferences";

  private SubmissionSlot(@Nullable Object @Nullable [] items, @Nullable Object @Nullable [] futures, int index) {
    super(items, futures, index);
  }

  /**
   * Whether new rings keep their references in dense arrays: on JDK 19 and earlier, whose G1 refines dirty
   * cards eagerly, unless {@value #DENSE_PROPERTY} says otherwise.
   */
  static boolean denseByDefault() {
    String chosen = System.getProperty(DENSE_PROPERTY);
    if (chosen == null || chosen.isBlank()) {
      return Runtime.version().feature() < 20;
    }
    if (!chosen.equals("true") && !chosen.equals("false")) {
      throw new IllegalArgumentException(
          "system property " + DENSE_PROPERTY + " must be true or false, was '" + chosen + "'");
    }
    return Boolean.parseBoolean(chosen);
  }

  /** A multi-producer ring of {@code size} slots (a power of two), laid out for this JVM. */
  public static RingBuffer<SubmissionSlot> newRing(int size, WaitStrategy waitStrategy) {
    return newRing(size, waitStrategy, denseByDefault());
  }

  /** A multi-producer ring of {@code size} slots whose references share two dense arrays if {@code dense}. */
  public static RingBuffer<SubmissionSlot> newRing(int size, WaitStrategy waitStrategy, boolean dense) {
    Object[] items = dense ? new Object[size] : null;
    Object[] futures = dense ? new Object[size] : null;
    int[] next = {0};
    RingBuffer<SubmissionSlot> ring = RingBuffer.createMultiProducer(
        () -> new SubmissionSlot(items, futures, index(next[0]++, size)), size, waitStrategy);
    for (int position = 0; position < size; position++) { // the Disruptor fills its entries in order: checked
      if (ring.get(position).index != index(position, size)) {
        throw new IllegalStateException("ring slot " + position + " was not created in sequence order");
      }
    }
    return ring;
  }

  /**
   * The array index of ring position {@code position}: within each block, consecutive positions go to
   * consecutive cache lines (position {@code p} to line {@code p mod lines}), so that a producer's line is
   * shared with the consumer only when the consumer is a multiple of the block's line count behind. Odd blocks
   * run backwards, so that a block's last position and the next block's first are not neighbours either. Rings
   * of fewer than 64 slots keep positions in order.
   */
  static int index(int position, int size) {
    int block = Math.min(size, BLOCK);
    if (block < 4 * LINE) {
      return position;
    }
    int lines = block / LINE;
    int local = position & (block - 1);
    int spread = (local & (lines - 1)) * LINE + (local / lines);
    return (position & -block) | ((position & block) == 0 ? spread : block - 1 - spread);
  }

  /** Fills an empty slot: its references are null (see {@link #mark}), so a null future needs no store. */
  public void fill(Object item, @Nullable CompletableFuture<Object> future, long weight, long stamp) {
    this.kind = ITEM;
    Object[] items = this.items;
    if (items == null) {
      this.item = item;
      this.future = future;
    } else {
      items[index] = item;
      if (future != null) {
        futures[index] = future;
      }
    }
    this.awaited = future != null;
    this.weight = weight;
    this.stamp = stamp;
  }

  public @Nullable Object item() {
    Object[] items = this.items;
    return items == null ? item : items[index];
  }

  @SuppressWarnings("unchecked")
  public @Nullable CompletableFuture<Object> future() {
    if (!awaited) {
      return null;
    }
    Object[] futures = this.futures;
    return futures == null ? future : (CompletableFuture<Object>) futures[index];
  }

  /**
   * Marks the slot and clears its references. In dense arrays a reference already null is only read, and the
   * futures array not even that when the slot holds no future: a store would take the cache line from a
   * producer filling a neighbouring slot.
   */
  public void mark(byte kind) {
    this.kind = kind;
    Object[] items = this.items;
    if (items == null) {
      this.item = null;
      this.future = null;
    } else {
      if (items[index] != null) {
        items[index] = null;
      }
      if (awaited) {
        futures[index] = null;
      }
    }
    this.awaited = false;
    this.weight = 0;
  }
}
