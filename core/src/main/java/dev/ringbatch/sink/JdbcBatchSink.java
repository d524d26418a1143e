package dev.ringbatch.sink;

import static java.util.Objects.requireNonNull;

import dev.ringbatch.Batch;
import dev.ringbatch.BatchSink;
import dev.ringbatch.OutcomeUnknownException;
import dev.ringbatch.internal.shared.Checks;
import java.sql.BatchUpdateException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.SQLRecoverableException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Arrays;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Writes each batch to a database, giving every item its own outcome, and never tells a caller "written" for
 * a row that is not committed, nor "failed" for a row that is. The guarantees, statement shape by statement
 * shape, are in {@code docs/sinks.md}.
 *
 * <p>Two ways to send a batch, each in one transaction per attempt:
 * <ul>
 *   <li>{@link #of rows}: {@code addBatch()} per item and one {@code executeBatch()}; each item's result is
 *       its JDBC update count. Works with any driver. With PostgreSQL, add {@code reWriteBatchedInserts=true}
 *       to the JDBC URL so that pgjdbc sends multi-row {@code INSERT}s (results are then
 *       {@link Statement#SUCCESS_NO_INFO}).</li>
 *   <li>{@link #ofArrays arrays}: one statement per batch whose parameters are whole columns bound as SQL
 *       arrays by an {@link ArrayBinder}; ringbatch-postgresql's {@code PgUnnest} binds them for
 *       {@code INSERT INTO t (id, name) SELECT * FROM unnest(?::bigint[], ?::text[])}.</li>
 * </ul>
 *
 * <h2>Failures</h2>
 * <ul>
 *   <li>A binder (or an array binder's {@code add}) that throws anything fails that item alone, with what it threw.</li>
 *   <li>A row the database refuses (a constraint, a bad value: an error one row can cause) fails alone with the
 *       database's error; the other rows are written in a new transaction. The culprit comes from the
 *       driver's {@link BatchUpdateException} when it names exactly one, otherwise from halving: about
 *       2·k·log2(n) statements for k bad rows in n.</li>
 *   <li>An error no row can cause alone (a missing table, a revoked privilege, a read-only database, a syntax
 *       error, a cancelled statement, a full disk, a serialization failure: see {@code docs/sinks.md}) fails
 *       the whole batch at once with the database's error; nothing of it is written, so {@code write} throws
 *       and a {@link dev.ringbatch.RetryPolicy} decides whether to write it again.</li>
 *   <li>A connection lost before the commit: nothing was committed. A connection the database never answered
 *       in this batch was dead before it began (ended while idle in the pool): the sink borrows another and
 *       writes the batch there, up to three times. Otherwise {@code write} throws, so the whole batch fails
 *       as one and a retry policy may write it again. Once some rows are committed, the rest fail one by one.</li>
 *   <li><b>Outcome unknown.</b> The reply to the {@code COMMIT} was lost: those rows fail with
 *       {@link OutcomeUnknownException}. They may or may not be in the table; the batcher does not retry them.
 *       A {@code COMMIT} the database answers with an error is a known rollback, handled as above.</li>
 * </ul>
 *
 * <h2>Idempotent writes</h2>
 * Built with {@link #idempotent()}, the sink declares that its statement can run twice without writing a
 * row twice: an {@code INSERT ... ON CONFLICT (key) DO NOTHING} on a key every item carries, or an upsert. A
 * lost reply is then thrown for the whole batch (as long as nothing of it was committed) as an
 * {@link OutcomeUnknownException} that is {@linkplain OutcomeUnknownException#isSafeToRetry() safe to retry},
 * and a {@link dev.ringbatch.RetryPolicy} writes the batch again. An idempotent arrays statement runs in
 * autocommit, saving the {@code COMMIT} round trip.
 *
 * <h2>Connections</h2>
 * A connection is borrowed from the {@link DataSource} for each batch and given back when the batch is
 * written, so a pool's {@code maxLifetime}, validation and leak detection apply. One batcher uses one
 * connection at a time: size the pool for one per batcher (one per shard) on top of the application's own use.
 * {@link #withQueryTimeout} bounds each statement.
 *
 * <p>Not thread-safe: it is meant to be the sink of one batcher, called on its consumer thread.
 *
 * @param <T> the item type
 */
public final class JdbcBatchSink<T> implements BatchSink<T, Integer>, AutoCloseable {
  /** How many connections found dead before the database answered one batch are replaced, at most. */
  private static final int MAX_DEAD_ON_BORROW = 3;

  private final DataSource dataSource;
  private final String sql;
  private final @Nullable StatementBinder<? super T> binder;
  private final @Nullable ArrayBinder<T> arrays;
  private final boolean idempotent;
  private final Duration queryTimeout;

  /** The connection of the batch being written, borrowed per batch. */
  private final BatchConnection connection;
  private final StatementRows<T> batchRows;
  /** Whether rows of this batch may be in the table (committed, or told outcome unknown): it must not throw. */
  private boolean mayHaveWritten;
  private int deadOnBorrow;

  private JdbcBatchSink(DataSource dataSource, String sql, @Nullable StatementBinder<? super T> binder,
      @Nullable ArrayBinder<T> arrays, boolean idempotent, Duration queryTimeout) {
    this.dataSource = requireNonNull(dataSource, "dataSource");
    this.sql = requireNonNull(sql, "sql");
    Checks.requireArgument(!sql.isBlank(), "sql must not be blank but was '%s'", sql);
    this.binder = binder;
    this.arrays = arrays;
    this.idempotent = idempotent;
    this.queryTimeout = queryTimeout;
    // One transaction per attempt, so that a connection lost before COMMIT certainly wrote nothing. Only an
    // idempotent arrays statement runs in autocommit: one round trip, and a lost reply is safe to retry anyway.
    this.connection = new BatchConnection(dataSource, sql, binder == null && idempotent,
        (int) Math.min(Integer.MAX_VALUE, queryTimeout.toSeconds()));
    this.batchRows = new StatementRows<>(binder, arrays);
  }

  /**
   * Returns a sink that writes the same way and declares its statement idempotent (see the class comment):
   * a lost reply becomes a retryable failure of the whole batch instead of an outcome-unknown failure of its
   * rows. Only for statements that cannot write a row twice, such as {@code ON CONFLICT (key) DO NOTHING}.
   */
  public JdbcBatchSink<T> idempotent() {
    return new JdbcBatchSink<>(dataSource, sql, binder, arrays, true, queryTimeout);
  }

  /**
   * Returns a sink that writes the same way and gives each statement at most {@code timeout} to run
   * ({@link Statement#setQueryTimeout}, in whole seconds, rounded up). A statement that runs longer is
   * cancelled by the database and rolled back: the whole batch fails at once with the driver's error (SQLState
   * {@code 57014} on PostgreSQL), nothing of it written, and a {@link dev.ringbatch.RetryPolicy} may retry it.
   * It bounds statements, not the {@code COMMIT} (JDBC has none), nor a reply lost on the network: set the
   * driver's socket timeout for those (pgjdbc's {@code socketTimeout}); a {@code COMMIT} without a reply is then
   * outcome unknown.
   *
   * @throws IllegalArgumentException if {@code timeout} is not positive
   */
  public JdbcBatchSink<T> withQueryTimeout(Duration timeout) {
    requireNonNull(timeout, "timeout");
    Checks.requireArgument(!timeout.isNegative() && !timeout.isZero(),
        "queryTimeout must be positive but was %s", timeout);
    Duration seconds = timeout.getNano() == 0 ? timeout : Duration.ofSeconds(timeout.getSeconds() + 1);
    return new JdbcBatchSink<>(dataSource, sql, binder, arrays, idempotent, seconds);
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
    return new JdbcBatchSink<>(dataSource, sql, binder, null, false, Duration.ZERO);
  }

  /**
   * Returns a sink that sends each batch as one statement whose parameters are whole columns, bound by
   * {@code arrays} (ringbatch-postgresql's {@code PgUnnest} for PostgreSQL's {@code unnest}).
   *
   * @param dataSource where connections come from (a pool is best: one is borrowed per batch)
   * @param sql the statement, with one array parameter per column
   * @param arrays binds the rows' columns and runs the statement
   * @throws IllegalArgumentException if {@code sql} is blank
   * @throws NullPointerException if an argument is null
   */
  public static <T> JdbcBatchSink<T> ofArrays(DataSource dataSource, String sql, ArrayBinder<T> arrays) {
    requireNonNull(arrays, "arrays");
    return new JdbcBatchSink<>(dataSource, sql, null, arrays, false, Duration.ZERO);
  }

  /**
   * Writes the batch on a connection borrowed for it. Throws only when nothing of the batch was committed:
   * the connection was lost (or could not be had) before any commit, or the database refused the statement
   * itself, so the whole batch failed as one and a {@link dev.ringbatch.RetryPolicy} can write it again; or,
   * for an {@link #idempotent()} sink, a reply was lost. Otherwise every row gets its own outcome.
   */
  @Override
  public void write(Batch<T, Integer> batch) throws SQLException {
    mayHaveWritten = false;
    deadOnBorrow = 0;
    try {
      writeRows(batchRows.begin(batch));
    } finally {
      connection.release();
    }
  }

  /** Writes {@code rows} (indices into the batch) in one transaction, isolating rows the database refuses. */
  private void writeRows(int[] rows) throws SQLException {
    // A loop, not recursion, over the rows left after each culprit: a driver that stops at the first refused
    // row (Derby, HSQLDB, SQLite) names one culprit per round trip, and a replay of thousands of rows already
    // in the table would otherwise nest one call per refused row, deep enough to overflow the stack.
    for (int[] rest = rows; rest != null; ) {
      rest = writeOnce(rest);
    }
  }

  /** One transaction of {@code rows}; returns the rows still to write (after a culprit or a dead connection). */
  private int @Nullable [] writeOnce(int[] rows) throws SQLException {
    Connection c;
    PreparedStatement ps;
    try {
      c = connection.get();
    } catch (Throwable e) { // an Error too: after rows committed by an earlier transaction, they stay told written
      failOrThrow(rows, e); // nothing was sent on it: certainly not written
      return null;
    }
    try {
      ps = connection.statement();
    } catch (Throwable e) {
      if (JdbcFailures.connectionLost(c, e)) {
        return lostBeforeCommit(rows, e);
      }
      failOrThrow(rows, JdbcFailures.rowCause(e)); // the statement itself is broken: every row would fail alike
      return null;
    }
    int[] counts;
    try {
      counts = batchRows.execute(c, ps, rows, connection.autoCommit());
    } catch (Throwable e) {
      // Not only SQLException: with assertions on, pgjdbc's executeBatch on a terminated backend throws
      // AssertionError. Whatever the driver throws, a dead connection must be discarded.
      boolean rolledBack = BatchConnection.rollback(c, e);
      if (JdbcFailures.connectionLost(c, e)) {
        if (connection.autoCommit()) {
          // Idempotent autocommit: it may have committed on its own, and running it again is harmless.
          if (!connection.unanswered()) {
            return unknown(rows, e, "the statement");
          }
          batchRows.replaying(); // unanswered is not unsent: the statement may have committed, and a later failure says so
          return replaceDead(rows, e);
        }
        return lostBeforeCommit(rows, e); // the transaction never committed
      }
      connection.answered();
      if (!rolledBack) {
        connection.discard(); // its transaction may still hold these rows: never execute them there again
      }
      return refused(rows, e);
    }
    connection.answered();
    if (!connection.autoCommit() && batchRows.sentCount() > 0) {
      try {
        c.commit();
      } catch (Throwable e) {
        if (!JdbcFailures.commitRefused(c, e)) { // lost, or not the database's answer: it may have committed
          return unknown(rows, e, "COMMIT");
        }
        // The database answered: a known rollback (a deferred constraint, say).
        if (!BatchConnection.rollback(c, e)) {
          connection.discard(); // its transaction may still hold these rows: never execute them there again
        }
        return refused(rows, e);
      }
    }
    mayHaveWritten |= batchRows.sentCount() > 0;
    batchRows.completeSent(counts);
    return null;
  }

  /**
   * The connection was lost before anything of {@code rows} was committed. A connection the database never
   * answered in this batch was dead before it began (ended while idle in the pool): a fresh one is borrowed and
   * the rows written on it. Otherwise the rows certainly failed.
   */
  private int @Nullable [] lostBeforeCommit(int[] rows, Throwable e) throws SQLException {
    if (connection.unanswered()) {
      return replaceDead(rows, e);
    }
    connection.discard();
    failOrThrow(rows, JdbcFailures.lostConnection(e));
    return null;
  }

  private int @Nullable [] replaceDead(int[] rows, Throwable e) throws SQLException {
    connection.discard();
    if (++deadOnBorrow <= MAX_DEAD_ON_BORROW) {
      return rows; // written again on a fresh connection: nothing reached a live server, or an idempotent one did
    }
    // Rows an autocommit statement carried before it lost its connection are marked replayed: failOrThrow tells
    // them (and only them) that their outcome is unknown; rows never sent fail as not written.
    failOrThrow(rows, JdbcFailures.lostConnection(e));
    return null;
  }

  /**
   * The database refused the statement or a row. A failure of the statement (a missing table, a revoked privilege, a
   * serialization failure), known to have written nothing of {@code rows}, is thrown for the whole batch while
   * nothing of it is written, so a retry policy may write it again ({@link #failOrThrow}). An error of a class one
   * row can cause too (a row-level security policy, a lock: {@link JdbcFailures#mayBeOneRows}) is probed first: a
   * row caused it, and the rows are isolated; or the statement is refused without any row, and it is the
   * statement's; or the probe cannot tell (a rows sink's): thrown with the whole batch if these are all its rows, else
   * these rows fail alone and the others are written.
   */
  private int @Nullable [] refused(int[] rows, Throwable e) throws SQLException {
    if (!JdbcFailures.statementLevel(e)) {
      return isolate(rows, e);
    }
    Verdict verdict = JdbcFailures.mayBeOneRows(e) ? statementVerdict() : Verdict.REFUSED_WITHOUT_ROWS;
    if (verdict == Verdict.CAUSED_BY_A_ROW) {
      return isolate(rows, e);
    }
    if (verdict == Verdict.REFUSED_WITHOUT_ROWS || batchRows.holdAllUnsettled(rows)) {
      failOrThrow(rows, JdbcFailures.rowCause(e)); // the whole batch, at once while nothing is written: a retry decides
    } else {
      // A rows sink's probe could not tell these rows' error from the statement's: they fail alone (not written), the
      // others are still to be written. Halving them further under a lock would cost a lock wait per statement.
      batchRows.failUnsettled(rows, JdbcFailures.rowCause(e));
    }
    return null;
  }

  /** What a probe says of a statement-level error. */
  private enum Verdict { CAUSED_BY_A_ROW, MAY_BE_THESE_ROWS, REFUSED_WITHOUT_ROWS }

  /**
   * Whether the statement itself is refused, or one of the rows it carried: an error of a class no row causes in
   * the usual case (a missing table) can come from one row too (a row-level security policy, a trigger routing a
   * row to a missing table, a lock on one row's parent). A probe tells them apart, at the cost of one or two
   * statements instead of halving down to single rows: an arrays sink's runs without any row (so its failure is the
   * statement's), a rows sink's with the first row, then the last (so its failure may still be theirs).
   */
  private Verdict statementVerdict() throws SQLException {
    int[] sent = batchRows.sentRows();
    if (sent.length < 2 && !batchRows.probesWithoutRows()) {
      return Verdict.MAY_BE_THESE_ROWS; // one row, narrowed down: it or the statement; its probe would be itself
    }
    Connection c = null;
    Throwable probe;
    try {
      c = connection.get();
      probe = batchRows.probe(c, connection.statement(), sent);
    } catch (Throwable e) { // the probe could not be run or rolled back: isolate the rows as usual
      connection.discard();
      if (!mayHaveWritten && c != null && JdbcFailures.connectionLost(c, e)) {
        failOrThrow(sent, JdbcFailures.lostConnection(e));
      }
      return Verdict.CAUSED_BY_A_ROW;
    }
    if (probe != null && JdbcFailures.connectionLost(c, probe)) {
      connection.discard();
      if (!mayHaveWritten) {
        failOrThrow(sent, JdbcFailures.lostConnection(probe)); // nothing committed: throws the whole batch, for a retry
      }
      return Verdict.CAUSED_BY_A_ROW; // the rows are isolated on a fresh connection
    }
    if (probe == null || !JdbcFailures.statementLevel(probe)) {
      return Verdict.CAUSED_BY_A_ROW;
    }
    return batchRows.probesWithoutRows() ? Verdict.REFUSED_WITHOUT_ROWS : Verdict.MAY_BE_THESE_ROWS;
  }

  /** A failure that left nothing of these rows committed: thrown (the whole batch) if nothing is, else per row. */
  private void failOrThrow(int[] rows, Throwable e) throws SQLException {
    if (!mayHaveWritten && batchRows.anyUnsettledReplayed()) {
      throw (OutcomeUnknownException) StatementRows.unknownAfterReplay(e); // safe to retry: idempotent
    }
    if (!mayHaveWritten) {
      if (e instanceof SQLException sql) {
        throw sql;
      }
      if (e instanceof Error error) {
        throw error; // the driver's or a wrapper's, as it is: no retry takes it for a lost connection
      }
      throw new SQLRecoverableException("the connection was lost before any row of the batch was committed", e);
    }
    batchRows.failUnsettled(rows, e);
  }

  /** The reply to what commits these rows was lost: they may or may not be in the table. */
  private int @Nullable [] unknown(int[] rows, Throwable e, String what) {
    connection.discard();
    OutcomeUnknownException unknown = new OutcomeUnknownException("no answer of the database to " + what + " (" + e
        + "): the database may or may not have written these rows", e, idempotent);
    if (idempotent && !mayHaveWritten && batchRows.unsettled() == batchRows.sentCount()) {
      // Safe to write again: the whole batch fails as one, and a retry policy may retry it. Only when the rows sent
      // are all the batch has left (rows whose binder threw are settled and not sent): rows a halving has not tried
      // yet are certainly not written, and must not be told "unknown" by a batcher that does not retry.
      throw unknown;
    }
    batchRows.failUnsettled(rows, unknown);
    mayHaveWritten = true; // from now on a failure must not fail (or retry) the whole batch over these rows
    return null;
  }

  /**
   * The rows just executed failed together: fails the culprit and returns the rest to write in a new
   * transaction, or, with no culprit named, writes each half (a recursion as deep as log2 of the batch).
   */
  private int @Nullable [] isolate(int[] rows, Throwable e) throws SQLException {
    int[] attempt = batchRows.sentRows();
    if (attempt.length == 0) {
      batchRows.failUnsettled(rows, e); // nothing was executed, so nothing to split
      return null;
    }
    if (attempt.length == 1) {
      batchRows.fail(attempt[0], JdbcFailures.rowCause(e));
      return null;
    }
    int culprit = binder == null ? -1 : JdbcFailures.culprit(e, attempt);
    if (culprit >= 0) {
      batchRows.fail(attempt[culprit], JdbcFailures.rowCause(e));
      int[] rest = new int[attempt.length - 1];
      System.arraycopy(attempt, 0, rest, 0, culprit);
      System.arraycopy(attempt, culprit + 1, rest, culprit, rest.length - culprit);
      return rest;
    }
    int half = attempt.length / 2;
    writeRows(Arrays.copyOfRange(attempt, 0, half));
    writeRows(Arrays.copyOfRange(attempt, half, attempt.length));
    return null;
  }

  /**
   * Does nothing: the sink holds nothing between batches (each borrows its connection and gives it back when it
   * returns); giving back here a write's connection in use would hand it to the pool mid-write. Kept so that a
   * sink can be closed with its batcher.
   */
  @Override
  public void close() {
    // nothing held
  }

  @Override
  public String toString() {
    return "JdbcBatchSink{" + (binder != null ? "rows" : "arrays " + arrays) + (idempotent ? ", idempotent" : "")
        + (queryTimeout.isZero() ? "" : ", queryTimeout=" + queryTimeout) + ", sql='" + sql + "'}";
  }
}
