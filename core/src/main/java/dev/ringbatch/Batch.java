package dev.ringbatch;

import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The batch a {@link BatchSink} is asked to write: its items in ring order, and a place to record each
 * item's outcome. A sink gets a fresh {@code Batch} for each call: it is valid during {@link BatchSink#write}
 * (for an {@link AsyncBatchSink}, until the returned stage completes), and recording into it afterwards
 * throws {@link IllegalStateException}, so a kept reference can never reach another batch's items.
 *
 * <p>A sink records an outcome for every item: {@link #complete} or {@link #fail} one by one, or
 * {@link #completeRemaining} for all that have none yet. Outcomes are applied to the callers' futures after
 * {@code write} returns normally. An item left without an outcome is a sink bug: it fails with an
 * {@link IllegalStateException} naming the batcher and the item's index, and counts as failed; it never
 * succeeds by default. A recorded failure is final: if {@code write} throws, an item keeps the failure recorded
 * for it (an {@link OutcomeUnknownException}, say) and every other item fails with the thrown exception, its
 * recorded success voided (a sink that commits a transaction can record per-row results and still fail them
 * when the commit fails). A retry ({@link RetryPolicy}) hands the sink only the items without a recorded
 * failure, in a fresh {@code Batch} whose indices run over those items. Recording is thread-safe; once
 * {@link #completeRemaining} was called, recording anything else throws.
 *
 * <p>Reading ({@link #item}, {@link #items}) is valid while recording is: a {@code Batch} (or its items list)
 * kept past {@code write} (for an async sink, past its stage) throws {@link IllegalStateException} when read
 * once the batcher reuses its storage, and never shows another caller's item.
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

  /**
   * Returns the items as an unmodifiable, random-access view, valid during {@code write} only: read later, it
   * throws {@link IllegalStateException} rather than show another batch's items.
   */
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

  /**
   * Records that every item without an outcome so far succeeded with {@code result}: what a sink that
   * wrote the whole batch at once calls ({@link BatchSink#noResult} does).
   *
   * <p>The batcher's batches skip items that already have an outcome. This default, for other
   * implementations (test doubles), completes every index and so throws if any already has one.
   *
   * @throws IllegalStateException if the batch is no longer being written
   */
  default void completeRemaining(@Nullable R result) {
    for (int i = 0; i < size(); i++) {
      complete(i, result);
    }
  }
}
