package dev.ringbatch.sink;

import static java.util.Objects.requireNonNull;

import dev.ringbatch.Batch;
import dev.ringbatch.BatchSink;
import dev.ringbatch.OutcomeUnknownException;
import dev.ringbatch.internal.Checks;
import java.sql.Array;
import java.sql.BatchUpdateException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.SQLRecoverableException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Writes each batch to a database, giving every item its own outcome, and never tells a caller "written" for
 * a row that is not committed, nor "failed" for a row that is.
 *
 * <p>Two ways to send a batch:
 * <ul>
 *   <li>{@link #of rows}: {@code addBatch()} per item and one {@code executeBatch()} in one explicit
 *       transaction; each item's result is its JDBC update count. Works with any driver. With PostgreSQL, add
 *       {@code reWriteBatchedInserts=true} to the JDBC URL so that pgjdbc sends multi-row {@code INSERT}s
 *       (results are then {@link Statement#SUCCESS_NO_INFO}).</li>
 *   <li>{@link #unnest arrays}: one statement per batch whose parameters are whole columns bound as SQL
 *       arrays, for example {@code INSERT INTO t (id, name) SELECT * FROM unnest(?::bigint[], ?::text[])} on
 *       PostgreSQL, run in autocommit (one statement is atomic on its own; no {@code COMMIT} round trip).</li>
 * </ul>
 *
 * <h2>Connections</h2>
 * A connection is borrowed from the {@link DataSource} for each batch (each attempt, with retries) and given
 * back when the batch is written, so a pool's {@code maxLifetime}, validation and leak detection apply, and a
 * connection the server closed while idle is replaced by the pool rather than failing the next batch. One
 * batcher uses one connection at a time: size the pool for one per batcher (one per shard) on top of the
 * application's own use.
 *
 * <h2>Failures</h2>
 * <ul>
 *   <li>A binder or column function that throws anything ({@link Error}s and undeclared checked exceptions
 *       included) fails that item alone, with what it threw.</li>
 *   <li>A row the database refuses (a constraint violation) fails alone with the database's error; the other
 *       rows are written in a new transaction. The failing row is taken from the driver's
 *       {@link BatchUpdateException} when it names exactly one; otherwise the rows are split in halves until
 *       the failing ones are isolated (a few extra round trips per bad row).</li>
 *   <li>A statement that cannot be prepared (a missing table; H2 and Derby check SQL then) fails every row
 *       with the database's error.</li>
 *   <li>A connection lost before anything of the batch was committed, or one that could not be had: the
 *       rows are certainly not written, and {@code write} throws, so the whole batch fails as one and a
 *       {@link dev.ringbatch.RetryPolicy} may write it again. Once some rows are committed, the rest fail one
 *       by one with the error.</li>
 *   <li><b>Outcome unknown.</b> A connection lost while the database was committing (the reply to
 *       {@code COMMIT} in rows mode, or to the one autocommit statement in unnest mode, did not arrive):
 *       those rows fail with {@link OutcomeUnknownException}. They may or may not be in the table; the
 *       batcher does not retry them. A {@code COMMIT} the database answers with an error (a deferred
 *       constraint) is a known rollback, handled as a refused row above.</li>
 * </ul>
 *
 * <h2>Idempotent writes</h2>
 * Built with {@link #idempotent()}, the sink declares that its statement can run twice without writing a
 * row twice: an {@code INSERT ... ON CONFLICT (key) DO NOTHING} on a key every item carries, or an upsert. A
 * lost reply is then thrown for the whole batch (as long as nothing of it was committed) as an
 * {@link OutcomeUnknownException} that is {@linkplain OutcomeUnknownException#isSafeToRetry() safe to retry},
 * and a {@link dev.ringbatch.RetryPolicy} writes the batch again: retries are then exactly-once as far as the
 * table can tell (a row the first attempt wrote is left alone by the second). The result of a row that
 * already existed is its update count, 0. Without {@code idempotent()}, retries are exactly-once only for
 * batches that certainly committed nothing, which is all this sink retries.
 *
 * <p>Not thread-safe: it is meant to be the sink of one batcher, called on its consumer thread.
 *
 * @param <T> the item type
 */
public final class JdbcBatchSink<T> implements BatchSink<T, Integer>, AutoCloseable {
  private final DataSource dataSource;
  private final String sql;
  private final @Nullable StatementBinder<? super T> binder;
  private final List<ArrayColumn<T>> columns;
  private final boolean idempotent;

  /** The connection of the batch being written, borrowed per batch. */
  private final BatchConnection connection;
  private boolean[] settled = new boolean[0];
  private int[] executed = new int[0];
  private int executedCount;
  /** Whether rows of this batch may be in the table (committed, or told outcome unknown): it must not throw. */
  private boolean mayHaveWritten;

  private JdbcBatchSink(DataSource dataSource, String sql, @Nullable StatementBinder<? super T> binder,
      List<ArrayColumn<T>> columns, boolean idempotent) {
    this.dataSource = requireNonNull(dataSource, "dataSource");
    this.sql = requireNonNull(sql, "sql");
    Checks.requireArgument(!sql.isBlank(), "sql must not be blank but was '%s'", sql);
    this.binder = binder;
    this.columns = List.copyOf(columns);
    this.idempotent = idempotent;
    // Rows mode: one transaction of many statements. Unnest mode: one statement per attempt, which
    // autocommit makes atomic, saving the COMMIT round trip.
    this.connection = new BatchConnection(dataSource, sql, binder == null);
  }

  /**
   * Returns a sink that writes the same way and declares its statement idempotent (see the class comment):
   * a lost reply becomes a retryable failure of the whole batch instead of an outcome-unknown failure of its
   * rows. Only for statements that cannot write a row twice, such as {@code ON CONFLICT (key) DO NOTHING}.
   */
  public JdbcBatchSink<T> idempotent() {
    return new JdbcBatchSink<>(dataSource, sql, binder, columns, true);
  }

  /**
   * Returns a sink that sends each item as one row of a JDBC batch.
   *
   * @param dataSource where connections come from (a pool is best: one is borrowed per batch)
   * @param sql the statement, with parameters for one item
   * @param binder sets one item's parameters
   * @throws IllegalArgumentException if {@code sql} is blank
   * @throws NullPointerException if an argument is null
   */
  public static <T> JdbcBatchSink<T> of(DataSource dataSource, String sql, StatementBinder<? super T> binder) {
    requireNonNull(binder, "binder");
    return new JdbcBatchSink<>(dataSource, sql, binder, List.of(), false);
  }

  /**
   * Starts a sink that binds each batch as one array per column: {@code sql} has one array parameter per
   * {@link ArrayBuilder#column column}, in order.
   *
   * @throws NullPointerException if an argument is null
   */
  public static <T> ArrayBuilder<T> unnest(DataSource dataSource, String sql) {
    return new ArrayBuilder<>(dataSource, sql);
  }

  /** Builds an array-binding sink; see {@link JdbcBatchSink#unnest}. */
  public static final class ArrayBuilder<T> {
    private final DataSource dataSource;
    private final String sql;
    private final List<ArrayColumn<T>> columns = new ArrayList<>();

    private ArrayBuilder(DataSource dataSource, String sql) {
      this.dataSource = requireNonNull(dataSource, "dataSource");
      this.sql = requireNonNull(sql, "sql");
    }

    /**
     * Adds the next array parameter.
     *
     * @param sqlType the element type for {@link Connection#createArrayOf}, e.g. {@code "bigint"}, {@code "text"}
     * @param value extracts the column's value from an item (boxed; {@code null} for SQL NULL)
     */
    public ArrayBuilder<T> column(String sqlType, Function<? super T, ?> value) {
      requireNonNull(sqlType, "sqlType");
      requireNonNull(value, "value");
      columns.add(new ArrayColumn<>(sqlType, value));
      return this;
    }

    /**
     * Returns the sink.
     *
     * @throws IllegalStateException if no column was added
     */
    public JdbcBatchSink<T> build() {
      Checks.requireState(!columns.isEmpty(), "an unnest sink needs at least one column");
      return new JdbcBatchSink<>(dataSource, sql, null, columns, false);
    }
  }

  private record ArrayColumn<T>(String sqlType, Function<? super T, ?> value) {}

  /**
   * Writes the batch on a connection borrowed for it. Throws only when nothing of the batch was committed:
   * the connection was lost (or could not be had) before any commit, so the whole batch failed as one and a
   * {@link dev.ringbatch.RetryPolicy} can write it again; or, for an {@link #idempotent()} sink, a reply was
   * lost. Otherwise every row gets its own outcome.
   */
  @Override
  public void write(Batch<T, Integer> batch) throws SQLException {
    mayHaveWritten = false;
    int size = batch.size();
    if (settled.length < size) {
      settled = new boolean[size];
      executed = new int[size];
    }
    Arrays.fill(settled, 0, size, false);
    int[] rows = new int[size];
    for (int i = 0; i < size; i++) {
      rows[i] = i;
    }
    try {
      writeRows(batch, rows);
    } finally {
      connection.release();
    }
  }

  /** Writes {@code rows} (indices into the batch) in one transaction, isolating rows the database refuses. */
  private void writeRows(Batch<T, Integer> batch, int[] rows) throws SQLException {
    // A loop, not recursion, over the rows left after each culprit: a driver that stops at the first refused
    // row (Derby, HSQLDB, SQLite) names one culprit per round trip, and a replay of thousands of rows already
    // in the table would otherwise nest one call per refused row, deep enough to overflow the stack.
    for (int[] rest = rows; rest != null; ) {
      rest = writeOnce(batch, rest);
    }
  }

  /** One transaction of {@code rows}; returns the rows still to write after a named culprit, or null. */
  private int @Nullable [] writeOnce(Batch<T, Integer> batch, int[] rows) throws SQLException {
    Connection c;
    PreparedStatement ps;
    try {
      c = connection.get();
    } catch (SQLException | RuntimeException e) {
      failOrThrow(batch, rows, e); // nothing was sent on it: certainly not written
      return null;
    }
    try {
      ps = connection.statement();
    } catch (Throwable e) {
      if (JdbcFailures.connectionLost(c, e)) {
        connection.discard();
        failOrThrow(batch, rows, e);
      } else {
        failUnsettled(batch, rows, e); // the statement itself is broken: every row would fail the same way
      }
      return null;
    }
    int[] counts;
    try {
      counts = execute(c, ps, batch, rows);
    } catch (Throwable e) {
      // Not only SQLException: with assertions on, pgjdbc's executeBatch on a terminated backend throws
      // AssertionError. Whatever the driver throws, a dead connection must be discarded.
      boolean rolledBack = BatchConnection.rollback(c, e);
      if (!JdbcFailures.connectionLost(c, e)) {
        if (!rolledBack) {
          connection.discard(); // its transaction may still hold these rows: never execute them there again
        }
        return isolate(batch, rows, e);
      } else {
        connection.discard();
        if (binder == null) {
          unknown(batch, rows, e, "the statement"); // autocommit: it may have committed on its own
        } else {
          failOrThrow(batch, rows, e); // the transaction never committed
        }
      }
      return null;
    }
    if (binder != null && executedCount > 0) {
      try {
        c.commit();
      } catch (Throwable e) {
        if (JdbcFailures.connectionLost(c, e)) {
          connection.discard();
          unknown(batch, rows, e, "COMMIT");
        } else {
          // The database answered: a known rollback (a deferred constraint, say).
          if (!BatchConnection.rollback(c, e)) {
            connection.discard(); // its transaction may still hold these rows: never execute them there again
          }
          return isolate(batch, rows, e);
        }
        return null;
      }
    }
    mayHaveWritten |= executedCount > 0;
    for (int j = 0; j < executedCount; j++) {
      int row = executed[j];
      settled[row] = true;
      batch.complete(row, counts.length == executedCount ? counts[j] : Statement.SUCCESS_NO_INFO);
    }
    return null;
  }

  /** A failure that left nothing of these rows committed: thrown (the whole batch) if nothing is, else per row. */
  private void failOrThrow(Batch<T, Integer> batch, int[] rows, Throwable e) throws SQLException {
    if (!mayHaveWritten) {
      if (e instanceof SQLException sql) {
        throw sql;
      }
      throw new SQLRecoverableException("the connection was lost before any row of the batch was committed", e);
    }
    failUnsettled(batch, rows, e);
  }

  /** The reply to what commits these rows was lost: they may or may not be in the table. */
  private void unknown(Batch<T, Integer> batch, int[] rows, Throwable e, String what) {
    OutcomeUnknownException unknown = new OutcomeUnknownException("the connection was lost waiting for the reply"
        + " to " + what + " (" + e + "): the database may or may not have written these rows", e, idempotent);
    if (idempotent && !mayHaveWritten) {
      throw unknown; // safe to write again: the whole batch fails as one, and a retry policy may retry it
    }
    failUnsettled(batch, rows, unknown);
    mayHaveWritten = true; // from now on a failure must not fail (or retry) the whole batch over these rows
  }

  /**
   * The rows just executed failed together: fails the culprit and returns the rest to write in a new
   * transaction, or, with no culprit named, writes each half (a recursion as deep as log2 of the batch).
   */
  private int @Nullable [] isolate(Batch<T, Integer> batch, int[] rows, Throwable e) throws SQLException {
    int[] attempt = Arrays.copyOf(executed, executedCount);
    if (attempt.length == 0) {
      failUnsettled(batch, rows, e); // nothing was executed, so nothing to split
      return null;
    }
    if (attempt.length == 1) {
      settle(batch, attempt[0], JdbcFailures.rowCause(e));
      return null;
    }
    int culprit = binder == null ? -1 : JdbcFailures.culprit(e, attempt);
    if (culprit >= 0) {
      settle(batch, attempt[culprit], JdbcFailures.rowCause(e));
      int[] rest = new int[attempt.length - 1];
      System.arraycopy(attempt, 0, rest, 0, culprit);
      System.arraycopy(attempt, culprit + 1, rest, culprit, rest.length - culprit);
      return rest;
    }
    int half = attempt.length / 2;
    writeRows(batch, Arrays.copyOfRange(attempt, 0, half));
    writeRows(batch, Arrays.copyOfRange(attempt, half, attempt.length));
    return null;
  }

  /** Binds and executes the unsettled {@code rows}; fills {@code executed} with those that were sent. */
  private int[] execute(Connection c, PreparedStatement ps, Batch<T, Integer> batch, int[] rows)
      throws SQLException {
    executedCount = 0;
    if (binder != null) {
      ps.clearBatch();
      for (int row : rows) {
        if (settled[row]) {
          continue;
        }
        try {
          binder.bind(ps, batch.item(row));
          ps.addBatch();
          executed[executedCount++] = row;
        } catch (Throwable e) { // user code: Errors and sneaky checked exceptions fail the item too
          settle(batch, row, e);
          ps.clearParameters();
        }
      }
      return executedCount == 0 ? new int[0] : ps.executeBatch();
    }
    Object[][] values = new Object[columns.size()][];
    for (int k = 0; k < values.length; k++) {
      values[k] = new Object[rows.length];
    }
    for (int row : rows) {
      if (settled[row]) {
        continue;
      }
      try {
        for (int k = 0; k < values.length; k++) {
          values[k][executedCount] = columns.get(k).value().apply(batch.item(row));
        }
        executed[executedCount++] = row;
      } catch (Throwable e) { // user code: Errors and sneaky checked exceptions fail the item too
        settle(batch, row, e);
      }
    }
    if (executedCount == 0) {
      return new int[0];
    }
    Array[] arrays = new Array[values.length];
    try {
      for (int k = 0; k < values.length; k++) {
        arrays[k] = c.createArrayOf(columns.get(k).sqlType(), Arrays.copyOf(values[k], executedCount));
        ps.setArray(k + 1, arrays[k]);
      }
      int count = ps.executeUpdate();
      int[] counts = new int[executedCount];
      Arrays.fill(counts, count == executedCount ? 1 : Statement.SUCCESS_NO_INFO);
      return counts;
    } finally {
      for (Array array : arrays) {
        if (array != null) {
          array.free();
        }
      }
    }
  }

  private void settle(Batch<T, Integer> batch, int row, Throwable cause) {
    settled[row] = true;
    batch.fail(row, cause);
  }

  private void failUnsettled(Batch<T, Integer> batch, int[] rows, Throwable cause) {
    for (int row : rows) {
      if (!settled[row]) {
        settle(batch, row, cause);
      }
    }
  }

  /**
   * Holds nothing between batches (each borrows its connection), so this only gives back a connection a
   * batch left behind, if its thread died mid-write. Kept so that a sink can be closed with its batcher.
   */
  @Override
  public void close() {
    connection.release();
  }

  @Override
  public String toString() {
    return "JdbcBatchSink{" + (binder != null ? "rows" : "arrays") + (idempotent ? ", idempotent" : "")
        + ", sql='" + sql + "'}";
  }
}
