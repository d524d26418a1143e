package dev.ringbatch.internal;

import java.lang.invoke.VarHandle;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * Threads waiting for room in a full ring (producers under {@code BLOCK}, a close publishing its marker),
 * parked until the consumer frees slots: a blocked caller costs no CPU however long it waits.
 *
 * <p>No wake-up is lost: a waiter {@linkplain #register registers} (a CAS in the queue) and only then tries
 * its claim again before parking; the consumer releases slots (a store to its gating sequence), issues a full
 * fence, and only then looks for waiters ({@link #roomFreed}). Of two store-then-load pairs separated by full
 * fences, at least one sees the other's store: either the waiter's claim sees the room, or the consumer sees
 * the waiter and unparks it. Waiters are woken in arrival order, about as many as slots were freed; one that
 * then loses its slot to a newcomer registers again. Thread-safe.
 */
final class RoomWaiters {
  /** Abandoned entries (timed out, interrupted, closed) tolerated before a leaving waiter sweeps them. */
  private static final int SWEEP_AT = 1024;

  /** One registration of one waiting thread; {@code done} once it stops waiting for this registration. */
  static final class Waiter {
    final Thread thread;
    volatile boolean done;

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
   * Waiter side: stops waiting without having been woken for this registration (it claimed a slot, timed
   * out, was interrupted, or the batcher closed). Leaves the entry for the consumer to drop, sweeping now and
   * then so that waiters who never get woken cannot grow the queue without bound.
   */
  void leave(Waiter waiter) {
    if (waiter.done) {
      return;
    }
    waiter.done = true;
    if (abandoned.incrementAndGet() >= SWEEP_AT) {
      abandoned.set(0);
      queue.removeIf(w -> w.done);
    }
  }

  /** Consumer side, after releasing {@code slots} slots: wakes about that many waiters, oldest first. */
  void roomFreed(long slots) {
    VarHandle.fullFence(); // the release of the slots is visible before we look for waiters: see the class comment
    if (queue.peek() == null) {
      return; // nobody waits: the common case costs the fence and one read
    }
    long woken = 0;
    Waiter waiter;
    while (woken < slots && (waiter = queue.poll()) != null) {
      if (!waiter.done) {
        waiter.done = true; // this registration is used up: the thread registers again if it must wait more
        LockSupport.unpark(waiter.thread);
        woken++;
      }
    }
  }

  /** Wakes every waiter: the batcher is closing (each sees it and gives up). */
  void wakeAll() {
    Waiter waiter;
    while ((waiter = queue.poll()) != null) {
      if (!waiter.done) {
        waiter.done = true;
        LockSupport.unpark(waiter.thread);
      }
    }
  }
}
