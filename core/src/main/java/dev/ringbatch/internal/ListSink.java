package dev.ringbatch.internal;

import static java.util.Objects.requireNonNull;

import dev.ringbatch.Batch;
import dev.ringbatch.BatchSink;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The sinks {@link BatchSink#noResult} and {@link BatchSink#withResults} build: user code sees a list of
 * items, never a {@link Batch}, so it cannot record an outcome late or into another batch. That lets
 * {@link SyncBatchWriter} give it a reused, read-only list and record the outcomes itself, with no view and no
 * allocation per batch. Called through {@link #write(Batch)} (by an async path or a test double) it behaves
 * like any sink. Public only because {@link BatchSink} builds it; not API.
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
    List<R> results = writeItems(batch.items());
    if (results == null) {
      batch.completeRemaining(null);
    } else {
      for (int i = 0; i < results.size(); i++) {
        batch.complete(i, results.get(i));
      }
    }
  }

  /**
   * Writes {@code items}; returns null when every item succeeded with {@code null}, else one result per item.
   *
   * @throws IllegalStateException if the writer returned null or a list of the wrong size
   */
  @Nullable List<R> writeItems(List<T> items) throws Exception {
    if (itemsWriter != null) {
      itemsWriter.write(items);
      return null;
    }
    List<R> results = requireNonNull(resultsWriter).write(items);
    if (results == null) {
      throw new IllegalStateException("sink returned null instead of a list of " + items.size() + " results");
    }
    if (results.size() != items.size()) {
      throw new IllegalStateException("sink returned " + results.size() + " results for a batch of "
          + items.size() + " items");
    }
    return results;
  }
}
