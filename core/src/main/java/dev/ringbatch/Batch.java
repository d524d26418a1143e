package dev.ringbatch;

import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The batch a {@link BatchSink} is asked to write: its items in ring order, and a place to record each
 * item's outcome. Valid only during {@link BatchSink#write(Batch)} and only on the consumer thread; the
 * batcher reuses it for the next batch.
 *
 * <p>Outcomes recorded with {@link #complete} and {@link #fail} are applied to the callers' futures after
 * {@code write} returns normally; items given no outcome then succeed with a {@code null} result. If
 * {@code write} throws, every item of the batch fails with that exception, whatever was recorded: a sink
 * that commits a transaction can record per-row results and still fail them all when the commit fails.
 *
 * @param <T> the item type
 * @param <R> the per-item result type
 */
public interface Batch<T, R> {

  /** Returns the number of items, at least one. */
  int size();

  /**
   * Returns the item at {@code index}.
   *
   * @throws IndexOutOfBoundsException if {@code index} is not in {@code [0, size())}
   */
  T item(int index);

  /** Returns the items as an unmodifiable, random-access view, valid during {@code write} only. */
  List<T> items();

  /** Returns the total weight of the items as given by the batcher's {@link Weigher}, or 0 without one. */
  long weight();

  /**
   * Records that the item at {@code index} succeeded with {@code result}.
   *
   * @throws IndexOutOfBoundsException if {@code index} is not in {@code [0, size())}
   * @throws IllegalStateException if an outcome was already recorded for {@code index}
   */
  void complete(int index, @Nullable R result);

  /**
   * Records that the item at {@code index} failed with {@code cause}; the rest of the batch is unaffected.
   *
   * @throws IndexOutOfBoundsException if {@code index} is not in {@code [0, size())}
   * @throws IllegalStateException if an outcome was already recorded for {@code index}
   * @throws NullPointerException if {@code cause} is null
   */
  void fail(int index, Throwable cause);
}
