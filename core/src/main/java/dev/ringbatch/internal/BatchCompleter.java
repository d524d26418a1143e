package dev.ringbatch.internal;

import java.lang.System.Logger.Level;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * The one place a batch is finished: count it, tell the recorders, complete every future, clear it. Counting
 * comes first, so a caller that sees its future done also sees its item in stats and metrics. Called by the
 * party that won the batch's settle CAS ({@link PendingBatch#state}): the consumer thread for a sync sink, the
 * thread completing the stage for an async one, or an abandoning close ({@link #abandon}). Thread-safe.
 */
final class BatchCompleter {
  private static final System.Logger LOG = System.getLogger(BatchCompleter.class.getName());

  private final String name;
  private final ConsumerCounters counters;
  private final GuardedStatsRecorders recorders;

  BatchCompleter(String name, ConsumerCounters counters, GuardedStatsRecorders recorders) {
    this.name = name;
    this.counters = counters;
    this.recorders = recorders;
  }

  /**
   * Finishes a batch the sink wrote ({@code failure} null) or failed whole. Items without a recorded outcome
   * fail as a sink bug. The caller has won the settle CAS and sealed the batch; this clears it.
   */
  void complete(PendingBatch<?, ?> batch, @Nullable Throwable failure, long writeNanos) {
    int size = batch.size();
    int failed = failure != null ? size : batch.failedCount();
    counters.recordBatch(size, failed);
    if (batch.hasWaits()) {
      batch.reportWaits(recorders);
    }
    recorders.recordBatch(size, batch.weight(), writeNanos, failed);
    int lostFireAndForget = 0;
    Throwable lostCause = null;
    for (int i = 0; i < size; i++) {
      CompletableFuture<Object> future = batch.future(i);
      byte state = batch.settledState(i);
      if (failure == null && state == PendingBatch.SUCCEEDED) {
        if (future != null) {
          completeQuietly(future, batch.settledResult(i), null);
        }
        continue;
      }
      Throwable cause = failure != null ? failure
          : state == PendingBatch.FAILED ? (Throwable) batch.outcome(i) : noOutcome(i, size);
      if (future != null) {
        completeQuietly(future, null, cause);
      } else {
        lostFireAndForget++;
        lostCause = cause;
      }
    }
    batch.clear();
    if (lostFireAndForget > 0) { // their callers cannot be told: logged, once per batch
      log(lostFireAndForget + " fire-and-forget item(s) of a batch of " + size + " failed", lostCause);
    }
  }

  /**
   * Fails every item of a batch an abandoning close took; returns how many. The caller won the settle CAS.
   * With {@code sinkMayRead}, the batch was inside the sink, which may still be running: its items stay in
   * place (the batch is never reused after a take-over), so the sink does not see them vanish.
   */
  int abandon(PendingBatch<?, ?> batch, Throwable cause, boolean sinkMayRead) {
    int size = batch.size();
    for (int i = 0; i < size; i++) {
      CompletableFuture<Object> future = batch.future(i);
      if (future != null) {
        completeQuietly(future, null, cause);
      }
    }
    if (!sinkMayRead) {
      batch.clear();
    }
    return size;
  }

  /** Fails one item an abandoning close found unread in the ring. */
  void abandon(@Nullable CompletableFuture<Object> future, Throwable cause) {
    if (future != null) {
      completeQuietly(future, null, cause);
    }
  }

  /** Counts items abandoned by a close and tells the recorders: once per close or take-over, not per item. */
  void countAbandoned(long items) {
    if (items > 0) {
      counters.recordAbandoned(items);
      recorders.recordAbandoned(items);
    }
  }

  /** Tells the recorders a batch will be retried. */
  void recordRetry(int attempt, Throwable cause) {
    recorders.recordRetry(attempt, cause);
  }

  private IllegalStateException noOutcome(int index, int size) {
    return new IllegalStateException("the sink of batcher '" + name + "' recorded no outcome for item " + index
        + " of a batch of " + size + "; a sink must complete or fail every item (Batch.completeRemaining marks"
        + " the rest written)");
  }

  /**
   * Completes a future; its dependent actions run here. CompletableFuture captures what they throw, but a
   * StackOverflowError from a deep chain can escape: it must not stop the other futures from completing.
   */
  private void completeQuietly(CompletableFuture<Object> future, @Nullable Object result, @Nullable Throwable cause) {
    try {
      if (cause == null) {
        future.complete(result);
      } else {
        future.completeExceptionally(cause);
      }
    } catch (Throwable t) {
      log("a dependent action of an item's future threw", t);
    }
  }

  private void log(String message, @Nullable Throwable t) {
    SafeLog.log(LOG, Level.WARNING, "batcher '" + name + "': " + message, t);
  }
}
