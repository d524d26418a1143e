package dev.ringbatch.sink;

import dev.ringbatch.Batch;
import dev.ringbatch.OutcomeUnknownException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
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
  private final @Nullable ArrayBinder<T> arrays;
  private @Nullable Batch<T, Integer> batch;
  private boolean[] settled = new boolean[0];
  /**
   * Rows an autocommit statement carried that lost its connection before any answer, and that are written again:
   * that statement may have committed them, so a failure of theirs from now on is an unknown outcome.
   */
  private boolean[] replayed = new boolean[0];
  private int[] sent = new int[0];
  private int sentCount;

  StatementRows(@Nullable StatementBinder<? super T> binder, @Nullable ArrayBinder<T> arrays) {
    this.binder = binder;
    this.arrays = arrays;
  }

  /** Starts on {@code batch}: no row settled; returns every row's index. */
  int[] begin(Batch<T, Integer> batch) {
    this.batch = batch;
    int size = batch.size();
    if (settled.length < size) {
      settled = new boolean[size];
      replayed = new boolean[size];
      sent = new int[size];
    }
    Arrays.fill(settled, 0, size, false);
    Arrays.fill(replayed, 0, size, false);
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
   * one statement over column arrays, whose results are read to their end: each row's result is then 1 when the
   * statement reported exactly one row per item (an update count, or the rows of a {@code RETURNING}), else
   * {@link Statement#SUCCESS_NO_INFO}. An item whose binder or array binder throws fails alone.
   *
   * @return the result of each row sent, in {@link #sentRows()} order
   */
  int[] execute(Connection c, PreparedStatement ps, int[] rows, boolean autoCommit) throws SQLException {
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
    ArrayBinder.Rows<T> columns = requireArrays().rows(c, rows.length);
    for (int row : rows) {
      if (settled[row]) {
        continue;
      }
      try {
        columns.add(b.item(row));
        sent[sentCount++] = row;
      } catch (Throwable e) { // user code: Errors and sneaky checked exceptions fail the item too
        fail(row, e);
      }
    }
    if (sentCount == 0) {
      return new int[0];
    }
    columns.bind(c, ps, autoCommit);
    int[] counts = new int[sentCount];
    Arrays.fill(counts, reported(ps, ps.execute()) == sentCount ? 1 : Statement.SUCCESS_NO_INFO);
    return counts;
  }

  /**
   * Runs the statement without the rows that failed together, to learn whether the statement itself is refused (a
   * missing table, a revoked privilege, a read-only database: every execution fails) or some row caused the error
   * (a row-level security policy, a trigger, a lock on one row's parent: an execution without it succeeds). In an
   * arrays sink the statement runs with empty arrays; in a rows sink with the first row alone, then the last. Each
   * probe is rolled back (an empty one writes nothing even in autocommit). Called after the failed attempt was
   * rolled back.
   *
   * @return what the last probe threw, or null if one succeeded: a row caused the error
   */
  @Nullable Throwable probe(Connection c, PreparedStatement ps, int[] failed) throws SQLException {
    if (binder == null) {
      return probeOnce(c, () -> {
        requireArrays().rows(0).bind(c, ps, c.getAutoCommit());
        reported(ps, ps.execute());
      });
    }
    Throwable first = probeOnce(c, () -> bindOne(ps, failed[0]));
    return first == null ? null : probeOnce(c, () -> bindOne(ps, failed[failed.length - 1]));
  }

  /** Whether {@link #probe} runs the statement without any row (an arrays sink), so that its failure is the statement's. */
  boolean probesWithoutRows() {
    return binder == null;
  }

  /**
   * Reads every result of an executed statement: update counts and result sets (read to their end, so that a
   * statement returning rows is finished, never left half-read). Returns the count or row count of a statement with
   * one result, or -1.
   */
  private static long reported(PreparedStatement ps, boolean isResultSet) throws SQLException {
    long reported = -1;
    int results = 0;
    for (boolean resultSet = isResultSet; ; resultSet = ps.getMoreResults()) {
      if (resultSet) {
        long rows = 0;
        try (ResultSet rs = ps.getResultSet()) {
          while (rs.next()) {
            rows++;
          }
        }
        reported = rows;
      } else {
        long count = ps.getUpdateCount();
        if (count == -1) {
          return results == 1 ? reported : -1; // several results: which one counts the items is unknown
        }
        reported = count;
      }
      results++;
    }
  }

  private interface Probe {
    void run() throws Exception;
  }

  private void bindOne(PreparedStatement ps, int row) throws Exception {
    StatementBinder<? super T> b = java.util.Objects.requireNonNull(binder, "binder");
    ps.clearBatch();
    try {
      b.bind(ps, current().item(row));
    } catch (Throwable e) { // the binder threw for this row: the probe tells nothing, so it counts as succeeding
      ps.clearParameters();
      return;
    }
    ps.addBatch();
    ps.executeBatch();
  }

  /** Runs {@code probe} and rolls it back; returns what it threw, or null. A failed rollback is thrown. */
  private static @Nullable Throwable probeOnce(Connection c, Probe probe) throws SQLException {
    Throwable failure = null;
    try {
      probe.run();
    } catch (Throwable e) { // the driver's answer is what the probe is for
      failure = e;
    }
    if (failure != null) {
      try {
        if (!c.getAutoCommit()) {
          c.rollback();
        }
      } catch (SQLException | RuntimeException r) { // the connection lost: the verdict must see it
        r.addSuppressed(failure);
        throw r;
      }
      return failure;
    }
    if (!c.getAutoCommit()) {
      c.rollback(); // a probe that succeeded wrote: it must not stay
    }
    return null;
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
    current().fail(row, replayed[row] ? unknownAfterReplay(cause) : cause);
  }

  /** The rows the last statement carried are written again after it lost its connection unanswered (autocommit). */
  void replaying() {
    for (int j = 0; j < sentCount; j++) {
      replayed[sent[j]] = true;
    }
  }

  /** Whether a row without an outcome may have been committed by a statement that lost its connection unanswered. */
  boolean anyUnsettledReplayed() {
    int size = current().size();
    for (int row = 0; row < size; row++) {
      if (replayed[row] && !settled[row]) {
        return true;
      }
    }
    return false;
  }

  /** What a row that may have been committed already is told of a later failure: an idempotent sink's, safe to retry. */
  static Throwable unknownAfterReplay(Throwable cause) {
    return cause instanceof OutcomeUnknownException ? cause : new OutcomeUnknownException(
        "a statement carrying this row lost its connection before any answer and may have committed it; written"
        + " again, it then failed (" + cause + "): the row may or may not be in the table", cause, true);
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

  /** Whether {@code rows} hold every row of the batch that has no outcome yet. */
  boolean holdAllUnsettled(int[] rows) {
    int n = 0;
    for (int row : rows) {
      if (!settled[row]) {
        n++;
      }
    }
    return n == unsettled();
  }

  void failUnsettled(int[] rows, Throwable cause) {
    for (int row : rows) {
      if (!settled[row]) {
        fail(row, cause);
      }
    }
  }

  private ArrayBinder<T> requireArrays() {
    return java.util.Objects.requireNonNull(arrays, "arrays");
  }

  private Batch<T, Integer> current() {
    Batch<T, Integer> b = batch;
    if (b == null) {
      throw new IllegalStateException("no batch is being written");
    }
    return b;
  }
}
