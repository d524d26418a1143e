package dev.ringbatch.sink;

import static java.util.Objects.requireNonNull;

import dev.ringbatch.Batch;
import dev.ringbatch.BatchSink;
import dev.ringbatch.internal.Checks;
import java.lang.System.Logger.Level;
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
 * Writes each batch to a database in one transaction, giving every item its own outcome.
 *
 * <p>Two ways to send a batch:
 * <ul>
 *   <li>{@link #of rows}: {@code addBatch()} per item and one {@code executeBatch()}; each item's result is
 *       its JDBC update count. Works with any driver. With PostgreSQL, add {@code reWriteBatchedInserts=true}
 *       to the JDBC URL so that pgjdbc sends multi-row {@code INSERT}s (results are then
 *       {@link Statement#SUCCESS_NO_INFO}).</li>
 *   <li>{@link #unnest arrays}: one statement per batch whose parameters are whole columns bound as SQL
 *       arrays, for example {@code INSERT INTO t (id, name) SELECT * FROM unnest(?::bigint[], ?::text[])} on
 *       PostgreSQL. One round trip and one plan however large the batch; each item's result is 1.</li>
 * </ul>
 *
 * <p>Rows mode runs each attempt in one explicit transaction; unnest mode runs its single statement in
 * autocommit, which is just as atomic and saves the {@code COMMIT} round trip.
 *
 * <h2>Failures</h2>
 * <ul>
 *   <li>A binder or column function that throws fails that item alone.</li>
 *   <li>A row the database refuses (a constraint violation) fails alone with the database's error; the
 *       transaction is rolled back and the other rows are written in a new one. The failing row is taken from
 *       the driver's {@link BatchUpdateException} when it names exactly one; otherwise the rows are split in
 *       halves until the failing ones are isolated (a few extra round trips per bad row).</li>
 *   <li>A lost connection (SQLState class {@code 08}, {@code 57P0x}, or a connection that no longer
 *       {@linkplain Connection#isValid validates}) is discarded, and the next attempt takes a fresh one from
 *       the {@link DataSource}. If no row of the batch was committed yet, {@code write} throws: the whole
 *       batch fails as one, and a batcher with a {@link dev.ringbatch.RetryPolicy} writes it again. Otherwise
 *       every row not yet committed fails with the error.</li>
 *   <li>If the commit itself fails, the rows of that transaction fail with its error: the database may or
 *       may not have committed them, as with any JDBC commit that throws.</li>
 * </ul>
 * An item whose future succeeded is committed; an item whose future failed was not (except for the
 * ambiguous failed commit above).
 *
 * <p>Not thread-safe: it is meant to be the sink of one batcher, called on its consumer thread, and holds one
 * connection between batches. {@link #close()} it after the batcher is closed.
 *
 * @param <T> the item type
 */
public final class JdbcBatchSink<T> implements BatchSink<T, Integer>, AutoCloseable {
  private static final System.Logger LOG = System.getLogger(JdbcBatchSink.class.getName());

  private final DataSource dataSource;
  private final String sql;
  private final @Nullable StatementBinder<? super T> binder;
  private final List<ArrayColumn<T>> columns;

  private @Nullable Connection connection;
  private @Nullable PreparedStatement statement;
  private boolean[] settled = new boolean[0];
  private int[] executed = new int[0];
  private int executedCount;
  /** Whether any transaction of the current write committed: then a lost connection can no longer be thrown. */
  private boolean committedAny;

  private JdbcBatchSink(DataSource dataSource, String sql, @Nullable StatementBinder<? super T> binder,
      List<ArrayColumn<T>> columns) {
    this.dataSource = requireNonNull(dataSource, "dataSource");
    this.sql = requireNonNull(sql, "sql");
    Checks.requireArgument(!sql.isBlank(), "sql must not be blank but was '%s'", sql);
    this.binder = binder;
    this.columns = List.copyOf(columns);
  }

  /**
   * Returns a sink that sends each item as one row of a JDBC batch.
   *
   * @param dataSource where connections come from (a pool is best; one connection is held between batches)
   * @param sql the statement, with parameters for one item
   * @param binder sets one item's parameters
   * @throws IllegalArgumentException if {@code sql} is blank
   * @throws NullPointerException if an argument is null
   */
  public static <T> JdbcBatchSink<T> of(DataSource dataSource, String sql, StatementBinder<? super T> binder) {
    requireNonNull(binder, "binder");
    return new JdbcBatchSink<>(dataSource, sql, binder, List.of());
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
      return new JdbcBatchSink<>(dataSource, sql, null, columns);
    }
  }

  private record ArrayColumn<T>(String sqlType, Function<? super T, ?> value) {}

  /**
   * Writes the batch. Throws only when the connection was lost (or could not be had) before any row of the
   * batch was committed: the whole batch then failed as one, and a {@link dev.ringbatch.RetryPolicy} can
   * safely write it again on a fresh connection. Once some rows are committed, the rest fail one by one.
   */
  @Override
  public void write(Batch<T, Integer> batch) throws SQLException {
    committedAny = false;
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
    writeRows(batch, rows);
  }

  /** Writes {@code rows} (indices into the batch) in one transaction, isolating rows the database refuses. */
  private void writeRows(Batch<T, Integer> batch, int[] rows) throws SQLException {
    Connection c;
    try {
      c = connection();
    } catch (SQLException | RuntimeException e) {
      failOrThrow(batch, rows, e);
      return;
    }
    int[] counts;
    try {
      counts = execute(c, batch, rows);
      if (binder != null) {
        c.commit(); // the unnest mode runs in autocommit: its one statement is atomic on its own
      }
    } catch (VirtualMachineError fatal) {
      throw fatal;
    } catch (Throwable e) {
      // Not only SQLException: with assertions on, pgjdbc's executeBatch on a terminated backend throws
      // AssertionError("pgStatement.getConnection().getAutoCommit() should not throw"). Whatever the driver
      // throws, a dead connection must be discarded rather than kept for every later batch.
      rollback(c, e);
      if (connectionLost(c, e)) {
        discardConnection();
        failOrThrow(batch, rows, e);
      } else {
        isolate(batch, e);
      }
      return;
    }
    committedAny = true;
    for (int j = 0; j < executedCount; j++) {
      int row = executed[j];
      settled[row] = true;
      batch.complete(row, counts.length == executedCount ? counts[j] : Statement.SUCCESS_NO_INFO);
    }
  }

  /** The rows just executed failed together: fail the culprit and write the rest in new transactions. */
  /** A lost connection: thrown (the whole batch, retryable) if nothing is committed yet, else row by row. */
  private void failOrThrow(Batch<T, Integer> batch, int[] rows, Throwable e) throws SQLException {
    if (!committedAny) {
      if (e instanceof SQLException sql) {
        throw sql;
      }
      throw new SQLRecoverableException("the connection was lost before any row of the batch was committed", e);
    }
    failUnsettled(batch, rows, e);
  }

  private void isolate(Batch<T, Integer> batch, Throwable e) throws SQLException {
    int[] attempt = Arrays.copyOf(executed, executedCount);
    if (attempt.length == 1) {
      settle(batch, attempt[0], rowCause(e));
      return;
    }
    int culprit = culprit(e, attempt);
    if (culprit >= 0) {
      settle(batch, attempt[culprit], rowCause(e));
      int[] rest = new int[attempt.length - 1];
      System.arraycopy(attempt, 0, rest, 0, culprit);
      System.arraycopy(attempt, culprit + 1, rest, culprit, rest.length - culprit);
      writeRows(batch, rest);
    } else {
      int half = attempt.length / 2;
      writeRows(batch, Arrays.copyOfRange(attempt, 0, half));
      writeRows(batch, Arrays.copyOfRange(attempt, half, attempt.length));
    }
  }

  /**
   * Returns the position in {@code attempt} of the one row the driver blames, or -1 when the driver's
   * report does not name exactly one. A driver that stops at the first failure reports the counts of the
   * rows before it; one that goes on marks each failure {@link Statement#EXECUTE_FAILED}.
   */
  private int culprit(Throwable e, int[] attempt) {
    if (binder == null || !(e instanceof BatchUpdateException bue)) {
      return -1;
    }
    int[] counts = bue.getUpdateCounts();
    if (counts == null) {
      return -1;
    }
    if (counts.length < attempt.length) {
      return counts.length;
    }
    int found = -1;
    for (int i = 0; i < counts.length; i++) {
      if (counts[i] == Statement.EXECUTE_FAILED) {
        if (found >= 0) {
          return -1;
        }
        found = i;
      }
    }
    return found;
  }

  /** Binds and executes the unsettled {@code rows}; fills {@code executed} with those that were sent. */
  private int[] execute(Connection c, Batch<T, Integer> batch, int[] rows) throws SQLException {
    executedCount = 0;
    PreparedStatement ps = statement(c);
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
        } catch (SQLException | RuntimeException e) {
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
      } catch (RuntimeException e) {
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

  /** The most specific error for one row: pgjdbc puts the server's message in the next exception. */
  private static Throwable rowCause(Throwable e) {
    SQLException next = e instanceof SQLException sql ? sql.getNextException() : null;
    return next != null ? next : e;
  }

  private static boolean connectionLost(Connection c, Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      for (SQLException s = t instanceof SQLException sql ? sql : null; s != null; s = s.getNextException()) {
        String state = s.getSQLState();
        if (state != null && (state.startsWith("08") || state.startsWith("57P0"))) {
          return true;
        }
      }
    }
    try {
      return !c.isValid(2);
    } catch (SQLException broken) {
      e.addSuppressed(broken);
      return true;
    }
  }

  private Connection connection() throws SQLException {
    Connection c = connection;
    if (c == null) {
      c = dataSource.getConnection();
      try {
        // Rows mode: one transaction of many statements. Unnest mode: one statement per attempt, which
        // autocommit makes atomic, saving the COMMIT round trip.
        c.setAutoCommit(binder == null);
      } catch (SQLException e) {
        closeQuietly(c, e);
        throw e;
      }
      connection = c;
    }
    return c;
  }

  private PreparedStatement statement(Connection c) throws SQLException {
    PreparedStatement ps = statement;
    if (ps == null) {
      ps = c.prepareStatement(sql);
      statement = ps;
    }
    return ps;
  }

  private static void rollback(Connection c, Throwable cause) {
    try {
      if (!c.getAutoCommit()) {
        c.rollback();
      }
    } catch (SQLException | RuntimeException e) {
      cause.addSuppressed(e);
    }
  }

  private void discardConnection() {
    Connection c = connection;
    connection = null;
    statement = null;
    if (c != null) {
      closeQuietly(c, null);
    }
  }

  private static void closeQuietly(Connection c, @Nullable SQLException cause) {
    try {
      c.close();
    } catch (SQLException e) {
      if (cause != null) {
        cause.addSuppressed(e);
      } else {
        LOG.log(Level.DEBUG, "closing a broken connection failed", e);
      }
    }
  }

  /** Closes the held connection. Call it after the batcher that uses this sink is closed. */
  @Override
  public void close() throws SQLException {
    Connection c = connection;
    connection = null;
    statement = null;
    if (c != null) {
      c.close();
    }
  }

  @Override
  public String toString() {
    return "JdbcBatchSink{" + (binder != null ? "rows" : "arrays") + ", sql='" + sql + "'}";
  }
}
