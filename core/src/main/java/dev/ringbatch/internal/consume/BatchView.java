package dev.ringbatch.internal.consume;

import static java.util.Objects.requireNonNull;

import dev.ringbatch.Batch;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The {@link Batch} one sink call sees: a fresh, small view of a {@link PendingBatch} for each attempt (a retry's
 * view holds only the items without a recorded failure). It carries the generation it was opened with, and every
 * read and every record is checked against it, so a sink that keeps the view (or its {@link #items()} list) and
 * uses it later — after its write returned, after its stage completed, or once the storage holds other callers'
 * items — gets an {@link IllegalStateException} instead of another caller's item. Recording is thread-safe.
 */
final class BatchView<T, R> implements Batch<T, R> {
  private final PendingBatch<T, R> storage;
  private final int generation;
  private final String batcherName;
  private final int size;
  private final long weight;

  BatchView(PendingBatch<T, R> storage, int generation, String batcherName, int size, long weight) {
    this.storage = storage;
    this.generation = generation;
    this.batcherName = batcherName;
    this.size = size;
    this.weight = weight;
  }

  int generation() {
    return generation;
  }

  /**
   * The items as a read-only list that is not a {@link Batch} (a list sink's writer must not record), checked
   * against the generation as the view is.
   */
  ItemsView<T> readOnlyItems() {
    return new ItemsView<>(storage, generation, size);
  }

  @Override
  public int size() {
    return size;
  }

  @Override
  @SuppressWarnings("unchecked")
  public T item(int index) {
    return (T) storage.readItem(generation, checkIndex(index));
  }

  @Override
  public List<T> items() {
    return readOnlyItems(); // a list of its own: it prints as a list, and is no Batch to record through
  }

  @Override
  public long weight() {
    return weight;
  }

  @Override
  public void complete(int index, @Nullable R result) {
    storage.record(generation, checkIndex(index), PendingBatch.SUCCEEDED, result);
  }

  @Override
  public void fail(int index, Throwable cause) {
    requireNonNull(cause, "cause");
    storage.record(generation, checkIndex(index), PendingBatch.FAILED, cause);
  }

  @Override
  public void completeRemaining(@Nullable R result) {
    storage.recordRemaining(generation, result);
  }

  private int checkIndex(int index) {
    if (index < 0 || index >= size) {
      throw new IndexOutOfBoundsException("index " + index + " is out of bounds for a batch of " + size);
    }
    return index;
  }

  @Override
  public String toString() {
    return "Batch{batcher='" + batcherName + "', size=" + size + '}';
  }
}
