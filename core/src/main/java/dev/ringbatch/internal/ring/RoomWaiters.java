package dev.ringbatch.internal.ring;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * Threads waiting for room in a full ring (producers under {@code BLOCK}, a close publishing its marker),
 * parked until the consumer frees slots: a blocked caller costs no CPU however long it waits.
 *
 * <p>No wake-up is lost. A waiter {@linkplain #register registers} (a CAS in the queue) and only then tries
 * its claim again before parking; the consumer releases slots (a store to its gating sequence), issues a full
 * fence, and only then looks for waiters ({@link #wake}). Of two store-then-load pairs separated by full
 * fences, at least one sees the other's store: either the waiter's claim sees the room, or the consumer sees
 * the waiter. Each registration's state moves once, by CAS: {@code WAITING -> WOKEN} (the consumer picked it)
 * or {@code WAITING -> LEFT} (the waiter stopped waiting first). A waiter that leaves holding a wake it did
 * not need (it had claimed a slot on its re-check, or timed out, was interrupted, saw the close) passes it on
 * ({@link #leave} returns true and the caller wakes the next), as {@code AbstractQueuedSynchronizer} does; and
 * the consumer wakes as many waiters as the ring has free slots, not just the slots it released, so any
 * shortfall is repaired at the next release. Waiters are woken oldest first; a woken waiter that loses the
 * slot to a producer that never waited registers again at the tail. A woken waiter always passes its wake on,
 * even when it then claims the slot: at worst one waiter too many wakes and parks again, never one too few.
 * Thread-safe.
 */
final class RoomWaiters {
  /** Abandoned entries (timed out, interrupted, closed) tolerated before a leaving waiter sweeps them. */
  private static final int SWEEP_AT = 1024;
  private static final int WAITING = 0;
  private static final int WOKEN = 1;
  private static final int LEFT = 2;

  /** One registration of one waiting thread. */
  static final class Waiter {
    final Thread thread;
    final AtomicInteger state = new AtomicInteger(WAITING);

    Waiter(Thread thread) {
      this.thread = thread;
    }
  }

  private final ConcurrentLinkedQueue<Waiter> queue = new ConcurrentLinkedQueue<>();
  private final AtomicInteger abandoned = new AtomicInteger();

  /** Waiter side: enqueues the calling thread; it must then try its claim again before parking. */
  Waiter register() {
    Waiter waiter = new Waiter(Thread.currentThread());
    queue.add(waiter);
    return waiter;
  }

  /**
   * Waiter side: stops waiting on this registration (claimed, timed out, interrupted, closed). Returns true if
   * the consumer had picked it meanwhile: the caller must then pass the wake on ({@link #wake} with the room
   * there is), since whoever it was meant for may still be parked.
   */
  boolean leave(Waiter waiter) {
    if (waiter.state.compareAndSet(WAITING, LEFT)) {
      if (abandoned.incrementAndGet() >= SWEEP_AT) { // never polled: sweep now and then, so the queue stays small
        abandoned.set(0);
        queue.removeIf(w -> w.state.get() == LEFT);
      }
      return false;
    }
    return true;
  }

  /** Whether anybody may be waiting: one read of the queue's head. */
  boolean anyWaiting() {
    return queue.peek() != null;
  }

  /**
   * After slots were released (the caller fenced or read the ring state after its release): wakes up to
   * {@code room} waiters, oldest first. {@code room} is the ring's free capacity now.
   */
  void wake(long room) {
    long woken = 0;
    Waiter waiter;
    while (woken < room && (waiter = queue.poll()) != null) {
      if (waiter.state.compareAndSet(WAITING, WOKEN)) {
        LockSupport.unpark(waiter.thread);
        woken++;
      }
    }
  }

  /** Wakes every waiter: the batcher is closing (each sees it and gives up). */
  void wakeAll() {
    wake(Long.MAX_VALUE);
  }
}
