package dev.ringbatch.internal;

import com.lmax.disruptor.RingBuffer;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * One wait, up to a deadline, for producers between their claim and their publish, as a close's scan of unread
 * slots and {@code stats()} make it: no user code runs between the two, so a producer is usually a few instructions
 * from its publish (spun for), and one that was descheduled is waited for parked. An interrupt met while parked is
 * absorbed (park would return at once while it is set) and set again by {@link #done()}. One thread, one scan.
 */
final class PublishWait {
  /**
   * The longest wait for producers between their claim and their publish, for a close's scan and for stats(). No
   * user code runs there, so only a descheduled producer takes long: on a loaded machine that is milliseconds.
   */
  static final long MAX_NANOS = TimeUnit.MILLISECONDS.toNanos(200);
  /** Polls spent spinning on a slot before the wait parks between polls. */
  private static final int SPINS = 100;
  private static final long PAUSE_NANOS = TimeUnit.MICROSECONDS.toNanos(20);

  private final RingBuffer<SubmissionSlot> ring;
  private final long deadline;
  private boolean interrupted;

  /** A wait of at most {@code nanos} from now, for all the slots it is asked about. */
  PublishWait(RingBuffer<SubmissionSlot> ring, long nanos) {
    this.ring = ring;
    this.deadline = System.nanoTime() + nanos;
  }

  /** Whether {@code sequence} is published, or gets published before the deadline. */
  boolean published(long sequence) {
    for (int spins = 0; !ring.isAvailable(sequence); spins++) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        return false;
      }
      if (spins < SPINS) {
        Thread.onSpinWait();
      } else {
        LockSupport.parkNanos(this, Math.min(left, PAUSE_NANOS));
        interrupted |= Thread.interrupted();
      }
    }
    return true;
  }

  /** Ends the wait: an interrupt it absorbed is set again on the calling thread. */
  void done() {
    if (interrupted) {
      interrupted = false;
      Thread.currentThread().interrupt();
    }
  }
}
