package dev.ringbatch.internal.consume;

import com.lmax.disruptor.AlertException;
import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import com.lmax.disruptor.SequenceBarrier;
import com.lmax.disruptor.TimeoutException;
import dev.ringbatch.BatcherClosedException;
import dev.ringbatch.Ticker;
import dev.ringbatch.internal.pacing.SelfClock;
import dev.ringbatch.internal.ring.PublishGate;
import dev.ringbatch.internal.ring.PublishWait;
import dev.ringbatch.internal.ring.SubmissionSlot;
import dev.ringbatch.internal.shared.Backoff;
import dev.ringbatch.internal.shared.SafeLog;
import java.lang.System.Logger.Level;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * The consumer loop and the only reader of ring slots: takes what the ring holds, coalesces it into a
 * {@link PendingBatch} and hands the batch to its {@link BatchWriter} when the ring runs dry, when the batch
 * reaches its item or byte limit, or when its linger ends (or a flush needs it). Runs on the batcher's one
 * consumer thread; every method without a note is called there.
 *
 * <p>It drives the ring with a {@link SequenceBarrier} rather than the Disruptor's {@code BatchEventProcessor}:
 * it releases slots to producers before the sink call, it can hold a batch across waits (linger), and it stops
 * by the {@link HandOver} protocol. An item stays in its slot until it joins a batch: one that would push the
 * batch past its byte limit waits, unread, while the batch before it is written, so a close that takes over
 * then finds it in the ring.
 *
 * <p>When a close gives up waiting, its holdings (the batch being filled, the batch in the sink, the unread
 * slots) go to whoever the hand-over says: the close ({@link #failHoldings}, on the closing thread, after
 * {@code TAKEN}) or, if the close had to leave first, the consumer itself.
 */
public final class CoalescingConsumer<T, R> implements Runnable {
  private static final System.Logger LOG = System.getLogger(CoalescingConsumer.class.getName());
  /** A run shorter than this means the consumer is keeping pace with producers item by item. */
  static final int SMALL_RUN = 256;
  /** Local spins after a small run while producers are busy, a few microseconds, touching no shared memory. */
  static final int PAUSE_SPINS = 256;
  /**
   * The wait for a claimed slot's publish ({@link #awaitPublish}): 1,000 polls spun, then parked from 20 µs, doubling
   * to about 1.3 ms, so a producer descheduled for longer costs the consumer no core.
   */
  private final Backoff publishWait = new Backoff(1_000, 20_000, 1_280_000);

  private final String name;
  private final RingBuffer<SubmissionSlot> ring;
  private final SequenceBarrier barrier;
  private final ConsumerWaitStrategy waitStrategy;
  private final BatchWriter<T, R> writer;
  private final HandOver handOver;
  private final BatchCompleter completer;
  /** The batch being filled and when it goes to the writer. */
  private final Coalescer<T, R> coalescer;
  /** The self-clocked wait's state: whether the last batch woke callers (consumer thread only). */
  private final SelfClock selfClock;
  /** Told of every release of slots, to wake producers waiting for room; and refuses items if the consumer dies. */
  private final PublishGate gate;
  private final CompletableFuture<Void> terminated = new CompletableFuture<>();
  private final java.util.concurrent.atomic.AtomicBoolean running = new java.util.concurrent.atomic.AtomicBoolean();
  /**
   * The thread the batcher starts, set right before it does: the Runnable a thread factory got runs the consumer on
   * that thread only, so a thread of the factory's own (started before, or handed the Runnable later) runs nothing.
   */
  private volatile @Nullable Thread released;
  /** What a close (or this consumer, orphaned) gathers of the holdings. */
  private final Holdings<T, R> holdings;
  /** Whether the consumer reached the close marker with everything before it settled. */
  volatile boolean drained;
  /** Whether the consumer stopped on a failure of its own code ({@link #failFatally}). */
  volatile boolean failedFatally;
  /** Consumer thread only: whether it failed its own holdings on a failure of its own (no close took them). */
  private boolean failedOwnHoldings;
  /**
   * What every flush fails with once the consumer, stopped on a failure of its own, has failed all it held (and
   * waited for batches other threads were completing); null until then.
   */
  private volatile @Nullable BatcherClosedException ownFailure;
  private final FlushWaiters flushWaiters;
  /** Completed once the recorders were told of what this consumer failed itself; null until it fails any. */
  private volatile @Nullable CompletableFuture<Void> ownRecorded;
  /** Consumer thread only: the slots claimed but unpublished when it failed its own holdings, watched as it ends. */
  private @Nullable StragglerWatch ownStragglers;
  /** Set by the close before it asks for the holdings: the start of every abandoned item's message. */
  private volatile String closeDescription = "close timed out";

  public CoalescingConsumer(String name, RingBuffer<SubmissionSlot> ring, SequenceBarrier barrier, Sequence consumed,
      ConsumerWaitStrategy waitStrategy, BatchWriter<T, R> writer, HandOver handOver, BatchCompleter completer,
      FlushWaiters flushWaiters, ConsumerLimits limits, Ticker ticker, PublishGate gate, SelfClock selfClock,
      Holdings<T, R> holdings) {
    this.name = name;
    this.ring = ring;
    this.barrier = barrier;
    this.waitStrategy = waitStrategy;
    this.writer = writer;
    this.handOver = handOver;
    this.completer = completer;
    this.gate = gate;
    this.selfClock = selfClock;
    this.holdings = holdings;
    this.flushWaiters = flushWaiters;
    this.coalescer = new Coalescer<>(name, ring, consumed, waitStrategy, writer, handOver, flushWaiters, limits, ticker,
        gate, holdings);
  }

  /** Lets {@link #run} consume on {@code thread}: called by the batcher just before it starts that thread. */
  public void release(Thread thread) {
    released = thread;
  }

  @Override
  public void run() {
    Thread owner = released;
    if (Thread.currentThread() != owner) {
      // A thread factory's own thread, not the one it returned and the batcher started (that one runs the consumer,
      // and the close watches it). Before the batcher started it: a factory that starts threads itself, refused.
      if (owner != null) { // not on this thread's hand-over: it is not the consumer
        SafeLog.log(LOG, Level.WARNING, "batcher '" + name + "': its consumer was run on " + Thread.currentThread()
            + ", not on the thread its threadFactory returned (" + owner + "); it runs only there, so the returned"
            + " thread must run the Runnable itself", null);
      }
      return;
    }
    if (!running.compareAndSet(false, true)) { // a thread factory's thread that runs the Runnable twice
      throw new IllegalStateException("the consumer of batcher '" + name + "' is already running");
    }
    if (!handOver.start()) {
      terminated.complete(null); // a close took the holdings before this thread began: nothing is ours
      return;
    }
    waitStrategy.bindConsumer(Thread.currentThread(), coalescer::readTicker, () -> warn("the consumer thread "
        + Thread.currentThread().getName() + " was interrupted while idle; interrupt cleared (use close() to stop"
        + " a batcher)"));
    try {
      consume();
    } catch (ConsumerStop stop) {
      if (stop == ConsumerStop.YIELD && !handOver.yieldToClose() && handOver.state() == HandOver.ORPHANED) {
        failOwnHoldings(recordsOwn()); // the close could not wait for us: its holdings are ours to fail
      } else if (stop == ConsumerStop.TAKEN && handOver.state() != HandOver.TAKEN) {
        failFatally(new IllegalStateException("the consumer stopped as taken over, but the hand-over is "
            + handOver)); // a bug: never end silently with the holdings in nobody's hands
      }
    } catch (Throwable fatal) {
      failFatally(fatal);
    } finally {
      terminated.complete(null);
    }
    if (handOver.state() == HandOver.TAKEN) {
      Thread.interrupted(); // the close's interrupt was for the sink it took over from: not for the factory's code
    }
    if (failedOwnHoldings) { // no close will tell the flushes: every item before them has failed, or is failing
      writer.awaitCompletions(System.nanoTime() + PublishWait.MAX_NANOS); // batches settled on other threads
      BatcherClosedException failure = new BatcherClosedException(name, ring.getBufferSize(), true, closeDescription
          + " the items it held failed");
      ownFailure = failure;
      // A flush() from now on fails at once (it reads ownFailure after waiting); before the stragglers' watch, which
      // may wait for a producer that never publishes, as a close fails its flushes before its watch
      flushWaiters.completeAll(failure);
    }
    StragglerWatch watch = ownStragglers;
    if (watch != null) { // after its own user code, as a close's helper does: a late item fails here, on this thread
      StragglerWatch.watchAll(List.of(watch));
    }
  }

  /** Nothing will write from now on: refuse new items and fail what is held, rather than let callers wait. */
  private void failFatally(Throwable fatal) {
    failedFatally = true;
    // Before the hand-over can show ORPHANED: a close that finds it so waits for these recorders before its own.
    CompletableFuture<Void> recorded = recordsOwn();
    gate.beginClose();
    closeDescription = "the consumer thread failed with " + fatal.getClass().getName() + ";"; // no user toString
    boolean taken = handOver.state() == HandOver.CALLING_OUT && !handOver.back();
    if (!taken && (handOver.orphan() || handOver.state() == HandOver.ORPHANED)) {
      failOwnHoldings(recorded); // ORPHANED: a close that comes later leaves them to us; the gate refuses the rest
      failedOwnHoldings = true; // the flushes fail once run() has watched the stragglers
    } else {
      recorded.complete(null); // a close took them over: its recorders tell them
    }
    SafeLog.log(LOG, Level.ERROR, "the consumer of batcher '" + name + "' failed; its items failed and new"
        + " items are refused until it is closed", fatal);
  }

  /** The consumer fails its holdings itself (a close could not take them): see {@link Holdings#failOwn}. */
  private void failOwnHoldings(CompletableFuture<Void> recorded) {
    Abandonment abandonment = new Abandonment();
    try {
      failHoldings(abandonment, System.nanoTime() + PublishWait.MAX_NANOS); // no close waits: the scan's own bound
      ownStragglers = holdings.failOwn(abandonment, recorded);
    } catch (RuntimeException | Error e) {
      recorded.complete(null); // no recorders will run (a no-op if they did): a close must not wait for them
      throw e;
    }
  }


  /** Logs a warning, which runs a log handler (user code): as every call out, where a close can take over. */
  private void warn(String message) {
    handOver.callOut(() -> SafeLog.log(LOG, Level.WARNING, message, null));
  }

  private void consume() {
    long next = 0;
    boolean awaitingPublish = false;
    while (true) {
      if (selfClock.callersWaited()) { // the last batch woke callers: the next wait may gather (SelfClock)
        if (coalescer.batch().isEmpty()) {
          waitStrategy.gatherIfDue(next - 1, ring.getCursor(), coalescer.forRun().maxBatchSize());
        } else {
          selfClock.forget(); // a lingering batch: its own deadline decides
        }
      }
      long available;
      try {
        available = barrier.waitFor(next);
      } catch (TimeoutException lingerEndedOrWoken) {
        checkpoint();
        waitStrategy.clearDeadline();
        try {
          coalescer.writeIfDue(coalescer.forRun());
        } catch (ConsumerStop stop) {
          throw stop;
        } catch (Throwable bug) {
          onBug(bug);
        }
        continue;
      } catch (AlertException | InterruptedException alerted) {
        checkpoint(); // only a close alerts the barrier
        barrier.clearAlert();
        continue;
      }
      checkpoint();
      if (available < next) { // claimed by a producer but not yet published
        if (!awaitingPublish) {
          awaitingPublish = true;
          publishWait.reset();
        }
        awaitPublish();
        continue;
      }
      awaitingPublish = false;
      boolean reachedMarker = false;
      try {
        reachedMarker = coalescer.take(next, available);
      } catch (ConsumerStop stop) {
        throw stop;
      } catch (Throwable bug) {
        onBug(bug);
        coalescer.release(coalescer.lastTaken()); // the failed batch's slots are free
      }
      if (reachedMarker) {
        writer.awaitSettled();
        drained = true;
        handOver.stopped();
        return;
      }
      if (!selfClock.skipsPause() && available - next + 1 < SMALL_RUN && ring.getCursor() > available) {
        pause(); // producers are already past this small run: let them get ahead
      }
      next = coalescer.lastTaken() + 1;
    }
  }

  /**
   * The next slot is claimed but not yet published. Its producer is usually a few instructions from its publish
   * (no user code runs there); one descheduled may take milliseconds, and a core spun meanwhile may be the one it
   * needs: after a thousand polls the consumer parks between polls, longer each time ({@link #publishWait}).
   */
  private void awaitPublish() {
    if (publishWait.pause(Long.MAX_VALUE) && !handOver.abandonRequested()) {
      warn("the consumer thread " + Thread.currentThread().getName() + " was interrupted while waiting for a"
          + " producer's publish; interrupt cleared (use close() to stop a batcher)");
    }
  }

  /** Stops here if a close asked for the holdings. */
  private void checkpoint() {
    if (handOver.abandonRequested()) {
      throw ConsumerStop.YIELD;
    }
  }

  /**
   * A throwable from the consumer's own code (a bug, or an Error such as OutOfMemoryError): fails the batch
   * being filled with it, and the loop goes on. Writers settle their batches themselves, whatever the sink does.
   */
  private void onBug(Throwable bug) {
    if (handOver.state() == HandOver.CALLING_OUT && !handOver.back()) {
      throw ConsumerStop.TAKEN;
    }
    if (!handOver.callOut()) {
      throw ConsumerStop.YIELD; // the close fails the batch with the rest of the holdings
    }
    // From here a close may take over (the log handler is user code): the batch's CAS decides who fails it.
    SafeLog.log(LOG, Level.ERROR, "the consumer of batcher '" + name + "' failed outside the sink;"
        + " failing the batch it was filling", bug);
    PendingBatch<T, R> own = coalescer.batch();
    if (!own.isEmpty() && completer.settle(own, PendingBatch.FILLING, bug)) {
      completer.complete(own, bug, 0);
    }
    if (!handOver.back()) {
      throw ConsumerStop.TAKEN;
    }
  }

  /**
   * After a small run, spins locally before polling the ring again. A consumer that keeps pace with a busy
   * producer otherwise polls the cursor and availability flags in a tight loop; every poll pulls those cache
   * lines away from the producer, so each item costs cross-core transfers (open-loop throughput fell from ~100
   * to ~8 M items/s in such runs). The pause touches no shared memory and happens only when producers have
   * already claimed sequences past the run: a lone caller, whose ring is empty by then, never meets it.
   */
  private static void pause() {
    for (int i = 0; i < PAUSE_SPINS; i++) {
      Thread.onSpinWait();
    }
  }



  // ---- called by other threads

  /**
   * Completes once the recorders were told of the items this consumer failed itself (it failed fatally, or a close
   * had to leave it behind); null if it failed none yet. Any thread.
   */
  public @Nullable CompletableFuture<Void> ownRecorded() {
    return ownRecorded;
  }

  /** Publishes, for a close to wait on, the future of the recorders this consumer is about to tell itself. */
  private CompletableFuture<Void> recordsOwn() {
    CompletableFuture<Void> recorded = new CompletableFuture<>();
    ownRecorded = recorded;
    return recorded;
  }

  /** Whether the consumer stopped on a failure of its own code (an Error, a bug); it failed what it held. */
  public boolean failedFatally() {
    return failedFatally;
  }

  /**
   * What a flush fails with once the consumer, stopped on a failure of its own, has failed every item it held (no
   * close took them), or null.
   */
  public @Nullable BatcherClosedException ownFailure() {
    return ownFailure;
  }

  public boolean drained() {
    return drained;
  }

  public CompletableFuture<Void> terminated() {
    return terminated;
  }

  /** Closing thread, after a drain: waits up to {@code deadline} for other threads completing futures. */
  public void awaitCompletions(long deadline) {
    writer.awaitCompletions(deadline);
  }

  /** Whether the calling thread is completing futures of a settled batch: a close waits for it to finish. */
  public boolean completingOnThisThread() {
    return writer.completingOnThisThread();
  }

  /** Closing thread: asks the consumer to give up its holdings, with the message for its items. */
  public void requestAbandon(String description, Thread consumerThread) {
    closeDescription = description;
    handOver.requestAbandon();
    wake(consumerThread);
  }

  /** Closing thread: its marker is in the ring; the consumer must not wait for more items (a gather) to see it. */
  public void closeMarkerPublished() {
    waitStrategy.cutGathers();
  }

  /** Ends any wait of the consumer: ring, linger, in-flight slot, retry backoff. */
  public void wake(Thread consumerThread) {
    barrier.alert();
    waitStrategy.wake();
    LockSupport.unpark(consumerThread);
  }

  /**
   * Gathers every item the consumer holds and will not touch again into {@code into}, each settled once: the
   * batch being filled (never written), the batches in the sink (outcome unknown, or not written if waiting to
   * retry), and every unread slot. Nobody is told here: the caller counts them, and tells them once its report
   * is out. Called by the closing thread once the hand-over is {@code TAKEN}, or by the consumer itself when
   * orphaned; a producer between its claim and its publish is waited for until {@code until} at most.
   */
  public void failHoldings(Abandonment into, long until) {
    coalescer.failHoldings(into, until, closeDescription);
  }

  @Override
  public String toString() {
    return "CoalescingConsumer{" + name + ", " + handOver + ", " + writer + '}';
  }
}
