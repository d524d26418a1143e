package dev.ringbatch.internal.consume;

import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import dev.ringbatch.BatchLimits;
import dev.ringbatch.Ticker;
import dev.ringbatch.internal.pacing.AdaptiveLimits;
import dev.ringbatch.internal.ring.PublishGate;
import dev.ringbatch.internal.ring.SubmissionSlot;
import dev.ringbatch.internal.shared.Checks;
import dev.ringbatch.internal.shared.SafeLog;
import java.lang.System.Logger.Level;
import java.util.function.LongSupplier;

/**
 * Coalesce: the consumer's batch being filled, and when it goes to the writer. Takes a run of ring slots into
 * the {@link PendingBatch}, releases them to producers, and hands the batch to its {@link BatchWriter} when the
 * ring runs dry, when the batch reaches its item or byte limit, or when its linger ends (or a flush needs it).
 * Owned by the {@link CoalescingConsumer} and called on its thread only; a close reaches the batch only through
 * {@link #failHoldings}, after the hand-over gave it the holdings.
 */
final class Coalescer<T, R> {
  private static final System.Logger ADAPTIVE_LOG = System.getLogger(AdaptiveLimits.class.getName());

  private final String name;
  private final RingBuffer<SubmissionSlot> ring;
  private final Sequence consumed;
  private final ConsumerWaitStrategy waitStrategy;
  private final BatchWriter<T, R> writer;
  private final HandOver handOver;
  private final FlushWaiters flushWaiters;
  private final LongSupplier tickerRead;
  /** Told of every release of slots, to wake producers waiting for room. */
  private final PublishGate gate;
  private final Holdings<T, R> holdings;
  /** The limits, read once per run of available slots. */
  private final ConsumerLimits limits;
  /**
   * The batch being filled. Plain: a close reads it only after the hand-over CAS (or the consumer's end)
   * that orders it after the consumer's last write; the hot loop reads it per item.
   */
  private PendingBatch<T, R> batch;

  /** The last sequence taken into a batch (or past, a marker). */
  private long lastTaken = -1;
  /** The last sequence released to producers through {@link #release}. */
  private long released = -1;
  private long batchStart;

  Coalescer(String name, RingBuffer<SubmissionSlot> ring, Sequence consumed, ConsumerWaitStrategy waitStrategy,
      BatchWriter<T, R> writer, HandOver handOver, FlushWaiters flushWaiters, ConsumerLimits limits, Ticker ticker,
      PublishGate gate, Holdings<T, R> holdings) {
    this.name = name;
    this.ring = ring;
    this.consumed = consumed;
    this.waitStrategy = waitStrategy;
    this.writer = writer;
    this.handOver = handOver;
    this.flushWaiters = flushWaiters;
    this.limits = limits;
    this.tickerRead = ticker::read;
    this.gate = gate;
    this.holdings = holdings;
    this.batch = new PendingBatch<>(limits.current().maxBatchSize(), ring.getBufferSize());
  }

  /** The batch being filled. */
  PendingBatch<T, R> batch() {
    return batch;
  }

  /** The last sequence taken. */
  long lastTaken() {
    return lastTaken;
  }

  /** The limits for the coming run of slots. */
  BatchLimits forRun() {
    return limits.forRun();
  }

  /** Takes slots {@code from..to}; returns true when it met the close marker and wrote everything before it. */
  boolean take(long from, long to) {
    BatchLimits l = limits.forRun();
    for (long sequence = from; sequence <= to; sequence++) {
      SubmissionSlot slot = ring.get(sequence);
      byte kind = slot.kind;
      if (kind == SubmissionSlot.ITEM) {
        long weight = slot.weight;
        if (!batch.isEmpty() && weight > l.maxBatchBytes() - batch.weight()) {
          write(sequence - 1); // the item would push the batch past its byte limit: it waits in its slot
          l = limits.forRun(); // limits set meanwhile (by the sink, say) apply from the next batch on
        }
        if (batch.isEmpty()) {
          batchStart = l.linger().isZero() ? 0 : readTicker(); // before the add: a close then finds it unread
        }
        batch.add(slot.item(), slot.future(), weight, sequence, slot.stamp); // added, then emptied: never in neither place
        slot.mark(SubmissionSlot.EMPTY);
        lastTaken = sequence;
        if (batch.size() >= l.maxBatchSize() || batch.weight() >= l.maxBatchBytes()) {
          write(sequence);
          l = limits.forRun();
        }
      } else {
        slot.mark(SubmissionSlot.EMPTY);
        lastTaken = sequence;
        if (kind == SubmissionSlot.CLOSE) {
          release(sequence);
          if (!batch.isEmpty()) {
            write(sequence); // everything before the marker goes out
          }
          finishIdle(sequence);
          return true;
        }
      }
    }
    release(to);
    writeIfDue(l);
    return false;
  }

  /**
   * The ring ran dry or the wait ended: writes the batch unless it may linger, or an async sink is at its
   * in-flight limit (the batch then keeps coalescing; a settling batch wakes the consumer).
   */
  void writeIfDue(BatchLimits l) {
    if (batch.isEmpty()) {
      finishIdle(lastTaken);
    } else if (!lingers(l) && writer.ready()) {
      write(lastTaken);
    }
  }

  /**
   * Moves flush progress over items that are not in flight; a flush it satisfies is completed as a call out,
   * since its dependent actions are user code.
   */
  private void finishIdle(long sequence) {
    if (writer.finishIdle(sequence)) {
      handOver.callOut(flushWaiters::completeFinished);
    }
  }

  /** Gives slots up to {@code sequence} back to producers, and wakes those waiting for room. */
  void release(long sequence) {
    if (sequence > released) {
      released = sequence;
      consumed.set(sequence);
      gate.roomFreed();
    }
  }

  /** Whether the batch waits for more items; if so, arms the wait's deadline. */
  private boolean lingers(BatchLimits l) {
    long lingerNanos = Checks.saturatedNanos(l.linger());
    if (lingerNanos == 0 || batch.size() >= l.maxBatchSize()
        || flushWaiters.maxTarget() >= batch.firstSequence()) { // a flush waits for this batch
      return false;
    }
    AdaptiveLimits a = limits.runController();
    if (a != null && !a.mayLinger(batchStart)) {
      return false; // the first item after an idle spell, or a lone caller's: never delayed
    }
    long elapsed = readTicker() - batchStart;
    if (elapsed >= lingerNanos || elapsed < 0) { // negative: the clock went back, or changed origin (GuardedTicker)
      return false;
    }
    waitStrategy.setDeadline(batchStart + lingerNanos, lingerNanos); // wraps like nanoTime; compared by difference
    return true;
  }

  /** Hands the batch (every item up to {@code lastSequence}) to the writer. */
  private void write(long lastSequence) {
    waitStrategy.clearDeadline();
    release(lastSequence); // producers may reuse these slots while the sink works
    AdaptiveLimits a = limits.steering();
    int size = batch.size();
    if (a != null) {
      a.writeStarting(a.needsStamps() ? batch.copyStamps(a) : 0);
    }
    PendingBatch<T, R> next = writer.write(batch, lastSequence);
    if (next != batch) {
      // Only on a change (async): a reference store into this long-lived object dirties a G1 card that a
      // refinement thread must then scan; once per batch that cost ~15% of a core in the offer benchmark.
      batch = next;
    }
    if (a != null) {
      // A batch of one (a lone caller's) ends with the writer's own readings: one more ticker read here is one more
      // call out after the caller was woken, and it cost a lone caller its spin (P4 p50 0.34 -> 0.68 us on JDK 25:
      // docs/results/issue37-default-switch-side-by-side.txt).
      // A batch of two or more ends once its callers are woken and its recorders told: that work (with hundreds of
      // callers, longer than the sink) is the batch's, and counted towards the next it would pass for an idle gap,
      // which stops every linger and every epoch. Only such a batch may be followed by a linger anyway.
      long start = writer.lastWriteStart();
      long sinkNanos = writer.lastSinkNanos();
      long end = size >= 2 ? readTicker() : start + Math.max(0, sinkNanos);
      // Whether callers were already coming back behind the batch (then the gap before the next is not idle): a
      // lone caller's batch, which reads nothing more, counts as followed by nobody.
      boolean followed = size >= 2 && ring.getCursor() > lastSequence;
      String change = a.writeEnded(size, start, sinkNanos, end, followed);
      if (change != null) {
        handOver.callOut(() -> SafeLog.log(ADAPTIVE_LOG, Level.DEBUG, "batcher '" + name + "': adaptive limits now "
            + a.published() + ": " + change, null));
      }
    }
  }

  /**
   * Reads the ticker, which is user code: as every call out, in the {@link HandOver#CALLING_OUT} state, so a
   * close can take over from a ticker that blocks. The wait strategy reads the linger clock through this.
   */
  long readTicker() {
    return handOver.callOut(tickerRead);
  }

  /** See {@link CoalescingConsumer#failHoldings}: the batch being filled goes with the rest of the holdings. */
  void failHoldings(Abandonment into, long until, String closeDescription) {
    holdings.gather(batch, closeDescription, into, until);
    batch = new PendingBatch<>(1, 1); // the closed batcher keeps nothing of it: a sink still writing holds its view
    if (!into.stragglers().isEmpty()) {
      gate.stopAwaitingPublishes(); // stats(), the report's among them, must not wait again for those slots
    }
  }
}
