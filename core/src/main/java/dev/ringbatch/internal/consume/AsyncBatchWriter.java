package dev.ringbatch.internal.consume;

import dev.ringbatch.AsyncBatchSink;
import dev.ringbatch.BatcherClosedException;
import dev.ringbatch.Ticker;
import dev.ringbatch.internal.pacing.AdaptiveLimits;
import dev.ringbatch.internal.pacing.SpinHint;
import dev.ringbatch.internal.shared.Causes;
import dev.ringbatch.internal.shared.Threads;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * Hands batches to an {@link AsyncBatchSink} and keeps up to {@code maxInFlight} of them in flight while the
 * consumer coalesces the next. Each dispatch gets a fresh {@link Ticket} whose {@code settled} flag decides, by
 * CAS, the one party that completes the batch: the stage's first firing or an abandoning close. A second
 * firing, or a firing after the close, finds the ticket settled and does nothing, however the pooled batch
 * storage has been reused since.
 *
 * <p>On settling, the in-flight slot is given back before the futures complete, so a dependent action that
 * submits (even {@code submitAndWait}) on the completing thread finds room for its batch; the storage goes
 * back to the pool only after, and the pool grows if all are busy. Flush progress moves in ring order: a batch
 * finishing early waits for the ones dispatched before it.
 */
public final class AsyncBatchWriter<T, R> implements BatchWriter<T, R> {

  private final String name;
  private final int ringSize;
  private final AsyncBatchSink<T, R> sink;
  private final int maxInFlight;
  private final int initialCapacity;
  private final Ticker ticker;
  private final HandOver handOver;
  private final BatchCompleter completer;
  private final FlushWaiters flushWaiters;
  private final Runnable wakeConsumer;
  private final SpinHint spinHint;
  /** The ticker's reading when the last dispatch started ({@link #lastWriteStart}). Consumer thread. */
  private long lastWriteStart;
  /** Told each write's time, when the limits adapt. */
  private final @Nullable AdaptiveLimits adaptive;

  private final AtomicInteger inFlight = new AtomicInteger();
  /** Settles under way on any thread, and how deep this thread is in them (a dependent action may close). */
  private final AtomicInteger completing = new AtomicInteger();
  private final ThreadLocal<int[]> completingHere = ThreadLocal.withInitial(() -> new int[1]);
  private final ConcurrentLinkedQueue<PendingBatch<T, R>> pool = new ConcurrentLinkedQueue<>();
  /** Guarded by itself: dispatched tickets in ring order, and the finish of an idle run behind them. */
  private final ArrayDeque<Ticket<T, R>> order = new ArrayDeque<>();
  private long idleFinish = -1;

  public AsyncBatchWriter(String name, int ringSize, AsyncBatchSink<T, R> sink, int maxInFlight, int initialCapacity,
      Ticker ticker, HandOver handOver, BatchCompleter completer, FlushWaiters flushWaiters, Runnable wakeConsumer,
      SpinHint spinHint, @Nullable AdaptiveLimits adaptive) {
    this.name = name;
    this.ringSize = ringSize;
    this.sink = sink;
    this.maxInFlight = maxInFlight;
    this.initialCapacity = initialCapacity;
    this.ticker = ticker;
    this.handOver = handOver;
    this.completer = completer;
    this.flushWaiters = flushWaiters;
    this.wakeConsumer = wakeConsumer;
    this.spinHint = spinHint;
    this.adaptive = adaptive;
  }

  /** One dispatch of a batch; never reused. {@code done} is guarded by {@code order}. */
  private static final class Ticket<T, R> {
    /** Null once a close took it and gathered its items: the closed batcher keeps nothing of it. */
    @Nullable PendingBatch<T, R> batch;
    final long lastSequence;
    final long startNanos;
    final AtomicBoolean settled = new AtomicBoolean();
    /** The generation of the view the sink got: its stage's firing ends that view's recording, and no other. */
    volatile int viewGeneration;
    boolean done;

    Ticket(PendingBatch<T, R> batch, long lastSequence, long startNanos) {
      this.batch = batch;
      this.lastSequence = lastSequence;
      this.startNanos = startNanos;
    }
  }

  @Override
  public boolean ready() {
    return inFlight.get() < maxInFlight;
  }

  @Override
  public PendingBatch<T, R> write(PendingBatch<T, R> batch, long lastSequence) {
    while (inFlight.get() >= maxInFlight) { // back-pressure: the ring fills behind this batch
      if (handOver.abandonRequested()) {
        throw ConsumerStop.YIELD;
      }
      LockSupport.park(this); // a settling batch unparks the consumer
      Thread.interrupted(); // stray interrupts must not turn this wait into a spin; only close stops it
    }
    PendingBatch<T, R> next = pool.poll(); // before the batch enters the sink: nothing may stand between the two
    if (next == null) {
      next = new PendingBatch<>(initialCapacity, ringSize);
    }
    if (!handOver.callOut()) {
      pool.add(next);
      throw ConsumerStop.YIELD;
    }
    // The ticker is user code: read while the batch is still FILLING, so a close that takes over meanwhile
    // fails it as never written, and the CAS below stops this writer before the sink.
    long startNanos = ticker.read();
    lastWriteStart = startNanos;
    Ticket<T, R> ticket = new Ticket<>(batch, lastSequence, startNanos);
    synchronized (order) {
      // One step for a close: the batch is either FILLING (failed with the holdings) or IN_SINK with its ticket
      // registered (failed through the ticket); failInFlight takes this lock after the holdings' CAS.
      if (!batch.state.compareAndSet(PendingBatch.FILLING, PendingBatch.IN_SINK)) {
        throw ConsumerStop.TAKEN;
      }
      order.addLast(ticket);
    }
    inFlight.incrementAndGet();
    batch.waits().writeStarting(startNanos);
    BatchView<T, R> view = batch.open(name, completer.counters());
    if (view == null) {
      throw ConsumerStop.TAKEN; // a close took the batch since the CAS: the sink must not see it
    }
    ticket.viewGeneration = view.generation();
    CompletionStage<?> stage;
    try {
      stage = sink.write(view);
      if (stage == null) {
        stage = CompletableFuture.failedFuture(
            new NullPointerException("the async sink returned null instead of a CompletionStage"));
      }
    } catch (Throwable t) {
      stage = CompletableFuture.failedFuture(t);
    }
    try {
      stage.whenComplete((ignored, failure) -> settle(ticket, failure)); // may settle here, on this thread
    } catch (Throwable t) { // a broken stage implementation: the batch must not stay in flight forever
      settle(ticket, t);
    }
    if (!handOver.back()) {
      throw ConsumerStop.TAKEN;
    }
    return next;
  }

  @Override
  public long lastWriteStart() {
    return lastWriteStart;
  }

  /** Completes a dispatched batch once; runs on whichever thread completed its stage. */
  private void settle(Ticket<T, R> ticket, @Nullable Throwable failure) {
    PendingBatch<T, R> batch = ticket.batch; // null once a close took it
    if (batch != null) {
      batch.endAttempt(ticket.viewGeneration); // the stage completed: the sink's Batch records nothing more
    }
    if (batch == null || ticket.settled.get()) {
      return; // a second firing, or the close failed it already
    }
    // User code (the ticker, an exception's getCause) runs before the settle is won: if it blocks, the batch is
    // still in flight, and a close takes it over instead of waiting for a batch that is settled but not told.
    long writeNanos = Math.max(0, ticker.read() - ticket.startNanos); // never negative (a ticker that stepped back)
    Throwable cause = Causes.unwrapCompletion(failure);
    if (!completer.settle(ticket.settled, batch, cause)) {
      return; // a second firing, or the close failed it already
    }
    completing.incrementAndGet();
    int[] depth = completingHere.get();
    depth[0]++;
    try {
      inFlight.decrementAndGet(); // before the futures: their dependent actions may need the slot
      wakeConsumer.run(); // it may wait for the slot, or for every batch to settle at the close marker
      int size = batch.size();
      Wakes woken = completer.complete(batch, cause, writeNanos);
      spinHint.settled(woken == null ? 0 : woken.total(), woken == null ? 0 : woken.virtual(), writeNanos, size);
      AdaptiveLimits a = adaptive;
      if (a != null) {
        a.asyncWritten(size, writeNanos);
      }
      finishInOrder(ticket);
      pool.add(batch);
    } finally {
      depth[0]--;
      completing.decrementAndGet();
    }
  }

  private void finishInOrder(Ticket<T, R> ticket) {
    long finished = -1;
    synchronized (order) {
      ticket.done = true;
      while (!order.isEmpty() && order.peekFirst().done) {
        finished = order.pollFirst().lastSequence;
      }
      if (order.isEmpty() && idleFinish > finished) {
        finished = idleFinish;
      }
    }
    if (finished >= 0) {
      flushWaiters.advance(finished); // monotonic: a slower thread's smaller value cannot move it back
    }
  }

  @Override
  public boolean finishIdle(long sequence) {
    synchronized (order) {
      if (!order.isEmpty()) {
        idleFinish = sequence; // finished once the batches before it settle
        return false;
      }
    }
    return flushWaiters.finish(sequence);
  }

  /**
   * Waits until every dispatched batch is settled (its outcome decided and counted). Not until its futures
   * have completed: a dependent action on the completing thread may close the batcher, and must not wait for
   * itself. The close waits for those completions separately ({@link #awaitCompletions}).
   */
  @Override
  public void awaitSettled() {
    while (true) {
      if (allSettled()) {
        return;
      }
      if (handOver.abandonRequested()) {
        throw ConsumerStop.YIELD;
      }
      LockSupport.park(this);
      Thread.interrupted(); // as above: only close stops this wait
    }
  }

  private boolean allSettled() {
    synchronized (order) {
      for (Ticket<T, R> ticket : order) {
        if (!ticket.settled.get()) {
          return false;
        }
      }
      return true;
    }
  }

  @Override
  public void awaitCompletions(long deadline) {
    int own = completingHere.get()[0];
    Threads.pollWhile(() -> completing.get() > own, deadline); // rare: a close, slow callbacks
  }

  @Override
  public boolean completingOnThisThread() {
    return completingHere.get()[0] > 0;
  }

  @Override
  public void failInFlight(String closeDescription, Abandonment into) {
    List<Ticket<T, R>> taken = new ArrayList<>();
    synchronized (order) {
      for (Ticket<T, R> ticket : order) {
        if (ticket.settled.compareAndSet(false, true)) {
          taken.add(ticket);
        }
      }
    }
    BatcherClosedException cause = new BatcherClosedException(name, ringSize, true, true, closeDescription
        + " while the item's batch was in flight in the async sink; it may or may not have been written");
    for (Ticket<T, R> ticket : taken) {
      PendingBatch<T, R> batch = ticket.batch;
      if (batch != null) {
        completer.abandon(batch, cause, into);
        // The ticket stays in the order, never done, so flush progress never passes it; its batch goes, so the
        // closed batcher keeps nothing of it (a stage still pending holds its own view).
        ticket.batch = null;
      }
    }
  }

  @Override
  public String toString() {
    return "AsyncBatchWriter{" + name + ", inFlight=" + inFlight.get() + '/' + maxInFlight + '}';
  }
}
