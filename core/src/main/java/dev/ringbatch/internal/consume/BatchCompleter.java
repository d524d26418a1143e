package dev.ringbatch.internal.consume;

import dev.ringbatch.BatchWriteException;
import dev.ringbatch.BatcherClosedException;
import dev.ringbatch.BatcherFullException;
import dev.ringbatch.OfferFailureHandler;
import dev.ringbatch.internal.ring.ItemFuture;
import dev.ringbatch.internal.shared.Causes;
import dev.ringbatch.internal.shared.GuardedStatsRecorders;
import dev.ringbatch.internal.shared.SafeLog;
import java.lang.System.Logger.Level;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;

/**
 * The one place a batch is finished: count it, tell the recorders, complete every future, clear it. Counting
 * comes first, so a caller that sees its future done also sees its item in stats and metrics. Called by the
 * party that won the batch's settle CAS ({@link PendingBatch#state}): the consumer thread for a sync sink, the
 * thread completing the stage for an async one, or an abandoning close ({@link #abandon}). Thread-safe.
 */
public final class BatchCompleter {
  private static final System.Logger LOG = System.getLogger(BatchCompleter.class.getName());

  private final String name;
  private final ConsumerCounters counters;
  private final GuardedStatsRecorders recorders;
  private final @Nullable OfferFailureHandler offerFailures;
  private final LostFailureLog lostLog;

  /** {@code lostLog} is the batcher's: a sharded batcher's shards share one, so it logs once per batcher. */
  public BatchCompleter(String name, ConsumerCounters counters, GuardedStatsRecorders recorders,
      @Nullable OfferFailureHandler offerFailures, LostFailureLog lostLog) {
    this.name = name;
    this.counters = counters;
    this.recorders = recorders;
    this.offerFailures = offerFailures;
    this.lostLog = lostLog;
  }

  /**
   * Finishes a batch the sink wrote ({@code failure} null) or failed whole. Items without a recorded outcome
   * fail as a sink bug; when the batch failed whole, an item keeps the failure the sink recorded for it (an
   * {@code OutcomeUnknownException}, say) and the others fail with {@code failure}. The caller has won the
   * settle ({@link #settle}), which counted it; this clears it.
   *
   * @return the callers it woke (parked on the futures), or null if none was waiting
   */
  @Nullable Wakes complete(PendingBatch<?, ?> batch, @Nullable Throwable failure, long writeNanos) {
    return complete(batch, failure, writeNanos, false);
  }

  /**
   * As {@link #complete(PendingBatch, Throwable, long)}; with {@code virtualAtOnce}, a virtual-thread caller is
   * woken as soon as its future is complete rather than with the rest of the batch ({@link Wakes#add}).
   */
  @Nullable Wakes complete(PendingBatch<?, ?> batch, @Nullable Throwable failure, long writeNanos,
      boolean virtualAtOnce) {
    try {
      return completeAll(batch, failure, writeNanos, virtualAtOnce);
    } catch (Throwable escaped) {
      batch.clear(); // past an Error of our own: a batch left settled would never take an item again
      throw escaped;
    }
  }

  private @Nullable Wakes completeAll(PendingBatch<?, ?> batch, @Nullable Throwable failure, long writeNanos,
      boolean virtualAtOnce) {
    int size = batch.size();
    try {
      int failed = failure != null ? size : batch.failedCount();
      if (batch.waits().hasWaits()) {
        batch.waits().report(recorders);
      }
      recorders.recordBatch(size, batch.weight(), writeNanos, failed);
    } catch (Throwable own) { // the recorders are guarded: only an Error of our own gets here, and no caller waits for it
      logQuietly("recording a batch failed inside the batcher", own);
    }
    int lostFireAndForget = 0;
    Throwable lostCause = null;
    Wakes wakes = null; // only for futures with a waiting caller: a fire-and-forget batch allocates nothing here
    for (int i = 0; i < size; i++) {
      CompletableFuture<Object> future = batch.future(i);
      try {
        Throwable cause = causeOf(batch, i, failure);
        if (future == null) {
          if (cause != null) {
            lostFireAndForget++;
            lostCause = cause;
          }
          continue;
        }
        if (wakes != null && future.getNumberOfDependents() > 0) {
          wakes.now(); // its dependent actions are user code, and may block: callers already done do not wait
        }
        if (completeQuietly(future, cause == null ? batch.settledResult(i) : null, sinkFailure(cause))) {
          if (wakes == null) {
            wakes = new Wakes(size - i, virtualAtOnce);
          }
          wakes.add((ItemFuture<?>) future);
        }
      } catch (Throwable own) { // an Error of our own code (OutOfMemoryError, say): this item is still told
        if (future == null) {
          lostFireAndForget++;
          lostCause = own;
        } else {
          rescue(batch, i, future, failure, own);
        }
      }
    }
    if (wakes != null) {
      wakes.now();
    }
    OfferFailureHandler handler = offerFailures;
    if (lostFireAndForget > 0 && handler != null) {
      tellHandler(handler, batch, failure); // after every future: a handler that blocks holds up no caller
    }
    batch.clear();
    if (lostFireAndForget > 0 && handler == null) { // their callers cannot be told: logged, rate-limited
      lostLog.failed(lostFireAndForget, size, lostCause);
    }
    return wakes;
  }

  /**
   * Item {@code i}'s completion met a throwable of the batcher's own (an allocation that failed): its future gets
   * its outcome by the public path, which wakes its caller, and nothing else is lost. A future already complete
   * (the throwable came after) keeps its outcome, and only its caller is woken.
   */
  private void rescue(PendingBatch<?, ?> batch, int i, CompletableFuture<Object> future,
      @Nullable Throwable failure, Throwable own) {
    byte state = batch.settledState(i);
    boolean written = failure == null && state == PendingBatch.SUCCEEDED;
    Throwable cause = written ? null
        : state == PendingBatch.FAILED ? (Throwable) batch.outcome(i)
        : failure != null ? failure : own;
    completeAgain(future, written ? batch.settledResult(i) : null, sinkFailure(cause));
    logQuietly("completing an item of a batch failed inside the batcher", own);
  }

  /**
   * Completes {@code future} by its public methods (which wake an {@link ItemFuture}'s caller) after the usual path
   * threw before the result was set; a future already complete is left as it is, its caller woken.
   */
  private void completeAgain(CompletableFuture<Object> future, @Nullable Object result, @Nullable Throwable cause) {
    try {
      if (!future.isDone()) {
        completeWith(future, result, cause);
      }
    } catch (Throwable again) {
      logQuietly("an item's future could not be completed; its caller may wait until its timeout", again);
    }
    if (future instanceof ItemFuture<?> item) {
      item.claim();
    }
  }

  /**
   * The failure a caller gets for {@code cause}, a failure of the sink: wrapped in a {@link BatchWriteException}
   * when it would read as something else, a cancellation (the future would cancel rather than fail), a batcher's
   * rejection (the caller would take it for this batcher being full or closed) or a batcher's write failure (a
   * sink that forwards to another batcher: the caller would read that batcher's name). Null for null.
   */
  @Nullable Throwable sinkFailure(@Nullable Throwable failure) {
    Throwable cause = Causes.unwrapCompletion(failure); // a sink forwarding with join(): get() reads the inside
    if (!(cause instanceof CancellationException || cause instanceof BatcherFullException
        || cause instanceof BatcherClosedException || cause instanceof BatchWriteException)) {
      return failure;
    }
    try {
      return wrapped(cause);
    } catch (Throwable own) { // out of memory: failed with that
      return own;
    }
  }

  /** Logs, never throwing: called where an Error of our own was caught, so that the other items are still told. */
  private void logQuietly(String message, Throwable t) {
    try {
      log(message, t);
    } catch (Throwable ignored) {
      // even the message could not be built: the items' outcomes matter more than this line
    }
  }

  /**
   * Wins the settle of {@code batch} from state {@code expected}, seals it and counts its outcome, as one step
   * for {@code stats()} (which reads the counters under the same lock): a close that loses the batch to this
   * call and then takes its report finds the batch counted. False if another party won. No user code runs here.
   */
  boolean settle(PendingBatch<?, ?> batch, int expected, @Nullable Throwable failure) {
    synchronized (counters) {
      if (!batch.state.compareAndSet(expected, PendingBatch.SETTLING)) {
        return false;
      }
      count(batch, failure);
      return true;
    }
  }

  /** As {@link #settle}, for an async batch whose dispatch {@code ticket} decides who settles it. */
  boolean settle(AtomicBoolean ticket, PendingBatch<?, ?> batch, @Nullable Throwable failure) {
    synchronized (counters) {
      if (!ticket.compareAndSet(false, true)) {
        return false;
      }
      batch.state.set(PendingBatch.SETTLING);
      count(batch, failure);
      return true;
    }
  }

  /** The counters a batch's first view counts it in, as handed to the sink ({@link PendingBatch#open}). */
  ConsumerCounters counters() {
    return counters;
  }

  private void count(PendingBatch<?, ?> batch, @Nullable Throwable failure) {
    batch.seal();
    int size = batch.size();
    counters.recordBatch(size, failure != null ? size : batch.failedCount());
  }

  /**
   * Gathers every item of a batch an abandoning close took into {@code into}; the caller won the settle CAS. An
   * item keeps a failure the sink recorded for it (final, as {@link dev.ringbatch.Batch} promises); the others fail
   * with {@code cause}. The batch is never reused after a take-over and is not cleared: a sink still running reads
   * its items and records as usual, into storage nobody reads again (what it records is ignored). The outcomes are
   * read under the batch's lock, which recording takes too: each is read before or after a record, never during.
   */
  public void abandon(PendingBatch<?, ?> batch, Throwable cause, Abandonment into) {
    synchronized (batch) {
      // SETTLING under the lock PendingBatch.open takes: a writer that has not opened the batch yet gets no view of
      // it, and the sink never sees it (an async take-over settles through its ticket and left the state IN_SINK)
      batch.state.set(PendingBatch.SETTLING);
      gatherTaken(batch, cause, into);
    }
  }

  private void gatherTaken(PendingBatch<?, ?> batch, Throwable cause, Abandonment into) {
    int size = batch.size();
    for (int i = 0; i < size; i++) {
      if (batch.outcomeState(i) == PendingBatch.FAILED) {
        // Kept as recorded: the caller's future gets it as a sink failure when told (sinkFailure reads the cause's
        // toString, user code, which must not run here, under the lock and before the close's report).
        into.addFailed(batch.item(i), batch.future(i), (Throwable) batch.outcome(i), batch.waits().waitOf(i));
      } else {
        into.add(batch.future(i), cause);
      }
    }
  }

  /**
   * Counts what {@code abandonment} gathered: before anybody is told, so that the report and every caller's
   * stats include it. No user code runs here.
   */
  public void countAbandoned(Abandonment abandonment) {
    if (abandonment.items() > 0 || abandonment.failedBySink() > 0) {
      counters.recordTakenByClose(abandonment.items(), abandonment.failedBySink());
    }
  }

  /**
   * Tells the recorders of what {@code abandonment} gathered; counted before. User code, kept apart from
   * {@link #tellAbandoned}: a recorder that blocks must not hold up the callers.
   */
  void recordAbandoned(Abandonment abandonment) {
    abandonment.record(recorders);
  }

  /** Tells the callers of what {@code abandonment} gathered (their dependent actions run), then logs its notes. */
  public void tellAbandoned(Abandonment abandonment) {
    for (Abandonment.Told t : abandonment.told) {
      if (completeQuietly(t.future(), null, t.bySink() ? sinkFailure(t.cause()) : t.cause())) {
        ((ItemFuture<?>) t.future()).claim();
      }
    }
    List<Abandonment.FailedOffer> offers = abandonment.failedOffers;
    OfferFailureHandler handler = offerFailures;
    for (Abandonment.FailedOffer offer : offers) {
      if (handler == null) {
        lostLog.failed(offers.size(), offers.size(), offers.get(offers.size() - 1).cause());
        break;
      }
      try {
        handler.failed(offer.item(), offer.cause());
      } catch (Throwable t) {
        lostLog.handlerThrew(t);
      }
    }
    for (String note : abandonment.notes()) {
      log(note, null);
    }
  }

  /**
   * Counts and fails an item a producer published after an abandoning close gave up on its slot
   * ({@link StragglerWatch}). The recorders are not told: the close's {@code recordClosed} came before.
   */
  void failLate(@Nullable CompletableFuture<Object> future, Throwable cause) {
    counters.recordTakenByClose(1, 0);
    if (future != null && completeQuietly(future, null, cause)) {
      ((ItemFuture<?>) future).claim();
    }
  }

  /** Tells the recorders a batch will be retried. */
  void recordRetry(int attempt, Throwable cause) {
    recorders.recordRetry(attempt, cause);
  }

  /** Why item {@code i} failed, or null if it was written: what the sink recorded, else the batch's failure. */
  private @Nullable Throwable causeOf(PendingBatch<?, ?> batch, int i, @Nullable Throwable failure) {
    byte state = batch.settledState(i);
    if (failure == null && state == PendingBatch.SUCCEEDED) {
      return null;
    }
    if (state == PendingBatch.FAILED) {
      return (Throwable) batch.outcome(i);
    }
    if (failure != null) {
      return failure;
    }
    Throwable none = noOutcome(i, batch.size());
    Throwable unknown = batch.unknownAttemptFailure; // an earlier attempt may have written it
    return unknown == null ? none : UnknownOutcomes.afterUnknownAttempt(unknown, none);
  }

  private IllegalStateException noOutcome(int index, int size) {
    return new IllegalStateException("the sink of batcher '" + name + "' recorded no outcome for item " + index
        + " of a batch of " + size + "; a sink must complete or fail every item (Batch.completeRemaining marks"
        + " the rest written)");
  }

  /**
   * Completes a future; its dependent actions run here. CompletableFuture captures what they throw, but a
   * StackOverflowError from a deep chain can escape: it must not stop the other futures from completing. Returns
   * true when a caller waits on the future ({@link ItemFuture}) and was not woken: the caller must wake it.
   */
  private boolean completeQuietly(CompletableFuture<Object> future, @Nullable Object result, @Nullable Throwable cause) {
    try {
      if (future instanceof ItemFuture<?> item) {
        return cause == null ? item.completeFor(result) : item.failFor(cause);
      }
      completeWith(future, result, cause);
    } catch (Throwable t) {
      // Usually completed before its dependents threw; if the completion itself failed first (an allocation),
      // once more. Either way its waiter is woken now: it must not wait for the log handler.
      completeAgain(future, result, cause);
      logQuietly("a dependent action of an item's future threw", t);
    }
    return false;
  }

  private static void completeWith(CompletableFuture<Object> future, @Nullable Object result,
      @Nullable Throwable cause) {
    if (cause == null) {
      future.complete(result);
    } else {
      future.completeExceptionally(cause);
    }
  }

  /**
   * Tells the handler of each failed fire-and-forget item of {@code batch}: user code, whose throwables are logged
   * (rate-limited).
   */
  private void tellHandler(OfferFailureHandler handler, PendingBatch<?, ?> batch, @Nullable Throwable failure) {
    for (int i = 0; i < batch.size(); i++) {
      if (batch.future(i) != null) {
        continue;
      }
      Throwable cause = causeOf(batch, i, failure);
      if (cause == null) {
        continue;
      }
      try {
        handler.failed(batch.item(i), cause);
      } catch (Throwable t) {
        lostLog.handlerThrew(t);
      }
    }
  }

  private Throwable wrapped(Throwable cause) {
    try {
      return new BatchWriteException(name, cause);
    } catch (Throwable brokenToString) { // the message reads the cause's toString(), which is user code
      BatchWriteException wrapped = new BatchWriteException(name, new IllegalStateException(
          "the sink failed with a " + cause.getClass().getName() + " whose toString() threw"));
      wrapped.addSuppressed(cause);
      return wrapped;
    }
  }

  private void log(String message, @Nullable Throwable t) {
    SafeLog.log(LOG, Level.WARNING, "batcher '" + name + "': " + message, t);
  }
}
