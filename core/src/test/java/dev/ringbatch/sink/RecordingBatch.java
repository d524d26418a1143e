package dev.ringbatch.sink;

import dev.ringbatch.Batch;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** A {@link Batch} for calling a sink directly in tests; records the outcome of each item. */
public final class RecordingBatch<T, R> implements Batch<T, R> {
  private final List<T> items;
  private final Map<Integer, R> completed = new TreeMap<>();
  private final Map<Integer, Throwable> failed = new TreeMap<>();

  private RecordingBatch(List<T> items) {
    this.items = items;
  }

  /** A batch of {@code items} (a copy). */
  public static <T, R> RecordingBatch<T, R> of(List<T> items) {
    return new RecordingBatch<>(new java.util.ArrayList<>(items));
  }

  @SafeVarargs
  public static <T, R> RecordingBatch<T, R> of(T... items) {
    List<T> list = new java.util.ArrayList<>(items.length);
    for (T item : items) {
      list.add(item);
    }
    return new RecordingBatch<>(list);
  }

  @Override
  public int size() {
    return items.size();
  }

  @Override
  public T item(int index) {
    return items.get(index);
  }

  @Override
  public List<T> items() {
    return items;
  }

  @Override
  public long weight() {
    return 0;
  }

  @Override
  public void complete(int index, R result) {
    record(index);
    completed.put(index, result);
  }

  @Override
  public void fail(int index, Throwable cause) {
    record(index);
    failed.put(index, cause);
  }

  private void record(int index) {
    if (completed.containsKey(index) || failed.containsKey(index)) {
      throw new IllegalStateException("item " + index + " of the batch already has an outcome");
    }
  }

  public Map<Integer, R> completed() {
    return completed;
  }

  public Map<Integer, Throwable> failed() {
    return failed;
  }
}
