package dev.ringbatch;

import java.util.List;

/**
 * Where a batcher writes its batches: a JDBC batch insert, a file append, a bulk API call.
 *
 * <h2>Threads</h2>
 * {@link #write(Batch)} is called by the batcher's single consumer thread only, one batch at a time, so a
 * sink may hold a resource that is not thread-safe (a JDBC connection, a file channel). It may submit items
 * into its own batcher (to log, say) without deadlock: such a submission is accepted while the ring has
 * room and rejected at once, never blocked, when it is full. It must not wait on its own batcher
 * ({@link Batcher#submitAndWait}, {@code flush().join()}, {@link Batcher#close()}): the consumer would wait
 * for itself.
 *
 * <h2>Results and failures</h2>
 * Record an outcome for every item on the {@link Batch} ({@link Batch#completeRemaining} marks all the
 * rest written) and return normally; an item left without one fails as a sink bug. Throw (any {@link Throwable},
 * {@link Error}s included) and every item of the batch fails with it (or is retried, by the
 * {@link BatcherConfig#retryPolicy() retry policy}), except an item whose failure was already recorded, which keeps
 * it: a recorded failure is final (see {@link Batch}). The consumer goes on to the next batch.
 *
 * @param <T> the item type
 * @param <R> the per-item result type; {@link Void} for sinks without results
 */
@FunctionalInterface
public interface BatchSink<T, R> {

  /**
   * Writes one batch. Called on the consumer thread only.
   *
   * @param batch the items and their outcomes, valid during this call only
   * @throws Exception to fail every item of the batch with it (but for the items whose failure was recorded)
   */
  void write(Batch<T, R> batch) throws Exception;

  /**
   * Returns a sink for writers without per-item results: each item's future completes with {@code null}
   * after {@code writer} returns, or fails with what it threw.
   *
   * <pre>{@code
   * BatchSink<String, Void> sink = BatchSink.noResult(lines -> appendAll(file, lines));
   * }</pre>
   */
  static <T> BatchSink<T, Void> noResult(ItemsWriter<T> writer) {
    return dev.ringbatch.internal.consume.ListSink.noResult(writer);
  }

  /**
   * Returns a sink whose writer returns one result per item, in item order.
   *
   * @throws NullPointerException if {@code writer} is null
   */
  static <T, R> BatchSink<T, R> withResults(ResultsWriter<T, R> writer) {
    return dev.ringbatch.internal.consume.ListSink.withResults(writer);
  }

  /**
   * Writes a list of items with no per-item result.
   *
   * @param <T> the item type
   */
  @FunctionalInterface
  interface ItemsWriter<T> {
    /** Writes {@code items}, a view valid during this call only. */
    void write(List<T> items) throws Exception;
  }

  /**
   * Writes a list of items and returns one result per item.
   *
   * @param <T> the item type
   * @param <R> the per-item result type
   */
  @FunctionalInterface
  interface ResultsWriter<T, R> {
    /** Writes {@code items}, a view valid during this call only, and returns their results in order. */
    List<R> write(List<T> items) throws Exception;
  }
}
