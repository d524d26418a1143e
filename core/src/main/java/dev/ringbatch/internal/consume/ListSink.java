package dev.ringbatch.internal.consume;

import static java.util.Objects.requireNonNull;

import dev.ringbatch.Batch;
import dev.ringbatch.BatchSink;
import dev.ringbatch.OutcomeUnknownException;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The sinks {@link BatchSink#noResult} and {@link BatchSink#withResults} build: user code sees a read-only
 * list of items ({@link ItemsView}, checked like a view), never a {@link Batch}, so it cannot record an outcome,
 * late or at all: {@link SyncBatchWriter} records what it returns. Results that do not fit (null, or the wrong
 * size) fail every item without a retry: the writer returned, so it may have written them. Called through
 * {@link #write(Batch)} (by an async path or a test double) it behaves like any sink. Public only because
 * {@link BatchSink} builds it; not API.
 */
public final class ListSink<T, R> implements BatchSink<T, R> {
  private final BatchSink.@Nullable ItemsWriter<T> itemsWriter;
  private final BatchSink.@Nullable ResultsWriter<T, R> resultsWriter;

  private ListSink(BatchSink.@Nullable ItemsWriter<T> itemsWriter,
      BatchSink.@Nullable ResultsWriter<T, R> resultsWriter) {
    this.itemsWriter = itemsWriter;
    this.resultsWriter = resultsWriter;
  }

  /** See {@link BatchSink#noResult}. */
  public static <T> BatchSink<T, Void> noResult(BatchSink.ItemsWriter<T> writer) {
    return new ListSink<>(requireNonNull(writer, "writer"), null);
  }

  /** See {@link BatchSink#withResults}. */
  public static <T, R> BatchSink<T, R> withResults(BatchSink.ResultsWriter<T, R> writer) {
    return new ListSink<>(null, requireNonNull(writer, "writer"));
  }

  @Override
  public void write(Batch<T, R> batch) throws Exception {
    int size = batch.size();
    Read read = read(writeItems(batch.items()), size); // a throw from the writer: the batch failed, may be retried
    if (read.misfit() != null) {
      for (int i = 0; i < size; i++) {
        batch.fail(i, read.misfit()); // recorded, so final: the writer returned, it may have written them
      }
    } else if (read.results() == null) {
      batch.completeRemaining(null);
    } else {
      for (int i = 0; i < size; i++) {
        @SuppressWarnings("unchecked")
        R result = (R) read.results()[i];
        batch.complete(i, result);
      }
    }
  }

  /** What a writer returned, read: a copy of its results (null for {@code noResult}), or why none fit. */
  record Read(@Nullable Object @Nullable [] results, @Nullable Throwable misfit) {}

  /**
   * Reads what the writer returned, which is user code ({@code size()} and {@code get()} may throw or block), into
   * a copy, outside any lock. Results that do not fit or cannot be read give the failure every item gets, never
   * retried: the writer returned, so it may have written them. Never throws.
   */
  Read read(@Nullable List<R> results, int size) {
    try {
      Throwable misfit = misfit(results, size);
      if (misfit != null || results == null) {
        return new Read(null, misfit);
      }
      Object[] copy = new Object[size];
      for (int i = 0; i < size; i++) {
        copy[i] = results.get(i);
      }
      return new Read(copy, null);
    } catch (Throwable unreadable) {
      return new Read(null, new OutcomeUnknownException("the results the sink returned could not be read ("
          + unreadable.getClass().getName() + "); it may have written the items", unreadable));
    }
  }

  /** Writes {@code items}; returns what the writer returned: null for {@code noResult}, one result per item. */
  @Nullable List<R> writeItems(List<T> items) throws Exception {
    if (itemsWriter != null) {
      itemsWriter.write(items);
      return null;
    }
    return requireNonNull(resultsWriter).write(items);
  }

  /**
   * The failure every item gets when a results writer returned null or a list of the wrong size, or null when
   * the results fit. The writer returned normally, so it may have written them: their outcome is unknown, and they
   * are not retried.
   */
  private @Nullable OutcomeUnknownException misfit(@Nullable List<R> results, int size) {
    if (resultsWriter == null) {
      return null;
    }
    if (results == null) {
      return new OutcomeUnknownException("sink returned null instead of a list of " + size + " results; it may"
          + " have written the items", null);
    }
    if (results.size() != size) {
      return new OutcomeUnknownException("sink returned " + results.size() + " results for a batch of " + size
          + " items; it may have written them", null);
    }
    return null;
  }
}
