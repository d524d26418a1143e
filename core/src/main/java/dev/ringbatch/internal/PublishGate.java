package dev.ringbatch.internal;

import com.lmax.disruptor.InsufficientCapacityException;
import com.lmax.disruptor.RingBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.LongAdder;
import org.jspecify.annotations.Nullable;

/**
 * The publish side of the ring and the batcher's open/closing state, and the one protocol that keeps every
 * accepted item before the close marker.
 *
 * <p>A producer claims a sequence ({@link #tryClaim}) and only then reads {@code state} ({@link #publish}).
 * Close writes {@code state} and only then claims the marker's sequence ({@link #tryPublishCloseMarker}).
 * Both claims are CASes on the ring cursor, so they are ordered, and a producer whose claim came after the
 * marker's also reads the closing state: it publishes a tombstone and refuses its own item. Hence no item
 * published as accepted follows the marker, and the consumer, which writes everything before the marker,
 * writes every accepted item. jcstress {@code PublishCloseStress} checks it.
 */
final class PublishGate {
  static final int OPEN = 0;
  static final int CLOSING = 1;
  static final int CLOSED = 2;

  private final RingBuffer<SubmissionSlot> ring;
  private final LongAdder tombstones = new LongAdder();
  private volatile int state = OPEN;
  private volatile int closeMarkers;

  PublishGate(RingBuffer<SubmissionSlot> ring) {
    this.ring = ring;
  }

  /** Claims the next sequence, or returns -1 if the ring is full. */
  long tryClaim() {
    try {
      return ring.tryNext();
    } catch (InsufficientCapacityException full) {
      return -1;
    }
  }

  /**
   * Fills and publishes a claimed sequence. Returns false, after publishing a tombstone, if the batcher is
   * closing: the item was not accepted.
   */
  boolean publish(long sequence, Object item, @Nullable CompletableFuture<Object> future, long weight) {
    SubmissionSlot slot = ring.get(sequence);
    if (state != OPEN) {
      slot.mark(SubmissionSlot.TOMBSTONE);
      ring.publish(sequence);
      tombstones.increment();
      return false;
    }
    slot.fill(item, future, weight);
    ring.publish(sequence);
    return true;
  }

  boolean isOpen() {
    return state == OPEN;
  }

  int state() {
    return state;
  }

  /** From now on, every claim publishes a tombstone. */
  void beginClose() {
    state = CLOSING;
  }

  void closed() {
    state = CLOSED;
  }

  /** Publishes the close marker if the ring has room; false if it is full. */
  boolean tryPublishCloseMarker() {
    long sequence = tryClaim();
    if (sequence < 0) {
      return false;
    }
    ring.get(sequence).mark(SubmissionSlot.CLOSE);
    closeMarkers = 1;
    ring.publish(sequence);
    return true;
  }

  /** Items accepted so far: claimed sequences less tombstones and the marker. Exact once producers are done. */
  long accepted() {
    return ring.getCursor() + 1 - tombstones.sum() - closeMarkers;
  }
}
