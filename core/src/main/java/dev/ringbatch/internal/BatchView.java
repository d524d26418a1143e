package dev.ringbatch.internal;

import static java.util.Objects.requireNonNull;

import dev.ringbatch.Batch;
import java.util.AbstractList;
import java.util.List;
import java.util.RandomAccess;
import org.jspecify.annotations.Nullable;

/**
 * The {@link Batch} one sink call sees: a fresh, small view of a {@link PendingBatch} for each attempt. It
 * carries the generation it was opened with, so a sink that keeps it and records an outcome later (after its
 * write returned, its stage completed, or into a batch that now holds other callers' items) gets an
 * {@link IllegalStateException} instead of touching someone else's batch. Reads ({@link #item}, {@link #items})
 * are meant for the duration of the call; recording is thread-safe.
 */
final class BatchView<T, R> extends AbstractList<T> implements Batch<T, R>, RandomAccess {
  private final PendingBatch<T, R> storage;
  private final int generation;
  private final String batcherName;
  private final int size;
  private final long weight;

  BatchView(PendingBatch<T, R> storage, int generation, String batcherName) {
    this.storage = storage;
    this.generation = generation;
    this.batcherName = batcherName;
    this.size = storage.size();
    this.weight = storage.weight();
  }

  @Override
  public int size() {
    return size;
  }

  @Override
  @SuppressWarnings("unchecked")
  public T item(int index) {
    if (index < 0 || index >= size) {
      throw new IndexOutOfBoundsException("index " + index + " is out of bounds for a batch of " + size);
    }
    return (T) storage.item(index);
  }

  @Override
  public T get(int index) {
    return item(index);
  }

  @Override
  public List<T> items() {
    return this;
  }

  @Override
  public long weight() {
    return weight;
  }

  @Override
  public void complete(int index, @Nullable R result) {
    storage.record(generation, index, PendingBatch.SUCCEEDED, result);
  }

  @Override
  public void fail(int index, Throwable cause) {
    storage.record(generation, index, PendingBatch.FAILED, requireNonNull(cause, "cause"));
  }

  @Override
  public void completeRemaining(@Nullable R result) {
    storage.recordRemaining(generation, result);
  }

  @Override
  public String toString() {
    return "Batch{batcher='" + batcherName + "', size=" + size + '}';
  }
}
