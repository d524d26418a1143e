package dev.ringbatch.internal;

import com.lmax.disruptor.RingBuffer;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Fails the items of slots an abandoning close found claimed but not published ({@link Holdings}): a producer
 * descheduled between its claim and its publish (no user code runs there, but the OS may stop a thread anywhere)
 * that had read the batcher open publishes an accepted item later, into a ring nobody reads any more. A thread of
 * its own, started once the close's report is out and never waited for, watches those slots, parked with a
 * growing pause, and fails and counts each item as it appears; a tombstone (the producer read the batcher closing)
 * needs nothing. Nobody else reads these slots after a take-over, and producers cannot claim them again: the
 * consumer's sequence no longer moves, so the ring never wraps onto them.
 */
final class StragglerWatch {
  private static final System.Logger LOG = System.getLogger(StragglerWatch.class.getName());
  private static final long FIRST_PAUSE_NANOS = TimeUnit.MICROSECONDS.toNanos(100);
  private static final long MAX_PAUSE_NANOS = TimeUnit.SECONDS.toNanos(1);
  /** After this, a slot still unpublished is reported once: its producer is stopped, or died, between the two. */
  private static final long REPORT_AFTER_NANOS = TimeUnit.SECONDS.toNanos(60);

  private final String name;
  private final RingBuffer<SubmissionSlot> ring;
  private final BatchCompleter completer;

  StragglerWatch(String name, RingBuffer<SubmissionSlot> ring, BatchCompleter completer) {
    this.name = name;
    this.ring = ring;
    this.completer = completer;
  }

  /** Starts watching the slots {@code gathered} found claimed but unpublished, if any. Runs no user code. */
  void start(Abandonment gathered) {
    Throwable cause = gathered.stragglerCause();
    if (gathered.stragglers().isEmpty() || cause == null) {
      return;
    }
    List<Long> slots = new ArrayList<>(gathered.stragglers());
    try {
      Thread watcher = new Thread(() -> watch(slots, cause), "ringbatch-" + name + "-straggler");
      watcher.setDaemon(true);
      watcher.start();
    } catch (Throwable noThread) { // out of memory or threads: a close must not wait for a producer instead
      SafeLog.log(LOG, Level.ERROR, "batcher '" + name + "': no thread could be started to watch slots " + slots
          + ", claimed but not published when it closed; an item published there will not be failed", noThread);
    }
  }

  /** Until every slot is published: fails each item as it appears, in any order. */
  private void watch(List<Long> slots, Throwable cause) {
    long start = System.nanoTime();
    long pause = FIRST_PAUSE_NANOS;
    boolean reported = false;
    while (true) {
      slots.removeIf(sequence -> settle(sequence, cause));
      if (slots.isEmpty()) {
        return;
      }
      if (!reported && System.nanoTime() - start > REPORT_AFTER_NANOS) {
        reported = true;
        SafeLog.log(LOG, Level.WARNING, "batcher '" + name + "': slots " + slots + " were claimed "
            + TimeUnit.NANOSECONDS.toSeconds(REPORT_AFTER_NANOS) + " s ago and are still not published; their"
            + " producers are stopped between claim and publish. Still watching", null);
      }
      LockSupport.parkNanos(this, pause);
      pause = Math.min(2 * pause, MAX_PAUSE_NANOS);
      Thread.interrupted(); // our own thread: an interrupt must not turn the wait into a spin
    }
  }

  /** If {@code sequence} is published, fails its item (if it is one) and returns true. */
  private boolean settle(long sequence, Throwable cause) {
    if (!ring.isAvailable(sequence)) {
      return false;
    }
    SubmissionSlot slot = ring.get(sequence);
    if (slot.kind == SubmissionSlot.ITEM) {
      completer.failLate(slot.future(), cause);
    }
    slot.mark(SubmissionSlot.EMPTY);
    return true;
  }
}
