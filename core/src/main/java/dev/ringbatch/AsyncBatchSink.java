package dev.ringbatch;

import java.util.concurrent.CompletionStage;

/**
 * A sink that writes a batch asynchronously (an HTTP bulk call, a broker send) and returns at once with a
 * stage that completes when the batch is written. While up to {@link BatcherConfig#maxInFlightBatches()}
 * batches are in flight, the consumer goes on coalescing the next one; at the limit it waits, the ring fills,
 * and producers meet the overflow policy.
 *
 * <p>{@link #write} is called on the consumer thread, one batch at a time, in ring order. The {@link Batch}
 * stays valid, and its outcomes may be recorded from any thread, until the returned stage completes. When
 * the stage completes normally, the recorded outcomes apply (an item left without one fails as a sink bug, see
 * {@link Batch}); when it completes
 * exceptionally (or {@code write} throws), every item of the batch fails with that exception, except an item
 * whose failure was already recorded, which keeps it (a recorded failure is final, see {@link Batch}). Batches may
 * complete in any order, so items of different batches may complete out of ring order; {@code flush()}
 * still completes only once every earlier batch has. A stage that fires more than once settles its batch once;
 * later firings are ignored.
 *
 * <p>Callers' futures complete, and their dependent actions run, on the thread that completes the stage (on
 * the consumer thread if the stage is already complete when {@code write} returns). The in-flight slot is
 * given back before they run, so a dependent action may submit, and even {@code submitAndWait}, on a thread
 * that is not the consumer's.
 *
 * @param <T> the item type
 * @param <R> the per-item result type
 */
@FunctionalInterface
public interface AsyncBatchSink<T, R> {

  /**
   * Starts writing {@code batch}; called on the consumer thread.
   *
   * @return a stage that completes when the batch is written, exceptionally to fail it whole (but for the items
   *     whose failure was recorded)
   * @throws Exception to fail every item of the batch at once (but for the items whose failure was recorded)
   */
  CompletionStage<?> write(Batch<T, R> batch) throws Exception;
}
