package dev.ringbatch.internal;

import com.lmax.disruptor.AlertException;
import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import com.lmax.disruptor.SequenceBarrier;
import com.lmax.disruptor.TimeoutException;
import dev.ringbatch.AsyncBatchSink;
import dev.ringbatch.BatchLimits;
import dev.ringbatch.BatchSink;
import dev.ringbatch.RetryPolicy;
import dev.ringbatch.Ticker;
import java.lang.System.Logger.Level;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * The consumer loop: takes what the ring holds, coalesces it into a {@link PendingBatch} and hands the
 * batch to the sink when the ring runs dry, when the batch reaches its item or byte limit, or when its
 * linger ends. Runs on the batcher's one consumer thread; every method without a note is called there.
 *
 * <p>It drives the ring with a {@link SequenceBarrier} rather than the Disruptor's
 * {@code BatchEventProcessor}, for three reasons: it releases slots to producers as soon as it has copied
 * them out (before the sink call, not after), it can hold a batch across waits (linger) and it stops by a
 * hand-over protocol that an abandoning close can rely on.
 *
 * <h2>Hand-over</h2>
 * {@code phase} is {@code IDLE} between batches and {@code WRITING} during a sink call; the consumer moves
 * it with CAS. An abandoning close swaps in {@code HANDED_OVER}: if it found {@code WRITING}, the consumer
 * is inside the sink and will touch nothing after the call returns (its CAS fails); if it found {@code IDLE},
 * the consumer stops at its next CAS or wait, and the close waits briefly for it to stop. Either way the
 * close then owns the pending batch and the unread slots, and each future is failed by exactly one side.
 */
final class CoalescingConsumer<T, R> implements Runnable {
  static final int IDLE = 0;
  static final int WRITING = 1;
  static final int HANDED_OVER = 2;

  private static final System.Logger LOG = System.getLogger(CoalescingConsumer.class.getName());
  /** A run shorter than this means the consumer is keeping pace with producers item by item. */
  static final int SMALL_RUN = 256;
  /** Local spins after a small run while producers are busy, a few microseconds, touching no shared memory. */
  static final int PAUSE_SPINS = 256;
  private static final long ASYNC_WAIT_NANOS = 100_000;

  private final String name;
  private final RingBuffer<SubmissionSlot> ring;
  private final SequenceBarrier barrier;
  private final Sequence consumed;
  private final ConsumerWaitStrategy waitStrategy;
  private final @Nullable BatchSink<T, R> sink;
  private final @Nullable AsyncBatchSink<T, R> asyncSink;
  private final RetryPolicy retryPolicy;
  private PendingBatch<T, R> batch;
  /** Async sinks only: batches ready to fill, and the tickets of dispatched batches in ring order. */
  private final ConcurrentLinkedQueue<PendingBatch<T, R>> free = new ConcurrentLinkedQueue<>();
  private final ArrayDeque<Ticket<T, R>> inFlight = new ArrayDeque<>();
  /** Guards {@link #inFlight} and {@link #idleFinish}; taken once per async batch, never on the sync path. */
  private final Object inFlightLock = new Object();
  private long idleFinish = -1;
  private final Ticker ticker;
  private final ConsumerCounters counters = new ConsumerCounters();
  private final GuardedStatsRecorders recorders;
  private final FlushWaiters flushWaiters;
  private final AtomicInteger phase = new AtomicInteger(IDLE);
  private final CompletableFuture<Void> terminated = new CompletableFuture<>();

  /** Replaced by any thread through {@link #setLimits}; read once per run of available slots. */
  private volatile BatchLimits limits;
  /** Whether the consumer reached the close marker and wrote everything before it. */
  private volatile boolean drained;

  private long lastRead = -1;
  private long batchStart;

  CoalescingConsumer(String name, RingBuffer<SubmissionSlot> ring, SequenceBarrier barrier, Sequence consumed,
      ConsumerWaitStrategy waitStrategy, @Nullable BatchSink<T, R> sink, @Nullable AsyncBatchSink<T, R> asyncSink,
      int maxInFlight, RetryPolicy retryPolicy, BatchLimits limits, Ticker ticker, GuardedStatsRecorders recorders,
      FlushWaiters flushWaiters) {
    this.name = name;
    this.ring = ring;
    this.barrier = barrier;
    this.consumed = consumed;
    this.waitStrategy = waitStrategy;
    this.sink = sink;
    this.asyncSink = asyncSink;
    this.retryPolicy = retryPolicy;
    this.limits = limits;
    this.ticker = ticker;
    this.recorders = recorders;
    this.flushWaiters = flushWaiters;
    this.batch = new PendingBatch<>(limits.maxBatchSize(), ring.getBufferSize());
    if (asyncSink != null) {
      for (int i = 0; i < maxInFlight; i++) {
        free.add(new PendingBatch<>(limits.maxBatchSize(), ring.getBufferSize()));
      }
    }
  }

  /** A dispatched async batch, in ring order; {@code done} is guarded by {@code inFlightLock}. */
  private static final class Ticket<T, R> {
    final PendingBatch<T, R> batch;
    final long lastSequence;
    boolean done;

    Ticket(PendingBatch<T, R> batch, long lastSequence) {
      this.batch = batch;
      this.lastSequence = lastSequence;
    }
  }

  @Override
  public void run() {
    waitStrategy.bindConsumer(Thread.currentThread());
    long next = 0;
    try {
      while (true) {
        long available;
        try {
          available = barrier.waitFor(next);
        } catch (TimeoutException lingerEndedOrFlushRequested) {
          onWaitEnded();
          continue;
        } catch (AlertException alert) {
          if (phase.get() == HANDED_OVER) {
            return;
          }
          barrier.clearAlert();
          continue;
        } catch (InterruptedException interrupted) {
          if (phase.get() == HANDED_OVER) {
            return;
          }
          LOG.log(Level.WARNING, "consumer of batcher '" + name + "' was interrupted; only close() stops it");
          continue;
        }
        if (available < next) {
          Thread.onSpinWait(); // claimed by a producer but not yet published
          continue;
        }
        if (process(next, available)) {
          awaitInFlight();
          drained = true;
          return;
        }
        if (available - next + 1 < SMALL_RUN && ring.getCursor() > available) {
          pause(); // producers are already past this small run: let them get ahead
        }
        next = available + 1;
      }
    } catch (HandedOver handedOver) {
      return; // the abandoning close owns what is left
    } finally {
      terminated.complete(null);
    }
  }

  /**
   * After a small run, spins locally before polling the ring again. A consumer that keeps pace with a busy
   * producer otherwise polls the cursor and availability flags in a tight loop; every poll pulls those cache
   * lines away from the producer, whose next claim must pull them back, so each item costs cross-core
   * transfers (open-loop throughput fell from ~100 to ~8 M items/s in such runs). The pause touches no shared
   * memory, delays no item already taken, and happens only when producers have already claimed sequences past
   * the run: a lone caller, whose ring is empty by then, never meets it.
   */
  private static void pause() {
    for (int i = 0; i < PAUSE_SPINS; i++) {
      Thread.onSpinWait();
    }
  }

  /** Takes slots {@code from..to}; returns true when it met the close marker and wrote everything before it. */
  private boolean process(long from, long to) {
    BatchLimits l = limits;
    try {
      for (long sequence = from; sequence <= to; sequence++) {
        SubmissionSlot slot = ring.get(sequence);
        byte kind = slot.kind;
        if (kind == SubmissionSlot.ITEM) {
          Object item = slot.item;
          CompletableFuture<Object> future = slot.future;
          long weight = slot.weight;
          slot.mark(SubmissionSlot.EMPTY);
          if (!batch.isEmpty() && weight > l.maxBatchBytes() - batch.weight()) {
            write(sequence - 1); // the item would push the batch past its byte limit: it starts the next one
          }
          if (batch.isEmpty() && !l.linger().isZero()) {
            batchStart = ticker.read();
          }
          batch.add(item, future, weight);
          lastRead = sequence;
          if (batch.size() >= l.maxBatchSize() || batch.weight() >= l.maxBatchBytes()) {
            write(sequence);
          }
        } else {
          slot.mark(SubmissionSlot.EMPTY);
          lastRead = sequence;
          if (kind == SubmissionSlot.CLOSE) {
            endOfRun(sequence, null);
            return true;
          }
        }
      }
      endOfRun(to, l);
    } catch (HandedOver handedOver) {
      throw handedOver;
    } catch (Throwable bug) {
      LOG.log(Level.ERROR, "consumer of batcher '" + name + "' failed outside the sink; failing its batch", bug);
      if (!batch.isEmpty()) {
        counters.recordBatch(batch.size(), batch.failAndClear(bug));
      }
    }
    return false;
  }

  /**
   * The ring ran dry at {@code sequence}: release the slots read so far, then write the batch unless it
   * lingers ({@code limits} null means "write now", as at the close marker).
   */
  private void endOfRun(long sequence, @Nullable BatchLimits l) {
    consumed.set(sequence);
    if (batch.isEmpty()) {
      finish(sequence);
    } else if (l == null) {
      write(sequence); // the close marker: everything goes out
    } else if (!linger(l)) {
      write(sequence, false);
    }
  }

  /** Decides whether the batch waits for more items, and if so arms the deadline. */
  private boolean linger(BatchLimits l) {
    long lingerNanos = Checks.saturatedNanos(l.linger());
    if (lingerNanos == 0 || batch.size() >= l.maxBatchSize() || !flushWaiters.isEmpty()) {
      return false;
    }
    long deadline = batchStart + lingerNanos;
    if (ticker.read() - deadline >= 0) {
      return false;
    }
    waitStrategy.setDeadline(deadline);
    return true;
  }

  /** The wait ended early: the linger deadline passed or flush() asked for the batch. */
  private void onWaitEnded() {
    waitStrategy.setDeadline(ConsumerWaitStrategy.NO_DEADLINE);
    if (!batch.isEmpty()) {
      write(lastRead, false);
    }
  }

  /** Hands the batch (all items up to {@code lastSequence}) to the sink and completes its futures. */
  private void write(long lastSequence) {
    write(lastSequence, true);
  }

  /**
   * Writes the batch. With an async sink at its in-flight limit, a batch that may still grow ({@code must}
   * false: the ring ran dry, a linger ended) stays open and keeps coalescing; the completion that frees a
   * slot wakes the consumer, which dispatches it then. A full batch, or one at the close marker, waits for
   * the slot.
   */
  private void write(long lastSequence, boolean must) {
    waitStrategy.setDeadline(ConsumerWaitStrategy.NO_DEADLINE);
    consumed.set(lastSequence); // producers may reuse these slots while the sink works
    if (asyncSink != null) {
      if (!must && free.isEmpty()) {
        return; // at the limit: keep coalescing; a completion will wake the consumer
      }
      dispatch(asyncSink, lastSequence);
      return;
    }
    if (!phase.compareAndSet(IDLE, WRITING)) {
      throw HandedOver.INSTANCE;
    }
    if (Thread.interrupted()) {
      // Only an abandoning close may interrupt this thread, and it does so after the hand-over, when no
      // further sink call happens: any other interrupt is stray and must not fail the next batch.
      LOG.log(Level.WARNING, "the consumer thread of batcher '" + name + "' was interrupted;"
          + " interrupt cleared before the sink call (use close() to stop a batcher)");
    }
    Throwable failure = null;
    long writeNanos = 0;
    batch.writing(true);
    long firstFailure = 0; // taken only when a write fails: no clock read per batch on the normal path
    for (int attempt = 1; ; attempt++) {
      failure = null;
      try {
        long start = ticker.read();
        try {
          sink.write(batch);
        } finally {
          writeNanos += ticker.read() - start;
        }
      } catch (Throwable t) {
        failure = t;
      }
      if (failure == null) {
        break;
      }
      if (attempt == 1) {
        firstFailure = System.nanoTime();
      }
      if (!retry(attempt + 1, failure, System.nanoTime() - firstFailure)) {
        break;
      }
    }
    batch.writing(false);
    if (!phase.compareAndSet(WRITING, IDLE)) {
      throw HandedOver.INSTANCE;
    }
    complete(batch, failure, writeNanos);
    finish(lastSequence);
  }

  /**
   * Counts a written batch, tells the recorders, then completes its futures and clears it. Counting comes
   * first: a caller that sees its future done also sees its item in stats and metrics.
   */
  private void complete(PendingBatch<T, R> written, @Nullable Throwable failure, long writeNanos) {
    int size = written.size();
    int failed = written.failedCount(failure);
    counters.recordBatch(size, failed);
    recorders.recordBatch(size, written.weight(), writeNanos, failed);
    written.completeAndClear(failure);
    if (written.lastFailedFireAndForget() > 0) { // their callers cannot be told: logged, once per batch
      LOG.log(Level.WARNING, "batcher '" + name + "': " + written.lastFailedFireAndForget()
          + " fire-and-forget item(s) of a batch of " + size + " failed", written.lastFireAndForgetFailure());
    }
  }

  /**
   * Decides on and waits out a retry of the whole batch after {@code failure}; false to give up. The wait
   * happens inside the sink phase, so a close that times out meanwhile fails the batch as in the sink and
   * interrupts the wait.
   */
  private boolean retry(int attempt, Throwable failure, long elapsedNanos) {
    long wait = retryPolicy.backoffNanos(attempt, failure, elapsedNanos);
    if (wait < 0 || phase.get() == HANDED_OVER) {
      return false;
    }
    LOG.log(Level.WARNING, "batcher '" + name + "': a batch of " + batch.size() + " failed (" + failure
        + "); attempt " + attempt + " of " + retryPolicy.maxAttempts() + " in "
        + TimeUnit.NANOSECONDS.toMillis(wait) + " ms");
    recorders.recordRetry(attempt, failure);
    batch.resetOutcomes();
    try {
      TimeUnit.NANOSECONDS.sleep(wait);
    } catch (InterruptedException interrupted) {
      Thread.currentThread().interrupt(); // a close abandoning the batch: stop retrying
      return false;
    }
    return phase.get() != HANDED_OVER;
  }

  private void finish(long sequence) {
    if (asyncSink != null) {
      synchronized (inFlightLock) {
        if (!inFlight.isEmpty()) {
          idleFinish = sequence; // finished only once the batches before it complete
          return;
        }
        advance(sequence);
      }
      return;
    }
    advance(sequence);
  }

  private void advance(long sequence) {
    flushWaiters.advance(sequence);
  }

  // ---- async sinks ----

  /**
   * Hands the batch to the async sink and moves on to a free one, waiting for one (back-pressure) when
   * {@code maxInFlightBatches} are out. The hand-over protocol covers the {@code write} call itself, as for a
   * synchronous sink: a close that times out while {@code write} blocks fails this batch.
   */
  private void dispatch(AsyncBatchSink<T, R> async, long lastSequence) {
    PendingBatch<T, R> next = awaitFreeBatch();
    if (!phase.compareAndSet(IDLE, WRITING)) {
      throw HandedOver.INSTANCE;
    }
    PendingBatch<T, R> dispatched = batch;
    dispatched.writing(true);
    dispatched.state.set(PendingBatch.IN_FLIGHT);
    dispatched.startNanos = ticker.read();
    CompletionStage<?> stage;
    try {
      stage = async.write(dispatched);
      if (stage == null) {
        stage = CompletableFuture.failedFuture(
            new NullPointerException("the async sink returned null instead of a CompletionStage"));
      }
    } catch (Throwable t) {
      stage = CompletableFuture.failedFuture(t);
    }
    if (!phase.compareAndSet(WRITING, IDLE)) {
      throw HandedOver.INSTANCE; // the close fails this batch as the pending one
    }
    Ticket<T, R> ticket = new Ticket<>(dispatched, lastSequence);
    synchronized (inFlightLock) {
      inFlight.addLast(ticket);
    }
    batch = next;
    stage.whenComplete((ignored, failure) -> settle(ticket, failure));
  }

  /** Completes an async batch; runs on whichever thread completed its stage. */
  private void settle(Ticket<T, R> ticket, @Nullable Throwable failure) {
    PendingBatch<T, R> done = ticket.batch;
    if (!done.state.compareAndSet(PendingBatch.IN_FLIGHT, PendingBatch.SETTLED)) {
      return; // an abandoning close failed it already
    }
    Throwable cause = failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null
        ? failure.getCause() : failure;
    long writeNanos = ticker.read() - done.startNanos;
    done.writing(false);
    complete(done, cause, writeNanos);
    synchronized (inFlightLock) {
      ticket.done = true;
      long finished = -1;
      while (!inFlight.isEmpty() && inFlight.peekFirst().done) {
        finished = inFlight.pollFirst().lastSequence;
      }
      if (inFlight.isEmpty() && idleFinish > finished) {
        finished = idleFinish;
      }
      if (finished >= 0) {
        advance(finished);
      }
    }
    done.state.set(PendingBatch.IDLE);
    free.add(done);
    waitStrategy.wake(); // the consumer may hold an open batch for this slot, or wait for it or for the drain
  }

  private PendingBatch<T, R> awaitFreeBatch() {
    PendingBatch<T, R> next;
    while ((next = free.poll()) == null) {
      if (phase.get() == HANDED_OVER) {
        throw HandedOver.INSTANCE;
      }
      LockSupport.parkNanos(this, ASYNC_WAIT_NANOS);
    }
    return next;
  }

  /** At the close marker: waits until every dispatched batch has completed. */
  private void awaitInFlight() {
    if (asyncSink == null) {
      return;
    }
    while (true) {
      synchronized (inFlightLock) {
        if (inFlight.isEmpty()) {
          return;
        }
      }
      if (phase.get() == HANDED_OVER) {
        throw HandedOver.INSTANCE;
      }
      LockSupport.parkNanos(this, ASYNC_WAIT_NANOS);
    }
  }

  /**
   * Fails every dispatched batch not yet completed. Only after {@link #handOver()}; each batch is settled
   * once, here or by its completion, whichever wins the CAS.
   *
   * @return how many items it failed
   */
  int failInFlight(Throwable cause) {
    long count = 0;
    synchronized (inFlightLock) {
      for (Ticket<T, R> ticket : inFlight) {
        PendingBatch<T, R> b = ticket.batch;
        if (b.state.compareAndSet(PendingBatch.IN_FLIGHT, PendingBatch.SETTLED)) {
          b.writing(false);
          count += b.failAndClear(cause);
        }
      }
    }
    return (int) count;
  }

  // ---- called by other threads ----

  void setLimits(BatchLimits limits) {
    this.limits = limits;
  }

  BatchLimits limits() {
    return limits;
  }

  long finishedSequence() {
    return flushWaiters.finished();
  }

  boolean drained() {
    return drained;
  }

  ConsumerCounters counters() {
    return counters;
  }

  CompletableFuture<Void> terminated() {
    return terminated;
  }

  /** Called by an abandoning close; returns the phase it took over from. */
  int handOver() {
    int previous = phase.getAndSet(HANDED_OVER);
    barrier.alert();
    waitStrategy.wake();
    return previous;
  }

  /**
   * Fails the pending batch with {@code cause}. Only after {@link #handOver()}, and only once the consumer
   * is inside the sink or stopped, so that it no longer touches the batch.
   */
  int failPending(Throwable cause) {
    batch.writing(false);
    return batch.failAndClear(cause);
  }

  /** Thrown inside the consumer when an abandoning close took over; preallocated, no stack trace. */
  private static final class HandedOver extends RuntimeException {
    private static final long serialVersionUID = 1L;
    static final HandedOver INSTANCE = new HandedOver();

    private HandedOver() {
      super("handed over to an abandoning close", null, false, false);
    }
  }
}
