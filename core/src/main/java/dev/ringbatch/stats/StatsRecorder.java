package dev.ringbatch.stats;

import dev.ringbatch.CloseReport;
import dev.ringbatch.RejectionReason;

/**
 * Receives a batcher's events as they happen, for metrics. Register with
 * {@link dev.ringbatch.Batcher#addStatsRecorder(StatsRecorder)}; the ringbatch-micrometer module implements it.
 *
 * <p>Every method has an empty default, so a recorder implements only what it needs. Implementations must
 * be thread-safe, fast and must not block: {@link #recordBatch} runs on the consumer thread between two
 * batches, {@link #recordRejected} on the producer's thread. An exception thrown by a recorder is logged at
 * {@code WARNING} and otherwise ignored; it never affects the items.
 */
public interface StatsRecorder {

  /**
   * Records one batch the sink wrote or failed, before its futures complete (so a caller that sees its future
   * done also sees its batch recorded). Called on the consumer thread for a {@link dev.ringbatch.BatchSink};
   * for an {@link dev.ringbatch.AsyncBatchSink}, on the thread that completed the batch's stage (the consumer
   * thread if it was complete when {@code write} returned). Not called for the items a close abandoned: those
   * reach {@link #recordAbandoned}. The items of a batch a close took that keep a failure their sink recorded
   * are recorded as one batch of failed items ({@code size == failed}, weight and time 0), on the close's thread.
   *
   * @param size the number of items in the batch
   * @param weight the total weight of the items, 0 without a weigher
   * @param writeNanos how long the sink took, retries and their backoff included
   * @param failed how many of the items failed ({@code size} when the sink threw)
   */
  default void recordBatch(int size, long weight, long writeNanos, int failed) {}

  /**
   * Whether this recorder wants {@link #recordItemWaits}. Asked whenever the batcher's recorders change; one
   * that throws counts as no. While at least one registered recorder says yes, each producer reads the
   * batcher's {@link dev.ringbatch.Ticker} once per item to stamp it (by default {@code System.nanoTime()});
   * otherwise nothing is stamped. {@link #recordItemWaits} is called only on recorders that said yes. Items
   * published before the first such recorder was added are not measured.
   *
   * @return false by default
   */
  default boolean recordsItemWaits() {
    return false;
  }

  /**
   * Records how long the items of one batch waited between their {@code submit} or {@code offer} call (a wait
   * for room in the ring included) and their batch's first write attempt starting: the time an item spends
   * queued, before the sink's time ({@link #recordBatch}'s {@code writeNanos}) begins. Called once per written or failed batch, just before
   * {@link #recordBatch} and on the same thread, only if {@link #recordsItemWaits()} said yes.
   *
   * @param items how many items of the batch were measured (all of them, unless the measuring began while
   *     the batch was filling)
   * @param totalWaitNanos the sum of their waits, so {@code totalWaitNanos / items} is the mean
   * @param maxWaitNanos the longest wait among them: the oldest item's
   */
  default void recordItemWaits(int items, long totalWaitNanos, long maxWaitNanos) {}

  /**
   * Whether this recorder, which said yes to {@link #recordsItemWaits()}, also wants each item's wait, through
   * {@link #recordEachItemWait}: for a histogram or percentiles of the waits, which the sum and maximum cannot give.
   * Asked whenever the batcher's recorders change; one that throws counts as no. It costs one call per batch and a
   * pass over its items, on the thread that completes the batch.
   *
   * @return false by default
   */
  default boolean recordsEachItemWait() {
    return false;
  }

  /**
   * Records the wait of each measured item of one batch, as {@link #recordItemWaits} defines it. Called right after
   * {@link #recordItemWaits}, on the same thread, only if {@link #recordsEachItemWait()} said yes.
   *
   * @param waitNanos each item's wait in nanoseconds, in its first {@code count} elements; the array is reused for
   *     the next batch, so read it during the call only and do not keep it
   * @param count how many items were measured
   */
  default void recordEachItemWait(long[] waitNanos, int count) {}

  /**
   * Records an item the batcher refused. Called on the producer's thread.
   *
   * @param reason why it was refused
   */
  default void recordRejected(RejectionReason reason) {}

  /**
   * Records items abandoned by a {@code close} that timed out. Called after the close's report is out, on a thread
   * of the close's own, apart from the abandoned callers' dependent actions, and before their futures complete
   * (so a caller whose future is done finds its item recorded: one that blocks here holds those callers up, as a
   * {@link #recordBatch} that blocks holds up its batch's); before {@link #recordClosed}. If the close had to leave the consumer
   * behind, the consumer fails what it held when it gets to run, and calls this on its own thread.
   *
   * @param count how many items were abandoned
   */
  default void recordAbandoned(long count) {}

  /**
   * Records that a batch whose sink threw is about to be written again, by the batcher's
   * {@link dev.ringbatch.RetryPolicy}. Called on the consumer thread.
   *
   * @param attempt the attempt about to be made, 2 for the first retry
   * @param cause what the previous attempt threw
   */
  default void recordRetry(int attempt, Throwable cause) {}

  /**
   * Records that the batcher finished closing. Called once, after the close's report is out, on a thread of the
   * close's own, after {@link #recordAbandoned}; for a sharded batcher, once, after every shard has closed and told
   * its recorders (unless one of them still blocks a second past the close's timeout). A metrics binder removes its meters here. A batch still being completed
   * by a consumer that a timed-out close had to leave behind may be recorded after it. An item a producer
   * publishes after a timed-out close gave up waiting for its slot is counted in {@code stats()} as abandoned,
   * but not recorded here.
   *
   * @param report what the close achieved
   */
  default void recordClosed(CloseReport report) {}
}
