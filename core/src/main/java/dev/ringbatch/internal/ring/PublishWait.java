package dev.ringbatch.internal.ring;

import com.lmax.disruptor.RingBuffer;
import dev.ringbatch.internal.shared.Backoff;
import java.util.concurrent.TimeUnit;

/**
 * One wait, up to a deadline, for producers between their claim and their publish, as a close's scan of unread
 * slots and {@code stats()} make it: no user code runs between the two, so a producer is usually a few instructions
 * from its publish (spun for), and one that was descheduled is waited for parked. An interrupt met while parked is
 * absorbed (park would return at once while it is set) and set again by {@link #done()}. One thread, one scan.
 */
public final class PublishWait {
  /**
   * The longest wait for producers between their claim and their publish, for a close's scan and for stats(). No
   * user code runs there, so only a descheduled producer takes long: on a loaded machine that is milliseconds.
   */
  public static final long MAX_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

  private final RingBuffer<SubmissionSlot> ring;
  private final long deadline;
  /** Per slot: 100 polls spun, then parked 20 µs between polls. */
  private final Backoff backoff = new Backoff(100, TimeUnit.MICROSECONDS.toNanos(20), TimeUnit.MICROSECONDS.toNanos(20));
  private boolean interrupted;

  /** A wait of at most {@code nanos} from now, for all the slots it is asked about. */
  public PublishWait(RingBuffer<SubmissionSlot> ring, long nanos) {
    this.ring = ring;
    this.deadline = System.nanoTime() + nanos;
  }

  /** Whether {@code sequence} is published, or gets published before the deadline. */
  public boolean published(long sequence) {
    backoff.reset();
    while (!ring.isAvailable(sequence)) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        return false;
      }
      interrupted |= backoff.pause(left);
    }
    return true;
  }

  /** Ends the wait: an interrupt it absorbed is set again on the calling thread. */
  public void done() {
    if (interrupted) {
      interrupted = false;
      Thread.currentThread().interrupt();
    }
  }
}
