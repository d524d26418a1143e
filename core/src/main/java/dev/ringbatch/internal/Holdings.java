package dev.ringbatch.internal;

import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import dev.ringbatch.BatcherClosedException;
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
final class Holdings<T, R> {
  private static final System.Logger LOG = System.getLogger(CoalescingConsumer.class.getName());
  /** How long a consumer failing its own holdings lets its recorders go first before it tells the callers. */
  private static final long RECORDERS_FIRST_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

  private final String name;
  private final RingBuffer<SubmissionSlot> ring;
  private final Sequence consumed;
  private final BatchWriter<T, R> writer;
  private final BatchCompleter completer;
  private final StragglerWatch stragglers;

  Holdings(String name, RingBuffer<SubmissionSlot> ring, Sequence consumed, BatchWriter<T, R> writer,
      BatchCompleter completer) {
    this.name = name;
    this.ring = ring;
    this.consumed = consumed;
    this.writer = writer;
    this.completer = completer;
    this.stragglers = new StragglerWatch(name, ring, completer);
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
        into.straggler(sequence, cause); // failed once published, by a thread of its own
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
  void count(Abandonment gathered) {
    completer.countAbandoned(gathered);
  }

  /**
   * Tells the callers what {@link #gather} gathered (user code, once the count is out) as soon as
   * {@code recordersTold} completes, so that every recorder includes an item whose future is done; or at
   * {@code until} if a recorder still blocks then.
   */
  void tellAfter(CompletableFuture<Void> recordersTold, Abandonment gathered, long until) {
    Threads.awaitQuietly(recordersTold, until);
    completer.tellAbandoned(gathered);
  }

  /** Tells the recorders what {@link #gather} gathered: user code, apart from the callers (it may block). */
  void record(Abandonment gathered) {
    completer.recordAbandoned(gathered);
  }

  /**
   * The consumer's own ending of what {@link #gather} gathered, when no close took it: counted first, then told, as
   * a close does. The recorders are told on a thread of their own, completing {@code recorded} (which a close waits
   * for before its recordClosed), so that neither a blocking recorder nor a blocking dependent action holds up the
   * other. Consumer thread; if this throws, the caller completes {@code recorded}.
   */
  void failOwn(Abandonment gathered, CompletableFuture<Void> recorded) {
    count(gathered);
    String unwatched = watchStragglers(gathered); // before any user code, which may block
    Runnable record = () -> {
      try {
        record(gathered);
      } finally {
        recorded.complete(null);
      }
    };
    if (!Threads.startDaemon("ringbatch-" + name + "-recorders", record)) {
      record.run(); // out of memory or threads
    }
    tellAfter(recorded, gathered, System.nanoTime() + RECORDERS_FIRST_NANOS);
    if (unwatched != null) {
      SafeLog.log(LOG, System.Logger.Level.ERROR, unwatched, null);
    }
  }

  /**
   * Starts watching the slots {@code gathered} found claimed but unpublished ({@link StragglerWatch}); returns a
   * line to log (user code: the caller logs it where user code may run) if no thread could watch them.
   */
  @Nullable String watchStragglers(Abandonment gathered) {
    return stragglers.start(gathered);
  }
}
