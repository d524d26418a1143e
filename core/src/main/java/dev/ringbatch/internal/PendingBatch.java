package dev.ringbatch.internal;

import static java.util.Objects.requireNonNull;

import dev.ringbatch.Batch;
import java.util.AbstractList;
import java.util.Arrays;
import java.util.List;
import java.util.RandomAccess;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * The batch the consumer is filling, and the {@link Batch} view the sink writes. Holds items, their
 * futures (null for fire-and-forget items) and the outcomes the sink records; applies them to the futures
 * once the sink has returned, then forgets every reference so that written items are not kept reachable.
 *
 * <p>Owned by the consumer thread. An abandoning close reads it only after the consumer has handed it over
 * (see {@link CoalescingConsumer}). The arrays grow on demand up to the ring size and are then reused: the
 * steady state allocates nothing.
 */
final class PendingBatch<T, R> implements Batch<T, R> {
  /** Settle states of a batch handed to an async sink: it is settled once, by its completion or by a close. */
  static final int IDLE = 0;
  static final int IN_FLIGHT = 1;
  static final int SETTLED = 2;

  private static final byte NONE = 0;
  private static final byte SUCCEEDED = 1;
  private static final byte FAILED = 2;

  private final int maxCapacity;
  private Object[] items;
  private @Nullable CompletableFuture<Object>[] futures;
  private @Nullable Object[] outcomes;
  private byte[] states;
  private int size;
  private int fireAndForget;
  private long weight;
  private boolean writing;
  private int lastFailedFireAndForget;
  private @Nullable Throwable lastFireAndForgetFailure;
  private final ItemsView view = new ItemsView();
  /** For async sinks: whether completion or an abandoning close settles this batch (CAS from IN_FLIGHT). */
  final java.util.concurrent.atomic.AtomicInteger state = new java.util.concurrent.atomic.AtomicInteger(IDLE);
  /** For async sinks: written by the consumer before dispatch, read by whoever settles the batch. */
  long startNanos;

  PendingBatch(int initialCapacity, int maxCapacity) {
    this.maxCapacity = maxCapacity;
    int capacity = Math.max(1, Math.min(initialCapacity, maxCapacity));
    this.items = new Object[capacity];
    this.futures = newFutureArray(capacity);
    this.outcomes = new Object[capacity];
    this.states = new byte[capacity];
  }

  @SuppressWarnings("unchecked")
  private static @Nullable CompletableFuture<Object>[] newFutureArray(int capacity) {
    return (CompletableFuture<Object>[]) new CompletableFuture<?>[capacity];
  }

  void add(Object item, @Nullable CompletableFuture<Object> future, long itemWeight) {
    if (size == items.length) {
      grow();
    }
    items[size] = item;
    futures[size] = future;
    if (future == null) {
      fireAndForget++;
    }
    size++;
    weight += itemWeight;
  }

  private void grow() {
    int capacity = Math.min(maxCapacity, items.length * 2);
    if (capacity <= items.length) {
      throw new IllegalStateException("batch of " + size + " items cannot grow past " + maxCapacity);
    }
    items = Arrays.copyOf(items, capacity);
    futures = Arrays.copyOf(futures, capacity);
    outcomes = Arrays.copyOf(outcomes, capacity);
    states = Arrays.copyOf(states, capacity);
  }

  boolean isEmpty() {
    return size == 0;
  }

  int fireAndForgetCount() {
    return fireAndForget;
  }

  /** Marks the start and end of the sink call; outside it, {@link #complete} and {@link #fail} throw. */
  void writing(boolean writing) {
    this.writing = writing;
  }

  @Override
  public int size() {
    return size;
  }

  @Override
  @SuppressWarnings("unchecked")
  public T item(int index) {
    return (T) items[checkIndex(index)];
  }

  @Override
  public List<T> items() {
    return view;
  }

  @Override
  public long weight() {
    return weight;
  }

  @Override
  public void complete(int index, @Nullable R result) {
    record(index, SUCCEEDED, result);
  }

  @Override
  public void fail(int index, Throwable cause) {
    record(index, FAILED, requireNonNull(cause, "cause"));
  }

  private void record(int index, byte state, @Nullable Object outcome) {
    // Checked first: writing is cleared before the futures complete, so a caller that saw its future
    // complete reliably gets this message, whatever the batch holds by then.
    if (!writing) {
      throw new IllegalStateException("the batch is no longer being written; record outcomes inside write()");
    }
    checkIndex(index);
    if (states[index] != NONE) {
      throw new IllegalStateException("item " + index + " of the batch already has an outcome");
    }
    states[index] = state;
    outcomes[index] = outcome;
  }

  private int checkIndex(int index) {
    if (index < 0 || index >= size) {
      throw new IndexOutOfBoundsException("index " + index + " is out of bounds for a batch of " + size);
    }
    return index;
  }

  /** Forgets the outcomes a failed attempt recorded, before a retry writes the batch again. */
  void resetOutcomes() {
    Arrays.fill(outcomes, 0, size, null);
    Arrays.fill(states, 0, size, NONE);
  }

  /** Counts the items that will fail: all of them if {@code batchFailure} is given, else those failed singly. */
  int failedCount(@Nullable Throwable batchFailure) {
    if (batchFailure != null) {
      return size;
    }
    int failed = 0;
    for (int i = 0; i < size; i++) {
      if (states[i] == FAILED) {
        failed++;
      }
    }
    return failed;
  }

  /**
   * Completes every future from the recorded outcomes, or fails them all with {@code batchFailure}, then
   * clears the batch.
   */
  void completeAndClear(@Nullable Throwable batchFailure) {
    int failedWithoutFuture = 0;
    for (int i = 0; i < size; i++) {
      CompletableFuture<Object> future = futures[i];
      if (batchFailure != null || states[i] == FAILED) {
        Throwable cause = batchFailure != null ? batchFailure : (Throwable) outcomes[i];
        if (future != null) {
          future.completeExceptionally(cause);
        } else {
          failedWithoutFuture++;
          lastFireAndForgetFailure = cause;
        }
      } else if (future != null) {
        future.complete(outcomes[i]);
      }
    }
    lastFailedFireAndForget = failedWithoutFuture;
    clear();
  }

  /** How many fire-and-forget items the last {@link #completeAndClear} failed; their callers cannot be told. */
  int lastFailedFireAndForget() {
    return lastFailedFireAndForget;
  }

  /** The cause of one of those failures, for the log; null after a batch without them. */
  @Nullable Throwable lastFireAndForgetFailure() {
    return lastFailedFireAndForget == 0 ? null : lastFireAndForgetFailure;
  }

  /**
   * Fails every future with {@code cause}, then clears the batch. Used by an abandoning close once the
   * consumer has handed the batch over.
   *
   * @return how many items the batch held
   */
  int failAndClear(Throwable cause) {
    int count = size;
    for (int i = 0; i < size; i++) {
      CompletableFuture<Object> future = futures[i];
      if (future != null) {
        future.completeExceptionally(cause);
      }
    }
    clear();
    return count;
  }

  private void clear() {
    Arrays.fill(items, 0, size, null);
    Arrays.fill(futures, 0, size, null);
    Arrays.fill(outcomes, 0, size, null);
    Arrays.fill(states, 0, size, NONE);
    size = 0;
    fireAndForget = 0;
    weight = 0;
  }

  /** The unmodifiable {@link Batch#items()} view; one instance, reused for every batch. */
  private final class ItemsView extends AbstractList<T> implements RandomAccess {
    @Override
    public T get(int index) {
      return item(index);
    }

    @Override
    public int size() {
      return size;
    }
  }
}
