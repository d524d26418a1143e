package dev.ringbatch.internal;

import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import dev.ringbatch.BatcherClosedException;
import java.lang.System.Logger.Level;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * What a close takes over from the consumer: the batch being filled (never written), the batches in the sink
 * (outcome unknown, or not written if waiting to retry) and every unread ring slot. {@link #gather} settles each
 * once and gathers its items into an {@link Abandonment}; nobody is told there. Called by the closing thread once
 * the hand-over is {@code TAKEN}, or by the consumer itself when orphaned; never while the consumer runs.
 */
final class Holdings<T, R> {
  /** How long the scan of unread slots waits for a producer between its claim and its publish. */
  private static final long PUBLISH_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(200);
  /** How long a slot still unpublished after that is waited for, parked, once the close is over. */
  static final long STRAGGLER_WAIT_NANOS = TimeUnit.SECONDS.toNanos(60);
  private static final long STRAGGLER_FIRST_PAUSE_NANOS = TimeUnit.MICROSECONDS.toNanos(100);
  private static final long STRAGGLER_MAX_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
  private static final System.Logger LOG = System.getLogger(Holdings.class.getName());

  private final String name;
  private final RingBuffer<SubmissionSlot> ring;
  private final Sequence consumed;
  private final BatchWriter<T, R> writer;
  private final BatchCompleter completer;

  Holdings(String name, RingBuffer<SubmissionSlot> ring, Sequence consumed, BatchWriter<T, R> writer,
      BatchCompleter completer) {
    this.name = name;
    this.ring = ring;
    this.consumed = consumed;
    this.writer = writer;
    this.completer = completer;
  }

  /** Gathers the items of {@code filling} (the consumer's batch), of the batches in flight and of unread slots. */
  void gather(PendingBatch<T, R> filling, String description, Abandonment into) {
    if (filling.state.compareAndSet(PendingBatch.FILLING, PendingBatch.SETTLING)) {
      filling.seal(); // left SETTLING, never cleared: a consumer back from a ticker read finds it taken
      completer.abandon(filling, notWritten(description), false, into);
    }
    writer.failInFlight(description, into);
    gatherUnread(notWritten(description), into);
  }

  private BatcherClosedException notWritten(String description) {
    return new BatcherClosedException(name, ring.getBufferSize(), true, false,
        description + " before the item was written; item abandoned");
  }

  /** Gathers every item in slots the consumer has not taken. */
  private void gatherUnread(BatcherClosedException cause, Abandonment into) {
    long last = ring.getCursor();
    for (long sequence = consumed.get() + 1; sequence <= last; sequence++) {
      if (!awaitPublished(sequence)) {
        into.straggler(sequence, cause); // failed once published, after everybody else is told
        into.note("slot " + sequence + " was claimed but not published within "
            + TimeUnit.NANOSECONDS.toMillis(PUBLISH_WAIT_NANOS) + " ms; its item, if accepted, fails once its"
            + " producer publishes it");
        continue;
      }
      SubmissionSlot slot = ring.get(sequence);
      if (slot.kind == SubmissionSlot.ITEM) {
        into.add(slot.future(), cause);
      }
      slot.mark(SubmissionSlot.EMPTY);
    }
  }

  /**
   * Fails the accepted items of the slots {@code gathered} found claimed but unpublished, as each is published: a
   * producer descheduled between its claim and its publish (no user code runs there) publishes the item it
   * accepted later, into a ring nobody reads any more. Waits parked, for each at most {@link #STRAGGLER_WAIT_NANOS}
   * from its start; runs after the close's report, on a thread the close does not wait for past its grace. A slot
   * still unpublished then belongs to a producer that stopped between the two (a StackOverflowError at the publish
   * call, say), whose caller was told by that throwable: logged, nothing to fail.
   */
  void failStragglers(Abandonment gathered) {
    List<Long> stragglers = gathered.stragglers();
    Throwable cause = gathered.stragglerCause();
    if (stragglers.isEmpty() || cause == null) {
      return;
    }
    long deadline = System.nanoTime() + STRAGGLER_WAIT_NANOS;
    for (long sequence : stragglers) {
      if (!awaitStraggler(sequence, deadline)) {
        SafeLog.log(LOG, Level.ERROR, "batcher '" + name + "': slot " + sequence + " was claimed and never"
            + " published; its producer stopped between the two", null);
        continue;
      }
      SubmissionSlot slot = ring.get(sequence);
      if (slot.kind == SubmissionSlot.ITEM) {
        Abandonment late = new Abandonment();
        late.add(slot.future(), cause);
        completer.countAbandoned(late);
        completer.tellAbandoned(late);
      }
      slot.mark(SubmissionSlot.EMPTY);
    }
  }

  /** Waits, parked with a growing pause, until {@code sequence} is published or {@code deadline} passes. */
  private boolean awaitStraggler(long sequence, long deadline) {
    long pause = STRAGGLER_FIRST_PAUSE_NANOS;
    while (!ring.isAvailable(sequence)) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        return false;
      }
      LockSupport.parkNanos(this, Math.min(pause, left));
      pause = Math.min(2 * pause, STRAGGLER_MAX_PAUSE_NANOS);
      Thread.interrupted(); // a stray interrupt of a closing or consumer thread must not turn this into a spin
    }
    return true;
  }

  /** Waits for a producer between its claim and its publish: no user code runs there, so it is short. */
  private boolean awaitPublished(long sequence) {
    long start = System.nanoTime();
    while (!ring.isAvailable(sequence)) {
      if (System.nanoTime() - start > PUBLISH_WAIT_NANOS) {
        return false;
      }
      Thread.onSpinWait();
    }
    return true;
  }
}
