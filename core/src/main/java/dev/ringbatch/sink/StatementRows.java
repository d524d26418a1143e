package dev.ringbatch.sink;

import dev.ringbatch.Batch;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * The rows of the batch a {@link JdbcBatchSink} is writing: which ones are settled (told written or failed), and
 * which ones the last statement carried; binds those rows and runs the statement. Consumer thread only.
 *
 * @param <T> the item type
 */
final class StatementRows<T> {
  private final @Nullable StatementBinder<? super T> binder;
  private final UnnestColumns<T> columns;
  private @Nullable Batch<T, Integer> batch;
  private boolean[] settled = new boolean[0];
  private int[] sent = new int[0];
  private int sentCount;

  StatementRows(@Nullable StatementBinder<? super T> binder, UnnestColumns<T> columns) {
    this.binder = binder;
    this.columns = columns;
  }

  /** Starts on {@code batch}: no row settled; returns every row's index. */
  int[] begin(Batch<T, Integer> batch) {
    this.batch = batch;
    int size = batch.size();
    if (settled.length < size) {
      settled = new boolean[size];
      sent = new int[size];
    }
    Arrays.fill(settled, 0, size, false);
    sentCount = 0;
    int[] rows = new int[size];
    for (int i = 0; i < size; i++) {
      rows[i] = i;
    }
    return rows;
  }

  /** How many rows the last statement carried. */
  int sentCount() {
    return sentCount;
  }

  /** The rows the last statement carried. */
  int[] sentRows() {
    return Arrays.copyOf(sent, sentCount);
  }

  /**
   * Binds the unsettled {@code rows} and runs the statement: a JDBC batch of one row per item with a binder, else
   * one statement over column arrays. An item whose binder or column function throws fails alone.
   *
   * @return the result of each row sent, in {@link #sentRows()} order
   */
  int[] execute(Connection c, PreparedStatement ps, int[] rows) throws SQLException {
    Batch<T, Integer> b = current();
    sentCount = 0;
    if (binder != null) {
      ps.clearBatch();
      for (int row : rows) {
        if (settled[row]) {
          continue;
        }
        try {
          binder.bind(ps, b.item(row));
          ps.addBatch();
          sent[sentCount++] = row;
        } catch (Throwable e) { // user code: Errors and sneaky checked exceptions fail the item too
          fail(row, e);
          ps.clearParameters();
        }
      }
      return sentCount == 0 ? new int[0] : ps.executeBatch();
    }
    Object[][] values = columns.newValues(rows.length);
    for (int row : rows) {
      if (settled[row]) {
        continue;
      }
      try {
        columns.extract(b.item(row), values, sentCount);
        sent[sentCount++] = row;
      } catch (Throwable e) { // user code: Errors and sneaky checked exceptions fail the item too
        fail(row, e);
      }
    }
    if (sentCount == 0) {
      return new int[0];
    }
    int[] counts = new int[sentCount];
    Arrays.fill(counts, columns.execute(c, ps, values, sentCount));
    return counts;
  }

  /** The rows the last statement carried are committed: each is told its count. */
  void completeSent(int[] counts) {
    Batch<T, Integer> b = current();
    for (int j = 0; j < sentCount; j++) {
      int row = sent[j];
      settled[row] = true;
      b.complete(row, counts.length == sentCount ? counts[j] : Statement.SUCCESS_NO_INFO);
    }
  }

  void fail(int row, Throwable cause) {
    settled[row] = true;
    current().fail(row, cause);
  }

  void failUnsettled(int[] rows, Throwable cause) {
    for (int row : rows) {
      if (!settled[row]) {
        fail(row, cause);
      }
    }
  }

  private Batch<T, Integer> current() {
    Batch<T, Integer> b = batch;
    if (b == null) {
      throw new IllegalStateException("no batch is being written");
    }
    return b;
  }
}
