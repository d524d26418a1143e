package dev.ringbatch.internal.consume;

import java.util.AbstractList;
import java.util.RandomAccess;

/**
 * A batch's items ({@link dev.ringbatch.Batch#items()}, and what a list sink sees): read-only, checked against the
 * generation it was opened with like a {@link BatchView}, and not a {@link dev.ringbatch.Batch}, so the sink cannot
 * record outcomes through it (a list sink's writer records its returned results).
 */
final class ItemsView<T> extends AbstractList<T> implements RandomAccess {
  private final PendingBatch<T, ?> storage;
  private final int generation;
  private final int size;

  ItemsView(PendingBatch<T, ?> storage, int generation, int size) {
    this.storage = storage;
    this.generation = generation;
    this.size = size;
  }

  @Override
  @SuppressWarnings("unchecked")
  public T get(int index) {
    if (index < 0 || index >= size) {
      throw new IndexOutOfBoundsException("index " + index + " is out of bounds for a batch of " + size);
    }
    return (T) storage.readItem(generation, index);
  }

  @Override
  public int size() {
    return size;
  }
}
