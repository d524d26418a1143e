package dev.ringbatch.internal.consume;

import com.lmax.disruptor.RingBuffer;
import dev.ringbatch.internal.ring.SubmissionSlot;
import dev.ringbatch.internal.shared.SafeLog;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * Fails the items of slots an abandoning close found claimed but not published ({@link Holdings}): a producer
 * descheduled between its claim and its publish (no user code runs there, but the OS may stop a thread anywhere)
 * that had read the batcher open publishes an accepted item later, into a ring nobody reads any more. Whoever ran
 * the close's user code watches those slots after it ({@link CloseHelper}, or the consumer failing its own
 * holdings), parked with a growing pause, and fails and counts each item as it appears; a tombstone (the producer
 * read the batcher closing) needs nothing. Nobody else reads these slots after a take-over, and producers cannot
 * claim them again: the consumer's sequence no longer moves, so the ring never wraps onto them. A slot its producer
 * never publishes (it died between the two) keeps the watching thread, and the batcher it holds, for the life of
 * the process (logged once after 60 s), unless that thread is not a daemon (a consumer's, from a factory): it stops
 * watching then, so as never to keep the JVM from exiting.
 */
public final class StragglerWatch {
  private static final System.Logger LOG = System.getLogger(StragglerWatch.class.getName());
  private static final long FIRST_PAUSE_NANOS = TimeUnit.MICROSECONDS.toNanos(100);
  /** The longest pause while a late item's caller may still be waiting with a short timeout. */
  private static final long MAX_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
  /** The pause once a slot is reported: its producer is stopped, or died, and nothing hurries. */
  private static final long SLOW_PAUSE_NANOS = TimeUnit.SECONDS.toNanos(1);
  /** After this, a slot still unpublished is reported once: its producer is stopped, or died, between the two. */
  private static final long REPORT_AFTER_NANOS = TimeUnit.SECONDS.toNanos(60);

  private final String name;
  private final RingBuffer<SubmissionSlot> ring;
  private final BatchCompleter completer;
  private final List<Long> slots;
  private final Throwable cause;

  private StragglerWatch(String name, RingBuffer<SubmissionSlot> ring, BatchCompleter completer, List<Long> slots,
      Throwable cause) {
    this.name = name;
    this.ring = ring;
    this.completer = completer;
    this.slots = slots;
    this.cause = cause;
  }

  /** A watch over the slots {@code gathered} found claimed but unpublished; null if there are none. */
  static @Nullable StragglerWatch of(String name, RingBuffer<SubmissionSlot> ring, BatchCompleter completer,
      Abandonment gathered) {
    Throwable cause = gathered.stragglerCause();
    if (gathered.stragglers().isEmpty() || cause == null) {
      return null;
    }
    return new StragglerWatch(name, ring, completer, new ArrayList<>(gathered.stragglers()), cause);
  }

  /** Until every slot of every watch is published: fails each item as it appears, in any order. */
  public static void watchAll(List<StragglerWatch> watches) {
    List<StragglerWatch> left = new ArrayList<>(watches);
    long start = System.nanoTime();
    long pause = FIRST_PAUSE_NANOS;
    boolean reported = false;
    while (true) {
      left.removeIf(StragglerWatch::settleSome);
      if (left.isEmpty()) {
        return;
      }
      if (!reported && System.nanoTime() - start > REPORT_AFTER_NANOS) {
        reported = true;
        boolean daemon = Thread.currentThread().isDaemon(); // one that is not must not keep the JVM from exiting
        left.forEach(watch -> watch.report(daemon));
        if (!daemon) {
          return;
        }
      }
      LockSupport.parkNanos(StragglerWatch.class, pause);
      pause = Math.min(2 * pause, reported ? SLOW_PAUSE_NANOS : MAX_PAUSE_NANOS);
      Thread.interrupted(); // an interrupt must not turn the wait into a spin
    }
  }

  private void report(boolean watching) {
    SafeLog.log(LOG, Level.WARNING, "batcher '" + name + "': slots " + slots + " were claimed "
        + TimeUnit.NANOSECONDS.toSeconds(REPORT_AFTER_NANOS) + " s ago and are still not published; their"
        + " producers are stopped between claim and publish. " + (watching ? "Still watching, once a second"
        : "Not watched any longer (the watching thread, the consumer's, is not a daemon): an item published there"
        + " will not be failed"), null);
  }

  /** Fails the items of the slots published by now; true once none is left. */
  private boolean settleSome() {
    slots.removeIf(this::settle);
    return slots.isEmpty();
  }

  /** If {@code sequence} is published, fails its item (if it is one) and returns true. */
  private boolean settle(long sequence) {
    if (!ring.isAvailable(sequence)) {
      return false;
    }
    SubmissionSlot slot = ring.get(sequence);
    try {
      if (slot.kind == SubmissionSlot.ITEM) {
        completer.failLate(slot.future(), cause); // its dependent actions run here, on this thread
      }
    } catch (Throwable own) { // failLate guards user code: only an Error of our own; the other slots go on
      SafeLog.log(LOG, Level.ERROR, "batcher '" + name + "': failing the item of slot " + sequence + " failed", own);
    } finally {
      slot.mark(SubmissionSlot.EMPTY);
    }
    return true;
  }
}
