package dev.ringbatch.postgresql;

import dev.ringbatch.Batch;
import java.sql.SQLException;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.postgresql.copy.CopyIn;

/**
 * The batch being written by a {@link PgCopySink}: each item encoded once into one COPY text buffer, with where its
 * line starts, so that any subset of the rows can be copied again without encoding them again; and which rows have
 * their outcome. An item whose column function throws fails alone here, before anything is sent. Consumer thread
 * only.
 */
final class CopyRows<T> {
  /** Bytes handed to the driver per {@code CopyData} message. */
  private static final int CHUNK = 1 << 16;

  private final List<CopyColumn<T>> columns;
  /** Whether each column is a key whose value must not be null (an idempotent sink's). */
  private final boolean[] key;
  /** Whether each line ends with the row's number in the batch (an idempotent sink's staging table). */
  private final boolean numbered;
  private final CopyText text = new CopyText();
  private PgValues.Target @Nullable [] targets;

  private @Nullable Batch<T, Integer> batch;
  /** Row i's line is {@code text[lineStart[i], lineStart[i + 1])}; empty when it failed to encode. */
  private int[] lineStart = new int[1];
  private boolean[] settled = new boolean[0];
  CopyRows(List<CopyColumn<T>> columns, boolean[] key, boolean numbered) {
    this.columns = columns;
    this.key = key;
    this.numbered = numbered;
  }

  /**
   * Encodes the batch; returns the rows that encoded (the others are failed with what their functions threw, or with
   * the encoding's refusal). {@code targets} says each column's type where the text depends on it (null: not
   * known); an array or
   * {@code List} for any other column is refused, since a text column would store its literal.
   */
  int[] begin(Batch<T, Integer> batch, PgValues.Target @Nullable [] targets) {
    this.batch = batch;
    this.targets = targets;
    int size = batch.size();
    if (lineStart.length < size + 1) {
      lineStart = new int[size + 1];
      settled = new boolean[size];
    }
    java.util.Arrays.fill(settled, 0, size, false);
    text.reset();
    int[] rows = new int[size];
    int encoded = 0;
    for (int i = 0; i < size; i++) {
      int mark = text.length();
      lineStart[i] = mark;
      try {
        encode(batch.item(i), i);
        rows[encoded++] = i;
      } catch (Throwable e) { // the item's own problem: it fails alone, and is never sent
        text.truncate(mark);
        fail(i, e);
      }
    }
    lineStart[size] = text.length();
    return encoded == size ? rows : java.util.Arrays.copyOf(rows, encoded);
  }

  private void encode(T item, int row) {
    for (int c = 0; c < columns.size(); c++) {
      if (c > 0) {
        text.tab();
      }
      CopyColumn<T> column = columns.get(c);
      Object value = column.value().apply(item);
      if (value == null && key[c]) {
        throw new IllegalArgumentException("key column '" + column.name() + "' is null: an idempotent COPY sink"
            + " needs a value in every key column to tell which rows it wrote");
      }
      PgValues.Target target = targets == null ? PgValues.Target.UNKNOWN : targets[c];
      if (!target.isArray() && target != PgValues.Target.UNKNOWN && PgValues.isArray(value)) {
        throw PgValues.refused(column.name(), value, "an array or List goes only into an array column, and this"
            + " column is not one");
      }
      String field = value == null ? null
          : value instanceof String s ? s : PgValues.text(column.name(), value, target);
      text.value(column.name(), field);
    }
    if (numbered) {
      text.tab();
      text.number(row);
    }
    text.newline();
  }

  /** Sends the lines of {@code rows} (ascending), runs of neighbouring lines in one piece. */
  void send(CopyIn copy, int[] rows) throws SQLException {
    byte[] bytes = text.bytes();
    int i = 0;
    while (i < rows.length) {
      int from = lineStart[rows[i]];
      int j = i;
      while (j + 1 < rows.length && rows[j + 1] == rows[j] + 1) {
        j++;
      }
      int to = lineStart[rows[j] + 1];
      for (int off = from; off < to; off += CHUNK) {
        copy.writeToCopy(bytes, off, Math.min(CHUNK, to - off));
      }
      i = j + 1;
    }
  }

  /** The rows are committed: each is told {@code result}. */
  void complete(int[] rows, int result) {
    Batch<T, Integer> b = current();
    for (int row : rows) {
      if (!settled[row]) {
        settled[row] = true;
        b.complete(row, result);
      }
    }
  }

  /** The committed rows of an idempotent COPY: each is told its own result from {@code results}. */
  void complete(int[] rows, int[] results) {
    Batch<T, Integer> b = current();
    for (int row : rows) {
      if (!settled[row]) {
        settled[row] = true;
        b.complete(row, results[row]);
      }
    }
  }

  /** Whether {@code row} has no outcome yet. */
  boolean unsettled(int row) {
    return !settled[row];
  }

  /** How many rows of the batch have no outcome yet. */
  int unsettled() {
    int n = 0;
    int size = current().size();
    for (int row = 0; row < size; row++) {
      if (!settled[row]) {
        n++;
      }
    }
    return n;
  }

  void fail(int row, Throwable cause) {
    if (!settled[row]) {
      settled[row] = true;
      current().fail(row, cause);
    }
  }

  void failUnsettled(int[] rows, Throwable cause) {
    for (int row : rows) {
      fail(row, cause);
    }
  }

  int size() {
    return current().size();
  }

  private Batch<T, Integer> current() {
    Batch<T, Integer> b = batch;
    if (b == null) {
      throw new IllegalStateException("no batch is being written");
    }
    return b;
  }

  /** Forgets the batch once it is written, so that no item is held until the next one. */
  void end() {
    batch = null;
  }
}
