package dev.ringbatch.internal.consume;

import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import dev.ringbatch.BatcherClosedException;
import dev.ringbatch.internal.ring.PublishWait;
import dev.ringbatch.internal.ring.SubmissionSlot;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * What a close takes over from the consumer: the batch being filled (never written), the batches in the sink
 * (outcome unknown, or not written if waiting to retry) and every unread ring slot. {@link #gather} settles each
 * once and gathers its items into an {@link Abandonment}; nobody is told there, but later: {@link #count} before the
 * close's report, {@link #tell} (user code) after it. Called by the closing thread once the hand-over is
 * {@code TAKEN}, or by the consumer itself when orphaned; never while the consumer runs.
 */
public final class Holdings<T, R> {
  private final String name;
  private final RingBuffer<SubmissionSlot> ring;
  private final Sequence consumed;
  private final BatchWriter<T, R> writer;
  private final BatchCompleter completer;

  public Holdings(String name, RingBuffer<SubmissionSlot> ring, Sequence consumed, BatchWriter<T, R> writer,
      BatchCompleter completer) {
    this.name = name;
    this.ring = ring;
    this.consumed = consumed;
    this.writer = writer;
    this.completer = completer;
  }

  /**
   * Gathers the items of {@code filling} (the consumer's batch), of the batches in flight and of unread slots,
   * waiting for a producer between its claim and its publish until {@code until} at most.
   */
  void gather(PendingBatch<T, R> filling, String description, Abandonment into, long until) {
    if (filling.state.compareAndSet(PendingBatch.FILLING, PendingBatch.SETTLING)) {
      // left SETTLING, never cleared: a consumer back from a ticker read finds it taken
      completer.abandon(filling, notWritten(description), into);
    }
    writer.failInFlight(description, into);
    gatherUnread(notWritten(description), into, Math.max(0, Math.min(PublishWait.MAX_NANOS, until - System.nanoTime())));
  }

  private BatcherClosedException notWritten(String description) {
    return new BatcherClosedException(name, ring.getBufferSize(), true, false,
        description + " before the item was written; item abandoned");
  }

  /** Gathers every item in slots the consumer has not taken. */
  private void gatherUnread(BatcherClosedException cause, Abandonment into, long waitNanos) {
    long last = ring.getCursor();
    long free = last; // the slots given back to the ring: up to the first one still claimed
    PublishWait wait = new PublishWait(ring, waitNanos); // for all of them: k stragglers cost one wait
    for (long sequence = consumed.get() + 1; sequence <= last; sequence++) {
      if (!wait.published(sequence)) {
        free = Math.min(free, sequence - 1);
        into.straggler(sequence, cause); // failed once published, by the close's last step
        into.note("slot " + sequence + " was claimed but not published within "
            + TimeUnit.NANOSECONDS.toMillis(PublishWait.MAX_NANOS) + " ms; its item, if accepted, fails once its"
            + " producer publishes it");
        continue;
      }
      SubmissionSlot slot = ring.get(sequence);
      if (slot.kind == SubmissionSlot.ITEM) {
        into.add(slot.future(), cause);
      }
      slot.mark(SubmissionSlot.EMPTY);
    }
    wait.done();
    // Nobody reads these slots again: their room is the ring's (stats' remaining capacity). Not past a claimed
    // slot: the ring must never wrap onto it before its producer publishes (StragglerWatch).
    if (free > consumed.get()) {
      consumed.set(free);
    }
  }

  /** Counts what {@link #gather} gathered, before anybody is told. No user code. */
  public void count(Abandonment gathered) {
    completer.countAbandoned(gathered);
  }

  /** Tells the callers what {@link #gather} gathered (user code, once the count is out and the recorders told). */
  public void tell(Abandonment gathered) {
    completer.tellAbandoned(gathered);
  }

  /** Tells the recorders what {@link #gather} gathered: user code, before the callers, as for a written batch. */
  public void record(Abandonment gathered) {
    completer.recordAbandoned(gathered);
  }

  /**
   * The consumer's own ending of what {@link #gather} gathered, when no close took it: counted first, then told,
   * in the order a close tells them (the recorders, completing {@code recorded}, which a close waits for before
   * its own, then the callers). Consumer thread; returns the watch over its stragglers, for it to run last. If
   * this throws, the caller completes {@code recorded}.
   */
  @Nullable StragglerWatch failOwn(Abandonment gathered, CompletableFuture<Void> recorded) {
    count(gathered);
    try {
      record(gathered);
    } finally {
      recorded.complete(null);
    }
    tell(gathered);
    return watch(gathered);
  }

  /** The watch over the slots {@code gathered} found claimed but unpublished ({@link StragglerWatch}), or null. */
  public @Nullable StragglerWatch watch(Abandonment gathered) {
    return StragglerWatch.of(name, ring, completer, gathered);
  }
}
