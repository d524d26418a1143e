package dev.ringbatch.internal.consume;

import dev.ringbatch.BatchSink;
import dev.ringbatch.BatcherClosedException;
import dev.ringbatch.RetryPolicy;
import dev.ringbatch.Ticker;
import dev.ringbatch.internal.pacing.SelfClock;
import dev.ringbatch.internal.pacing.SpinHint;
import dev.ringbatch.internal.shared.SafeLog;
import dev.ringbatch.internal.shared.Threads;
import java.lang.System.Logger.Level;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * Writes each batch with one {@link BatchSink#write} call on the consumer thread, retrying a batch whose sink
 * threw as the {@link RetryPolicy} says (only the items without a recorded failure: a recorded outcome is final),
 * then completes it. The whole of it (sink, retry policy, recorders,
 * futures' dependent actions) runs in the {@link HandOver#CALLING_OUT} state. The batch's settle state moves
 * {@code FILLING -> IN_SINK (-> BACKING_OFF -> IN_SINK)* -> SETTLING} by CAS, so that a close that takes over
 * meanwhile and this writer never both complete it.
 */
public final class SyncBatchWriter<T, R> implements BatchWriter<T, R> {
  private static final System.Logger LOG = System.getLogger(SyncBatchWriter.class.getName());

  private final String name;
  private final int ringSize;
  private final BatchSink<T, R> sink;
  /** The sink when it never sees a view (noResult, withResults): chosen once, written without a view. */
  private final @Nullable ListSink<T, R> listSink;
  private final RetryPolicy retryPolicy;
  private final Ticker ticker;
  private final HandOver handOver;
  private final BatchCompleter completer;
  private final FlushWaiters flushWaiters;

  /** Whether the consumer is completing the futures of a batch it settled: written per batch, without a fence. */
  private final AtomicBoolean completing = new AtomicBoolean();
  /** The batch of the current or last write: what a close that took over may find inside the sink. */
  private volatile @Nullable PendingBatch<T, R> current;
  /** Told of each batch's waiting callers: the consumer's next wait ({@link SelfClock}). Consumer thread. */
  private final SelfClock selfClock;
  /** Told how long batches with platform-thread callers took: whether the next callers spin. */
  private final SpinHint spinHint;
  /** The last batch's start and time in the sink ({@link #lastWriteStart}, {@link #lastSinkNanos}). Consumer thread. */
  private long lastWriteStart;
  private long lastSinkNanos;

  public SyncBatchWriter(String name, int ringSize, BatchSink<T, R> sink, RetryPolicy retryPolicy, Ticker ticker, HandOver handOver,
      BatchCompleter completer, FlushWaiters flushWaiters, SelfClock selfClock, SpinHint spinHint) {
    this.name = name;
    this.ringSize = ringSize;
    this.sink = sink;
    this.listSink = sink instanceof ListSink<T, R> list ? list : null;
    this.retryPolicy = retryPolicy;
    this.ticker = ticker;
    this.handOver = handOver;
    this.completer = completer;
    this.flushWaiters = flushWaiters;
    this.selfClock = selfClock;
    this.spinHint = spinHint;
  }

  @Override
  public boolean ready() {
    return true;
  }

  @Override
  public long lastSinkNanos() {
    return lastSinkNanos;
  }

  @Override
  public long lastWriteStart() {
    return lastWriteStart;
  }

  @Override
  public PendingBatch<T, R> write(PendingBatch<T, R> batch, long lastSequence) {
    if (current != batch) {
      // Before the call out: a close takes over only from there, so it reads this and nulls it last. Written once
      // per batch object: see CoalescingConsumer.write on reference stores per batch.
      current = batch;
    }
    if (!handOver.callOut()) {
      throw ConsumerStop.YIELD;
    }
    // User code before the sink (a log handler, the ticker) runs while the batch is still FILLING: a close that
    // takes over meanwhile fails it as never written, and the CAS below then stops this writer before the sink.
    clearStrayInterrupt("before the sink call");
    long start = ticker.read();
    if (!batch.state.compareAndSet(PendingBatch.FILLING, PendingBatch.IN_SINK)) {
      throw ConsumerStop.TAKEN;
    }
    batch.waits().writeStarting(start);
    lastWriteStart = start;
    Throwable failure;
    long firstFailure = 0;
    for (int attempt = 1; ; attempt++) {
      failure = attempt(batch);
      if (failure == null) {
        break;
      }
      // The sink returned by throwing: from here a close that takes over fails the batch as not written, each
      // item keeping a failure the sink recorded for it.
      if (batch.unknownAttemptFailure == null && UnknownOutcomes.outcomeUnknown(failure)) {
        batch.unknownAttemptFailure = failure; // a close reads it after the state CAS below
      }
      batch.lastAttemptFailure = failure;
      if (!batch.state.compareAndSet(PendingBatch.IN_SINK, PendingBatch.BACKING_OFF)) {
        throw ConsumerStop.TAKEN;
      }
      if (attempt == 1) {
        firstFailure = System.nanoTime();
      }
      if (!batch.anyWithoutRecordedFailure()) {
        break; // every item has a recorded failure, which is final: nothing is left to retry
      }
      long wait = retryWait(attempt + 1, failure, System.nanoTime() - firstFailure, batch.size());
      if (wait < 0) {
        break;
      }
      if (!backOff(wait)) {
        // A close asks for the batch: hand over (it fails the batch from BACKING_OFF, keeping recorded failures).
        if (!handOver.back()) {
          throw ConsumerStop.TAKEN; // it took over already
        }
        throw ConsumerStop.YIELD;
      }
      if (!batch.state.compareAndSet(PendingBatch.BACKING_OFF, PendingBatch.IN_SINK)) {
        throw ConsumerStop.TAKEN;
      }
    }
    if (failure != null) {
      failure = outcomeOf(batch, failure);
    }
    // every attempt and every backoff, as recordBatch promises; never negative (a ticker that stepped back)
    long writeNanos = Math.max(0, ticker.read() - start);
    lastSinkNanos = writeNanos;
    int state = batch.state.get();
    if (state == PendingBatch.SETTLING || !completer.settle(batch, state, failure)) {
      throw ConsumerStop.TAKEN; // the close failed it
    }
    completing.lazySet(true); // a close that takes over now waits, a little, for these futures
    try {
      int size = batch.size();
      selfClock.wakingFrom(); // what comes into the ring from here may be these callers coming back
      Wakes woken = completer.complete(batch, failure, writeNanos, selfClock.quickSink());
      int total = woken == null ? 0 : woken.total();
      int virtual = woken == null ? 0 : woken.virtual();
      selfClock.completed(total, virtual, writeNanos);
      spinHint.settled(total, virtual, writeNanos, size);
    } finally {
      completing.lazySet(false);
    }
    flushWaiters.advance(lastSequence);
    if (!handOver.back()) {
      throw ConsumerStop.TAKEN;
    }
    return batch;
  }

  /** One sink call; returns what it threw, or null. A retry hands the sink only the items without a recorded failure. */
  private @Nullable Throwable attempt(PendingBatch<T, R> batch) {
    BatchView<T, R> view = batch.open(name, completer.counters());
    if (view == null) {
      if (batch.state.get() != PendingBatch.IN_SINK) {
        throw ConsumerStop.TAKEN; // a close took the batch since it entered IN_SINK: the sink must not see it
      }
      return batch.lastAttemptFailure; // every item has a recorded failure: nothing is left to hand the sink
    }
    try {
      if (listSink == null) {
        try {
          sink.write(view);
        } catch (Throwable t) {
          return t;
        }
        return null;
      }
      // The list sink gets a read-only list, never a Batch: it cannot record, so its results are recorded here.
      ItemsView<T> items = view.readOnlyItems();
      List<R> results;
      try {
        results = listSink.writeItems(items);
      } catch (Throwable t) {
        return t; // the writer threw: the batch failed, and may be retried
      }
      ListSink.Read read = listSink.read(results, items.size()); // the writer returned: never a retry from here
      batch.recordAll(view, read.results(), read.misfit());
      return null;
    } finally {
      batch.endAttempt(view.generation()); // a Batch kept past write() records nothing from now on
    }
  }

  /**
   * The failure the batch's items get after its last attempt failed with {@code last}: {@code last} itself, unless
   * an earlier attempt's outcome was unknown (a lost reply to a COMMIT that an idempotent sink retries). That attempt
   * may have written the items, so a later attempt that failed without writing them cannot make them "not written":
   * they are told their outcome is unknown. Failures a later attempt records for single items are turned so as they
   * are recorded ({@link PendingBatch#record}).
   */
  private static Throwable outcomeOf(PendingBatch<?, ?> batch, Throwable last) {
    Throwable unknown = batch.unknownAttemptFailure;
    return unknown == null || UnknownOutcomes.outcomeUnknown(last) ? last : UnknownOutcomes.afterUnknownAttempt(unknown, last);
  }

  /**
   * The wait before attempt {@code attempt}, or -1 to give up. The policy is user code ({@code retryOn}): if
   * it throws, the batch fails with the sink's exception, the policy's attached as suppressed.
   */
  private long retryWait(int attempt, Throwable failure, long elapsedNanos, int size) {
    long wait;
    try {
      wait = retryPolicy.backoffNanos(attempt, failure, elapsedNanos);
    } catch (Throwable policyFailure) {
      attachSuppressed(failure, policyFailure);
      SafeLog.log(LOG, Level.WARNING, "batcher '" + name + "': the retry policy threw while judging "
          + SafeLog.describe(failure) + "; the batch of " + size + " fails without retry", policyFailure);
      return -1;
    }
    if (wait >= 0) {
      SafeLog.log(LOG, Level.WARNING, "batcher '" + name + "': a batch of " + size + " failed ("
          + SafeLog.describe(failure) + "); attempt " + attempt + " of " + retryPolicy.maxAttempts() + " in "
          + TimeUnit.NANOSECONDS.toMillis(wait) + " ms", null);
      completer.recordRetry(attempt, failure);
    }
    return wait;
  }

  private static void attachSuppressed(Throwable failure, Throwable policyFailure) {
    if (failure != policyFailure) {
      try {
        failure.addSuppressed(policyFailure);
      } catch (Throwable t) {
        // addSuppressed refuses only self-suppression and null, both excluded: nothing to report
      }
    }
  }

  /**
   * Waits out a retry backoff. Only a close ends it early (false): a stray interrupt of the consumer thread
   * is reported and ignored, as everywhere else in the consumer.
   */
  private boolean backOff(long waitNanos) {
    long deadline = System.nanoTime() + waitNanos;
    while (!handOver.abandonRequested()) {
      long remaining = deadline - System.nanoTime();
      if (remaining <= 0) {
        return true;
      }
      LockSupport.parkNanos(this, remaining);
      clearStrayInterrupt("during a retry backoff");
    }
    return false;
  }

  private void clearStrayInterrupt(String when) {
    // Only a close that took over interrupts this thread, and then the consumer stops before the next sink
    // call: any other interrupt is stray and must neither fail a batch nor cut a backoff short.
    if (Thread.interrupted() && !handOver.abandonRequested()) {
      SafeLog.log(LOG, Level.WARNING, "the consumer thread of batcher '" + name + "' was interrupted " + when
          + "; interrupt cleared (use close() to stop a batcher)", null);
    }
  }

  @Override
  public boolean finishIdle(long sequence) {
    return flushWaiters.finish(sequence);
  }

  @Override
  public void awaitSettled() {
    // nothing is ever in flight between two calls
  }

  /**
   * Closing thread: waits until {@code deadline} while the consumer completes the futures of a batch it settled
   * (a close that took over meanwhile must not report, or release flushes, before them).
   */
  @Override
  public void awaitCompletions(long deadline) {
    Threads.pollWhile(completing::get, deadline); // rare: only a close that took over meets it
  }

  @Override
  public boolean completingOnThisThread() {
    return false; // completions run on the consumer thread, which may not close its own batcher
  }

  @Override
  public void failInFlight(String closeDescription, Abandonment into) {
    PendingBatch<T, R> batch = current;
    if (batch == null) {
      return;
    }
    current = null; // the closed batcher keeps nothing of it: a sink still writing holds its own view
    int state = batch.state.get();
    if ((state != PendingBatch.IN_SINK && state != PendingBatch.BACKING_OFF)
        || !batch.state.compareAndSet(state, PendingBatch.SETTLING)) {
      return; // filling (failed with the holdings), or being completed by the consumer
    }
    BatcherClosedException cause = state == PendingBatch.IN_SINK
        ? new BatcherClosedException(name, ringSize, true, true, closeDescription
            + " while the item's batch was inside the sink; it may or may not have been written")
        : notWritten(closeDescription, batch.lastAttemptFailure, batch.unknownAttemptFailure);
    completer.abandon(batch, cause, into);
  }

  /**
   * The failure of items a close took while they waited to retry. Runs on the closing thread before its report:
   * the last failure is named by its class and attached as the cause, never asked for its message (user code).
   */
  private BatcherClosedException notWritten(String closeDescription, @Nullable Throwable lastFailure,
      @Nullable Throwable unknownFailure) {
    if (unknownFailure != null) {
      // An earlier attempt may have written the batch: its outcome is unknown, not "not written".
      BatcherClosedException cause = new BatcherClosedException(name, ringSize, true, true, closeDescription
          + " while the item's batch waited to retry after an attempt whose outcome is unknown ("
          + unknownFailure.getClass().getName() + "); it may or may not have been written");
      cause.initCause(unknownFailure);
      return cause;
    }
    BatcherClosedException cause = new BatcherClosedException(name, ringSize, true, false, closeDescription
        + " while the item's batch waited to retry after it failed with "
        + (lastFailure == null ? "an unknown failure" : lastFailure.getClass().getName()) + "; not written");
    if (lastFailure != null) {
      cause.initCause(lastFailure);
    }
    return cause;
  }

  @Override
  public String toString() {
    return "SyncBatchWriter{" + name + '}';
  }
}
