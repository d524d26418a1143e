package dev.ringbatch.internal.ring;

import com.lmax.disruptor.InsufficientCapacityException;
import com.lmax.disruptor.RingBuffer;
import dev.ringbatch.BatcherClosedException;
import dev.ringbatch.BatcherFullException;
import dev.ringbatch.OverflowPolicy;
import dev.ringbatch.RejectionReason;
import dev.ringbatch.Ticker;
import dev.ringbatch.internal.shared.Checks;
import dev.ringbatch.internal.shared.GuardedStatsRecorders;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * The whole producer side: claim a slot under the overflow policy, publish, refuse and count rejections, and
 * the batcher's open/closing state with the one protocol that keeps every accepted item before the close marker.
 *
 * <p>A producer claims a sequence ({@link #tryClaim}) and only then reads {@code state} ({@link #publish}).
 * Close writes {@code state} and only then claims the marker's sequence ({@link #publishCloseMarker}).
 * Both claims are CASes on the ring cursor, so they are ordered, and a producer whose claim came after the
 * marker's also reads the closing state: it publishes a tombstone and refuses its own item. Hence no item
 * published as accepted follows the marker, and the consumer, which writes everything before the marker,
 * writes every accepted item. jcstress {@code PublishCloseStress} checks it. Thread-safe.
 */
public final class PublishGate {
  public static final int OPEN = 0;
  public static final int CLOSING = 1;
  static final int CLOSED = 2;

  static final long REJECTED_FULL = -1;
  static final long REJECTED_TIMEOUT = -2;
  static final long REJECTED_INTERRUPTED = -3;
  public static final long REJECTED_CLOSED = -4;
  static final long REJECTED_ON_CONSUMER = -5;

  /** Rounds of spinning and yielding before a waiter parks: room often comes back within microseconds. */
  private static final int SPIN_ROUNDS = 64;
  private static final int YIELD_ROUNDS = 16;
  /** How often {@link #accepted()} reads again while producers racing a close's start move the counts. */
  private static final int SETTLE_ATTEMPTS = 16;
  /** False once a close gave up on unpublished slots: see {@link #stopAwaitingPublishes}. */
  private volatile boolean awaitPublishes = true;

  private final String name;
  private final RingBuffer<SubmissionSlot> ring;
  private final OverflowPolicy overflowPolicy;
  private final Duration submitTimeout;
  private final long submitTimeoutNanos;
  private final ConsumerGroup consumers;
  private final GuardedStatsRecorders recorders;
  private final Ticker ticker;
  private final LongAdder[] rejections = new LongAdder[RejectionReason.values().length];
  private final LongAdder tombstones = new LongAdder();
  private final RoomWaiters room = new RoomWaiters();
  volatile int state = OPEN;
  /** Whether producers stamp items with the ticker for the item-wait recorders; next to {@code state}. */
  volatile boolean stampItems;
  private volatile int closeMarkers;

  public PublishGate(String name, RingBuffer<SubmissionSlot> ring, OverflowPolicy overflowPolicy, Duration submitTimeout,
      ConsumerGroup consumers, GuardedStatsRecorders recorders, Ticker ticker) {
    this.name = name;
    this.ring = ring;
    this.overflowPolicy = overflowPolicy;
    this.submitTimeout = submitTimeout;
    this.submitTimeoutNanos = Checks.saturatedNanos(submitTimeout);
    this.consumers = consumers;
    this.recorders = recorders;
    this.ticker = ticker;
    for (int i = 0; i < rejections.length; i++) {
      rejections[i] = new LongAdder();
    }
  }

  /**
   * Claims a slot under the overflow policy and publishes the item. Returns its sequence, or a negative
   * {@code REJECTED_*} code (already counted) if it was refused.
   */
  public long accept(Object item, @Nullable CompletableFuture<Object> future, long weight) {
    return accept(item, future, weight, submitTimeoutNanos);
  }

  /**
   * As {@link #accept(Object, CompletableFuture, long)}, waiting for room (under {@code BLOCK}) at most
   * {@code maxWaitNanos}, and never longer than the submit timeout.
   */
  public long accept(Object item, @Nullable CompletableFuture<Object> future, long weight, long maxWaitNanos) {
    // The ticker is user code: read before the claim, so a slow one never holds a claimed, unpublished slot
    // that every later item would wait behind. A wait for room therefore counts as waiting too.
    long stamp = stampItems ? stamp() : SubmissionSlot.NOT_STAMPED;
    if (state != OPEN) { // refused before any claim: only producers racing the close's start leave tombstones
      count(RejectionReason.CLOSED);
      return REJECTED_CLOSED;
    }
    long sequence = tryClaim();
    if (sequence < 0) {
      sequence = awaitSlot(Math.min(maxWaitNanos, submitTimeoutNanos));
      if (sequence < 0) {
        count(reasonOf(sequence));
        return sequence;
      }
    }
    if (!publish(sequence, item, future, weight, stamp)) {
      count(RejectionReason.CLOSED);
      return REJECTED_CLOSED;
    }
    return sequence;
  }

  /** Claims the next sequence, or returns -1 if the ring is full. */
  public long tryClaim() {
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
  public boolean publish(long sequence, Object item, @Nullable CompletableFuture<Object> future, long weight,
      long stamp) {
    SubmissionSlot slot = ring.get(sequence);
    if (state != OPEN) {
      slot.mark(SubmissionSlot.TOMBSTONE);
      tombstones.increment(); // before the publish: see accepted()
      ring.publish(sequence);
      return false;
    }
    slot.fill(item, future, weight, stamp);
    ring.publish(sequence);
    return true;
  }

  /** The ring is full: applies the overflow policy. Returns a claimed sequence or a {@code REJECTED_*} code. */
  private long awaitSlot(long maxWaitNanos) {
    if (state != OPEN) {
      return REJECTED_CLOSED;
    }
    if (consumers.contains(Thread.currentThread())) {
      return REJECTED_ON_CONSUMER;
    }
    if (overflowPolicy == OverflowPolicy.DROP) {
      return REJECTED_FULL;
    }
    long start = System.nanoTime();
    long deadline = maxWaitNanos > Long.MAX_VALUE - start ? Long.MAX_VALUE : start + maxWaitNanos;
    return awaitRoom(deadline, null);
  }

  /**
   * Claims a slot, waiting for room until {@code deadline} ({@link System#nanoTime()} terms): a few spins and
   * yields, then parked in {@link RoomWaiters} until the consumer frees slots, with no timed wake-ups. A
   * producer ({@code absorbInterrupt} null) gives up when interrupted ({@code REJECTED_INTERRUPTED}) or when
   * the batcher closes ({@code REJECTED_CLOSED}); the closing thread passes {@code absorbInterrupt}, which is
   * told of an interrupt while the wait goes on.
   *
   * @return the claimed sequence, or {@code REJECTED_TIMEOUT}, {@code REJECTED_INTERRUPTED}, {@code REJECTED_CLOSED}
   */
  public long awaitRoom(long deadline, @Nullable Runnable absorbInterrupt) {
    for (int round = 0; ; round = Math.min(round + 1, SPIN_ROUNDS + YIELD_ROUNDS)) {
      if (absorbInterrupt == null) {
        if (Thread.currentThread().isInterrupted()) {
          return REJECTED_INTERRUPTED;
        }
        if (state != OPEN) {
          return REJECTED_CLOSED;
        }
      } else if (Thread.interrupted()) {
        absorbInterrupt.run();
      }
      long sequence = tryClaim();
      if (sequence >= 0) {
        return sequence;
      }
      long remaining = deadline - System.nanoTime();
      if (remaining <= 0) {
        return REJECTED_TIMEOUT;
      }
      if (round < SPIN_ROUNDS) {
        Thread.onSpinWait();
      } else if (round < SPIN_ROUNDS + YIELD_ROUNDS) {
        Thread.yield();
      } else {
        RoomWaiters.Waiter waiter = room.register();
        try {
          sequence = tryClaim(); // again after registering: room freed before it would not wake us
          if (sequence >= 0) {
            return sequence;
          }
          if (absorbInterrupt != null || state == OPEN) {
            LockSupport.parkNanos(this, remaining); // until the consumer frees room, a close, or an interrupt
          }
        } finally {
          if (room.leave(waiter)) {
            wakeWaiters(); // picked by the consumer meanwhile: the wake may have been meant for another
          }
        }
      }
    }
  }

  /** The consumer released slots: wakes as many waiters as the ring has room for. */
  public void roomFreed() {
    VarHandle.fullFence(); // the release is visible before we look for waiters: see RoomWaiters
    wakeWaiters();
  }

  private void wakeWaiters() {
    if (room.anyWaiting()) { // the common case stops here, without reading the ring's capacity
      room.wake(ring.remainingCapacity());
    }
  }

  private static RejectionReason reasonOf(long code) {
    if (code == REJECTED_TIMEOUT) {
      return RejectionReason.TIMEOUT;
    } else if (code == REJECTED_INTERRUPTED) {
      return RejectionReason.INTERRUPTED;
    } else if (code == REJECTED_CLOSED) {
      return RejectionReason.CLOSED;
    }
    return RejectionReason.FULL;
  }

  private void count(RejectionReason reason) {
    rejections[reason.ordinal()].increment();
    recorders.recordRejected(reason);
  }

  /** Items refused for {@code reason} so far. */
  public long rejected(RejectionReason reason) {
    return rejections[reason.ordinal()].sum();
  }

  /**
   * The exception that tells a caller why its item, refused with {@code code}, was not accepted; it waited for room
   * at most {@code maxWaitNanos}.
   */
  public RuntimeException rejection(long code, long maxWaitNanos) {
    int capacity = ring.getBufferSize();
    if (code == REJECTED_CLOSED) {
      return new BatcherClosedException(name, capacity, false, "item rejected");
    } else if (code == REJECTED_TIMEOUT) {
      return new BatcherFullException(name, capacity, RejectionReason.TIMEOUT,
          "item rejected after waiting " + Duration.ofNanos(Math.min(maxWaitNanos, submitTimeoutNanos)).toMillis()
              + " ms for room");
    } else if (code == REJECTED_INTERRUPTED) {
      return new BatcherFullException(name, capacity, RejectionReason.INTERRUPTED,
          "item rejected: the producer was interrupted while waiting for room");
    } else if (code == REJECTED_ON_CONSUMER) {
      return new BatcherFullException(name, capacity, RejectionReason.FULL,
          "item dropped: submitted on the batcher's own consumer thread, which must not wait for room");
    }
    return new BatcherFullException(name, capacity, RejectionReason.FULL, "item dropped");
  }

  public boolean isOpen() {
    return state == OPEN;
  }

  private long stamp() {
    long now = ticker.read();
    return now == SubmissionSlot.NOT_STAMPED ? now + 1 : now;
  }

  /** Turns stamping on or off; the batcher calls it whenever its recorders change. */
  public void stampItems(boolean on) {
    stampItems = on;
  }

  public int state() {
    return state;
  }

  /** From now on, every claim publishes a tombstone and producers waiting for room give up. */
  public void beginClose() {
    state = CLOSING;
    room.wakeAll(); // after the state: a waiter registering later reads CLOSING before it parks
  }

  public void closed() {
    state = CLOSED;
  }

  /** Publishes the close marker in a claimed slot: everything before it is written, then the consumer stops. */
  public void publishCloseMarker(long sequence) {
    ring.get(sequence).mark(SubmissionSlot.CLOSE);
    closeMarkers = 1;
    ring.publish(sequence);
  }

  /**
   * Items accepted so far: claimed sequences less tombstones and the marker, with no count on the hot path.
   * Tombstones and the marker are counted before their slot is published, and read before the cursor, so a
   * reading never includes one whose claim the cursor reading leaves out. After the cursor reading, the claims up
   * to it are let settle (published; no user code runs between a producer's claim and its publish), and the
   * counts read again: unchanged, every tombstone up to the cursor was in the first reading, so the figure is
   * exact, and it never goes down from one reading to the next (but once a close gave up on a claimed slot,
   * {@link #stopAwaitingPublishes}: a claim that turns into a tombstone then leaves the count). Producers that keep racing a close's start can
   * keep the counts moving; after a few tries the estimate is returned, which can only run ahead by claims not
   * yet decided. Either way it never falls short of the items whose outcome was counted before.
   */
  public long accepted() {
    for (int attempt = 0; attempt < SETTLE_ATTEMPTS; attempt++) {
      int markers = closeMarkers;
      long before = tombstones.sum();
      long cursor = ring.getCursor();
      if (!awaitPublished(cursor)) {
        break;
      }
      if (tombstones.sum() == before && closeMarkers == markers) {
        return estimate(markers, before, cursor);
      }
    }
    return estimate(closeMarkers, tombstones.sum(), ring.getCursor());
  }

  private static long estimate(int markers, long tombstoneCount, long cursor) {
    return Math.max(0, cursor + 1 - tombstoneCount - markers);
  }

  /**
   * A close gave up on slots claimed but not published ({@code StragglerWatch}): from now on {@link #accepted()}
   * does not wait for publishes, which may never come, and counts such claims until they are decided.
   */
  public void stopAwaitingPublishes() {
    awaitPublishes = false;
  }

  /** Waits briefly for producers between their claim and their publish (no user code runs there). */
  private boolean awaitPublished(long cursor) {
    if (!awaitPublishes) {
      return false;
    }
    // Slots the consumer moved past were published, and so were claims older than one lap of the ring.
    long lowest = Math.max(ring.getMinimumGatingSequence() + 1, cursor - ring.getBufferSize() + 1);
    PublishWait wait = new PublishWait(ring, PublishWait.MAX_NANOS);
    try {
      for (long sequence = lowest; sequence <= cursor; sequence++) {
        if (!wait.published(sequence)) {
          return false;
        }
      }
      return true;
    } finally {
      wait.done();
    }
  }
}
