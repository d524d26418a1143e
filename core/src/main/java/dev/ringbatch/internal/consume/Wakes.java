package dev.ringbatch.internal.consume;

import dev.ringbatch.internal.ring.ItemFuture;
import org.jspecify.annotations.Nullable;

/**
 * The callers parked on a batch's completed futures ({@link ItemFuture}), woken together once the futures before
 * them are complete (virtual threads at once while the sink is quick); all counted for the consumer's
 * self-clocked wait ({@link SelfClock}). Local to one completion; allocated only when a caller waits.
 */
public final class Wakes {
  private final @Nullable ItemFuture<?>[] waiting;
  private int count;
  private int total;
  private int virtual;

  /** Whether a virtual-thread caller is woken at once. */
  private final boolean virtualAtOnce;

  public Wakes(int capacity, boolean virtualAtOnce) {
    waiting = new ItemFuture<?>[capacity];
    this.virtualAtOnce = virtualAtOnce;
  }

  /**
   * Adds a completed future a caller is parked on, to be woken with the rest of the batch ({@link #now}); or at
   * once if it is a virtual-thread caller and {@code virtualAtOnce} (the sink is quick): its wake-up is a
   * hand-off to its scheduler, and the sooner it runs, the sooner its next item arrives.
   */
  public void add(ItemFuture<?> future) {
    total++;
    boolean virtualThread = future.virtualWaiter();
    if (virtualThread) {
      virtual++;
    }
    if (virtualThread && virtualAtOnce) {
      future.claim();
    } else {
      waiting[count++] = future;
    }
  }

  /** Wakes those added since the last call. */
  public void now() {
    for (int i = 0; i < count; i++) {
      ItemFuture<?> future = waiting[i];
      waiting[i] = null;
      try {
        future.claim();
      } catch (Throwable own) {
        // an unpark that could not allocate (a virtual thread's, out of memory): the callers after it are still
        // woken, and this one wakes at its timeout, or at the next unpark of its thread
      }
    }
    count = 0;
  }

  /** How many callers were woken in all. */
  int total() {
    return total;
  }

  /** How many of them were virtual threads. */
  int virtual() {
    return virtual;
  }
}
