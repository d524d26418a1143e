package dev.ringbatch.postgresql;

import static java.util.Objects.requireNonNull;

import dev.ringbatch.Batch;
import dev.ringbatch.BatchSink;
import dev.ringbatch.OutcomeUnknownException;
import dev.ringbatch.sink.BatchConnection;
import dev.ringbatch.sink.JdbcFailures;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLRecoverableException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.postgresql.copy.CopyIn;

/**
 * Writes each batch with one PostgreSQL {@code COPY ... FROM STDIN}, the fastest way into a table, and still
 * gives every item its own outcome: what a bulk loader does not. Build it with {@link #into}.
 *
 * <p>Each batch is one transaction per attempt on a connection borrowed from the {@link DataSource}: the
 * {@code COPY}, then the {@code COMMIT}. An attempt of up to 32 rows (outside idempotent mode) is one {@code COPY}
 * in auto-commit instead, a transaction of its own that its end commits: two round trips fewer (pgjdbc's
 * {@code BEGIN} and the {@code COMMIT}). Every row is written by a {@code COPY}, so a table's rules
 * ({@code CREATE RULE}), which {@code COPY} ignores, never apply: use triggers. Each item's result is 1 when the
 * server counted one row per item, else {@link Statement#SUCCESS_NO_INFO} (a {@code BEFORE} trigger skipped rows).
 *
 * <p>Values are written as text for each column's type, which the sink reads from the catalog once, on its first
 * batch (a read that fails fails that batch whole, nothing sent, and the next batch reads again). A column whose
 * type an {@code ALTER TABLE} changes later is still written for the type read: build a new sink after such a
 * change (a {@code real} column that was {@code double precision} would store a {@code Double} rounded).
 *
 * <h2>Failures</h2>
 * <ul>
 *   <li>A column function that throws anything, or a value PostgreSQL cannot store (text with a NUL character),
 *       fails that item alone, before anything is sent.</li>
 *   <li>A row the server refuses (a constraint, a value of the wrong form) rolls the whole {@code COPY} back,
 *       and the server names its line: that row fails alone with the server's error, and the others are copied
 *       again in one transaction, the rows after each refused row behind a savepoint: k bad rows cost at most
 *       2k + 1 {@code COPY}s and one {@code COMMIT}. An error without a line (a deferred constraint, a
 *       foreign key, an {@code AFTER} trigger) is found by halving.</li>
 *   <li>An error no row can cause (a missing table, a revoked privilege, a full disk, a read-only server: the
 *       SQLState classes of {@link JdbcFailures#statementLevel}) fails the whole batch at once, nothing of it
 *       written, and {@code write} throws it for a {@link dev.ringbatch.RetryPolicy}.</li>
 *   <li>A connection lost before the {@code COMMIT} (before a small batch's {@code COPY} was ended): nothing was
 *       written; {@code write} throws (a retry policy may write the batch again). A connection found dead before the server answered anything (ended while idle in
 *       the pool) is replaced, up to three times per batch.</li>
 *   <li><b>Outcome unknown.</b> The reply to the {@code COMMIT} was lost, or, for a small batch, the connection
 *       once the end of its {@code COPY} was sent (while the server processed the rows or committed them): the rows
 *       fail with {@link OutcomeUnknownException}. They may or may not be in the table.</li>
 * </ul>
 *
 * <h2>Idempotent mode</h2>
 * With {@link Builder#idempotentOn key columns} (a primary key or unique constraint), each batch is copied into a
 * temporary staging table made for the transaction and moved with {@code INSERT ... ON CONFLICT (key) DO NOTHING}:
 * an item's result is 1 when its row was inserted, 0 when a row with its key is there (from before, or from an
 * earlier item of the batch with the same key), {@link Statement#SUCCESS_NO_INFO} when neither (a {@code BEFORE}
 * trigger skipped it or changed its key). A lost {@code COMMIT} reply is then an {@link OutcomeUnknownException} that is
 * {@linkplain OutcomeUnknownException#isSafeToRetry() safe to retry}, thrown for the whole batch while nothing of it
 * is settled. The role needs {@code SELECT} on the table as well as {@code INSERT}.
 *
 * <p>Not thread-safe: it is the sink of one batcher (one shard), called on its consumer thread, and uses one
 * connection at a time. See {@code docs/sinks.md} for the figures.
 *
 * @param <T> the item type
 */
public final class PgCopySink<T> implements BatchSink<T, Integer>, AutoCloseable {
  /** How many connections found dead before the server answered one batch are replaced, at most. */
  private static final int MAX_DEAD_ON_BORROW = 3;
  /**
   * Attempts of up to this many rows are one {@code COPY} in auto-commit: a transaction of its own, committed by the
   * {@code COPY}'s end, two round trips where a transaction costs four (pgjdbc's {@code BEGIN}, the {@code COPY}'s
   * start, its end, the {@code COMMIT}). The price: a connection lost once the end is sent leaves the rows' outcome
   * unknown, while the server processes them (triggers, checks, a wait for another session's lock on a key) and
   * while it commits; in a transaction only a loss during the {@code COMMIT} does. So only small batches, whose rows
   * the server processes quickly unless they wait for a lock; a larger batch keeps its transaction.
   */
  static final int AUTOCOMMIT_ROWS = 32;

  private final CopyStatements<T> statements;
  private final BatchConnection connection;
  private final CopyRows<T> rows;
  /** Whether rows of this batch may be in the table (committed, or told outcome unknown): it must not throw. */
  private boolean mayHaveWritten;
  private int deadOnBorrow;
  /** Which columns are arrays, read on the first batch; null until read. */
  private PgValues.Target @Nullable [] targets;

  PgCopySink(DataSource dataSource, CopyStatements<T> statements) {
    this.statements = statements;
    // Transactions: a connection lost before the COMMIT then certainly wrote nothing (a backend killed while it
    // inserts the rows, a reply lost after the data), and the batch can be retried; only a lost reply to the COMMIT
    // is outcome unknown. It costs two round trips a batch (pgjdbc sends a BEGIN of its own before the COPY, then
    // the COMMIT): PgSinkBenchmark measures it. A small attempt is copied in auto-commit (AUTOCOMMIT_ROWS).
    this.connection = new BatchConnection(dataSource, statements.insertSql(), false, 0);
    this.rows = new CopyRows<>(statements.columns(), statements.keyFlags(), statements.idempotent());
  }

  /**
   * Starts a sink that copies into {@code table}; add its columns with {@link Builder#column}.
   *
   * @param dataSource where a connection is borrowed for each batch (a pool: HikariCP, say)
   * @param table the table, as SQL would name it ({@code events}, {@code audit.events}, {@code "Events"})
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if {@code table} is blank
   */
  public static <T> Builder<T> into(DataSource dataSource, String table) {
    return new Builder<>(dataSource, table);
  }

  /** Builds a {@link PgCopySink}: the columns in the order of the {@code COPY} column list. */
  public static final class Builder<T> {
    private final DataSource dataSource;
    private final String table;
    private final List<CopyColumn<T>> columns = new ArrayList<>();
    private List<String> keys = List.of();

    private Builder(DataSource dataSource, String table) {
      this.dataSource = requireNonNull(dataSource, "dataSource");
      this.table = requireNonNull(table, "table");
      CopyStatements.requireArgument(!table.isBlank(), "table must not be blank but was '%s'", table);
    }

    /**
     * Adds the next column. Its values are written in COPY's text format by the contract of
     * {@link PgValues} (the table is in {@code docs/sinks.md}): a value with no exact encoding
     * fails its item alone, with an error naming the column, its Java type and the reason; {@code null} is SQL NULL.
     *
     * @param name the column's name, as SQL would name it
     * @param value reads the column's value from an item; an exception it throws fails that item alone
     * @throws IllegalArgumentException if {@code name} is blank or already added
     */
    public Builder<T> column(String name, Function<? super T, ?> value) {
      requireNonNull(name, "name");
      requireNonNull(value, "value");
      CopyStatements.requireArgument(!name.isBlank(), "column name must not be blank but was '%s'", name);
      for (CopyColumn<T> c : columns) {
        CopyStatements.requireArgument(!c.name().equals(name), "column '%s' was already added", name);
      }
      columns.add(new CopyColumn<>(name, value));
      return this;
    }

    /**
     * Makes the sink idempotent on these columns, which must be added with {@link #column} and be the columns of a
     * primary key or unique constraint of the table (see the class comment).
     *
     * @throws IllegalArgumentException if no key is given, or a key is not among the columns added so far
     */
    public Builder<T> idempotentOn(String... keyColumns) {
      requireNonNull(keyColumns, "keyColumns");
      CopyStatements.requireArgument(keyColumns.length > 0, "idempotentOn needs at least one key column but got %s", 0);
      for (String key : keyColumns) {
        requireNonNull(key, "keyColumns");
        CopyStatements.requireArgument(columns.stream().anyMatch(c -> c.name().equals(key)),
            "key column '%s' is not among the columns added so far", key);
      }
      this.keys = List.of(keyColumns);
      return this;
    }

    /**
     * Returns the sink.
     *
     * @throws IllegalStateException if no column was added
     */
    public PgCopySink<T> build() {
      if (columns.isEmpty()) {
        throw new IllegalStateException("a COPY sink needs at least one column");
      }
      return new PgCopySink<>(dataSource, new CopyStatements<>(table, List.copyOf(columns), keys));
    }

    /**
     * Returns a sink for {@link dev.ringbatch.Batcher#ofAsync} that copies up to {@code connections} batches at
     * once, each on its own connection with its own {@link PgCopySink}: one batch is copied while another
     * commits. Set the batcher's {@code maxInFlightBatches} to {@code connections}.
     *
     * @throws IllegalArgumentException if {@code connections} is not between 1 and 256
     * @throws IllegalStateException if no column was added
     */
    public OverlappingCopySink<T> buildOverlapping(int connections) {
      build(); // the same checks, now rather than on the first batch
      return new OverlappingCopySink<>(this::build, connections, table);
    }
  }

  /**
   * Writes the batch; throws only when nothing of it was committed (the connection was lost or could not be
   * had, or the server refused the statement itself), so that a {@link dev.ringbatch.RetryPolicy} can write it
   * again, or, in idempotent mode, when the reply to the {@code COMMIT} was lost.
   */
  @Override
  public void write(Batch<T, Integer> batch) throws SQLException {
    mayHaveWritten = false;
    deadOnBorrow = 0;
    try {
      if (targets == null) {
        targets = statements.targets(connection, MAX_DEAD_ON_BORROW);
      }
      int[] encoded = rows.begin(batch, targets);
      if (encoded.length > 0) {
        writeRows(encoded);
      }
    } finally {
      connection.release();
      rows.end();
    }
  }

  /** Copies {@code rows} (ascending indices into the batch), isolating the rows the server refuses. */
  private void writeRows(int[] rowsToWrite) throws SQLException {
    // A loop over what is left after each refused line, not a recursion: a batch with many bad rows would
    // otherwise nest one call per bad row.
    for (int[] rest = rowsToWrite; rest != null; ) {
      rest = copyOnce(rest);
    }
  }

  /** One transaction of {@code attempt}; returns the rows still to copy (after a refused line or a dead connection). */
  private int @Nullable [] copyOnce(int[] attempt) throws SQLException {
    Connection c;
    try {
      c = connection.get();
    } catch (Throwable e) { // an Error too (a wrapper's assertion): nothing was sent on it
      failOrThrow(attempt, e); // nothing was sent: certainly not written
      return null;
    }
    int @Nullable [] results = statements.idempotent() ? new int[rows.size()] : null;
    boolean autoCommit = false;
    @Nullable CopyIn ending = null; // a COPY in auto-commit whose end was sent: the server may commit it
    long count;
    try {
      // Not where array_nulls is off: only a transaction can turn it on for itself (SET LOCAL) alone
      autoCommit = results == null && attempt.length <= AUTOCOMMIT_ROWS && !PgSession.arrayNullsOff(c);
      if (autoCommit) {
        c.setAutoCommit(true);
        ending = statements.send(c, connection, rows, attempt, true);
        count = CopyStatements.end(ending);
      } else {
        count = statements.copy(c, connection, rows, attempt, results);
      }
    } catch (Throwable e) {
      boolean transactional = !autoCommit || inTransactions(c, e);
      if (ending != null && ending.getHandledRowCount() >= 0) {
        // The server's CommandComplete, which it sends once the COPY's transaction committed: an error after it (a
        // cancel caught on the way out) or a connection lost before its ReadyForQuery changes nothing written
        if (!transactional || JdbcFailures.connectionLost(c, e)) {
          connection.discard();
        }
        return settle(attempt, ending.getHandledRowCount(), null);
      }
      if (ending != null && !CopyStatements.refusedByServer(e)) {
        return unknown(attempt, e, "the end of its COPY, committed on its own");
      }
      // Not only SQLException: whatever the driver throws, a dead connection must be discarded.
      boolean rolledBack = transactional && BatchConnection.rollback(c, e);
      String state = JdbcFailures.state(e);
      if (state != null && !state.startsWith("08") && !state.startsWith("57P0")) {
        // The server sent an error of its own (a transaction_timeout ending the session, say): the connection was
        // alive when the batch began, so a loss now is not a dead pooled connection to replace.
        connection.answered();
      }
      if (JdbcFailures.connectionLost(c, e)) {
        return lostBeforeCommit(attempt, e);
      }
      connection.answered();
      if (!rolledBack) {
        connection.discard(); // its transaction may still hold these rows: never copy them there again
      }
      return refused(attempt, e);
    }
    if (autoCommit) {
      if (!inTransactions(c, null)) {
        connection.discard(); // the rows are committed; the connection is not fit for a transaction
      }
      return settle(attempt, count, null);
    }
    return commit(c, attempt, count, results);
  }

  /**
   * Puts {@code c} back in transactions after a COPY in auto-commit; returns false if it could not (what it threw is
   * added to {@code failure}, if any).
   */
  private static boolean inTransactions(Connection c, @Nullable Throwable failure) {
    try {
      c.setAutoCommit(false);
      return true;
    } catch (Throwable e) {
      if (failure != null) {
        failure.addSuppressed(e);
      }
      return false;
    }
  }

  /** Commits the rows copied in {@code c}'s transaction and tells each its result; returns the rows left to copy. */
  private int @Nullable [] commit(Connection c, int[] copied, long count, int @Nullable [] results)
      throws SQLException {
    try {
      c.commit();
    } catch (Throwable e) {
      if (!JdbcFailures.commitRefused(c, e)) { // lost, or not the server's answer: it may have committed
        return unknown(copied, e, "COMMIT");
      }
      // The server answered: a known rollback (a deferred constraint, say).
      if (!BatchConnection.rollback(c, e)) {
        connection.discard();
      }
      return refused(copied, e);
    }
    return settle(copied, count, results);
  }

  /** The rows copied are committed: each is told its result. */
  private int @Nullable [] settle(int[] copied, long count, int @Nullable [] results) {
    mayHaveWritten = true;
    if (results != null) {
      rows.complete(copied, results);
    } else {
      rows.complete(copied, count == copied.length ? 1 : Statement.SUCCESS_NO_INFO);
    }
    return null;
  }

  /**
   * The connection was lost before the {@code COMMIT}: nothing of {@code attempt} was written. A connection the
   * server never answered in this batch was dead before it began: another is borrowed, up to three times.
   */
  private int @Nullable [] lostBeforeCommit(int[] attempt, Throwable e) throws SQLException {
    boolean deadOnArrival = connection.unanswered();
    connection.discard();
    if (deadOnArrival && ++deadOnBorrow <= MAX_DEAD_ON_BORROW) {
      return attempt;
    }
    failOrThrow(attempt, JdbcFailures.lostConnection(e));
    return null;
  }

  /** The server refused the statement or a row: fails the whole batch at once, or isolates the row. */
  private int @Nullable [] refused(int[] attempt, Throwable e) throws SQLException {
    if (JdbcFailures.statementLevel(e) && (!JdbcFailures.mayBeOneRows(e) || statementRefused())) {
      failOrThrow(attempt, JdbcFailures.rowCause(e));
      return null;
    }
    return isolate(attempt, e);
  }

  /**
   * Whether the statement itself is refused rather than one row (a class 42 or 55 error can come from a
   * trigger on one row, or a lock on one row's parent): a {@code COPY} of no rows, rolled back, tells them apart.
   */
  private boolean statementRefused() {
    Connection c = null;
    try {
      c = connection.get();
      statements.copy(c, connection, rows, new int[0], statements.idempotent() ? new int[rows.size()] : null);
      c.rollback();
      return false;
    } catch (Throwable probe) {
      if (c == null || !BatchConnection.rollback(c, probe) || JdbcFailures.connectionLost(c, probe)) {
        connection.discard(); // the rows are isolated on a fresh connection
        return false;
      }
      return JdbcFailures.statementLevel(probe);
    }
  }

  /**
   * The rows of {@code attempt} failed together: the line the server names fails alone and the rest are
   * returned to copy again; without a line, each half is copied on its own (a recursion log2 of the batch deep).
   */
  private int @Nullable [] isolate(int[] attempt, Throwable e) throws SQLException {
    Throwable cause = JdbcFailures.rowCause(e);
    if (attempt.length == 1) {
      rows.fail(attempt[0], cause);
      return null;
    }
    int line = statements.refusedLine(e);
    if (line >= 1 && line <= attempt.length && !statements.idempotent()) {
      return salvage(attempt, line, e);
    }
    if (line >= 1 && line <= attempt.length) {
      rows.fail(attempt[line - 1], cause);
      int[] rest = new int[attempt.length - 1];
      System.arraycopy(attempt, 0, rest, 0, line - 1);
      System.arraycopy(attempt, line, rest, line - 1, rest.length - (line - 1));
      return rest;
    }
    int half = attempt.length / 2;
    writeRows(Arrays.copyOfRange(attempt, 0, half));
    writeRows(Arrays.copyOfRange(attempt, half, attempt.length));
    return null;
  }

  /**
   * The server refused line {@code line} of {@code attempt} (its transaction rolled back): fails that row and copies
   * the rest in one new transaction. The rows before it passed the server's checks, so they are copied again as they
   * are; the rows after it may hold another refused row, so they are copied after a savepoint, and a refusal there
   * rolls back to it (and releases it) and starts over the same way. k refused rows cost about 2k + 1 COPYs, of the
   * rows not yet copied only, k savepoints one after another (never nested), and one COMMIT (copying the whole rest again in a new transaction for each would copy k times as
   * many rows). Anything else that goes wrong rolls the transaction back and gives its rows back to the usual path.
   */
  private int @Nullable [] salvage(int[] attempt, int line, Throwable refusal) throws SQLException {
    rows.fail(attempt[line - 1], JdbcFailures.rowCause(refusal));
    int[] passed = Arrays.copyOfRange(attempt, 0, line - 1);
    int[] rest = Arrays.copyOfRange(attempt, line, attempt.length);
    Connection c;
    try {
      c = connection.get();
    } catch (Throwable e) {
      return unsettled(attempt); // the usual path borrows again, and decides
    }
    return salvageIn(c, passed, rest, attempt);
  }

  private int @Nullable [] salvageIn(Connection c, int[] passed, int[] rest, int[] attempt) throws SQLException {
    int[] copied = new int[0];
    long count = 0;
    try {
      while (true) {
        if (passed.length > 0) {
          count += statements.copy(c, connection, rows, passed, null);
          copied = concat(copied, passed);
        }
        if (rest.length == 0) {
          break;
        }
        Savepoint beforeRest = c.setSavepoint();
        try {
          count += statements.copy(c, connection, rows, rest, null);
          copied = concat(copied, rest);
          break;
        } catch (SQLException e) {
          int next = statements.refusedLine(e);
          if (next < 1 || next > rest.length || JdbcFailures.statementLevel(e) || JdbcFailures.connectionLost(c, e)) {
            throw e;
          }
          c.rollback(beforeRest);
          // Released, so that the next savepoint is not nested in it: k refused rows would otherwise hold k
          // subtransactions, past PostgreSQL's cache of 64 per backend, which slows every snapshot
          c.releaseSavepoint(beforeRest);
          rows.fail(rest[next - 1], JdbcFailures.rowCause(e));
          passed = Arrays.copyOfRange(rest, 0, next - 1);
          rest = Arrays.copyOfRange(rest, next, rest.length);
        }
      }
    } catch (Throwable e) {
      if (!BatchConnection.rollback(c, e) || JdbcFailures.connectionLost(c, e)) {
        connection.discard();
      }
      return unsettled(attempt); // nothing of this transaction is written: the usual path takes the rows again
    }
    return commit(c, copied, count, null);
  }

  private int @Nullable [] unsettled(int[] attempt) {
    int[] left = Arrays.stream(attempt).filter(rows::unsettled).toArray();
    return left.length == 0 ? null : left;
  }

  private static int[] concat(int[] a, int[] b) {
    int[] all = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, all, a.length, b.length);
    return all;
  }

  /** A failure that left nothing of these rows written: thrown (the whole batch) if nothing of it is, else per row. */
  private void failOrThrow(int[] attempt, Throwable e) throws SQLException {
    if (!mayHaveWritten) {
      if (e instanceof SQLException sql) {
        throw sql;
      }
      if (e instanceof Error error) {
        throw error; // the driver's or a wrapper's, as it is: no retry takes it for a lost connection
      }
      throw new SQLRecoverableException("the connection was lost before any row of the batch was committed", e);
    }
    rows.failUnsettled(attempt, e);
  }

  /**
   * The reply to what committed these rows ({@code what}: the {@code COMMIT}, or the end of a {@code COPY} in
   * auto-commit) was lost: they may or may not be in the table.
   */
  private int @Nullable [] unknown(int[] attempt, Throwable e, String what) {
    connection.discard();
    boolean idempotent = statements.idempotent();
    OutcomeUnknownException unknown = new OutcomeUnknownException("no answer of the server to " + what + " (" + e
        + "): the server may or may not have written these rows", e, idempotent);
    if (idempotent && !mayHaveWritten && rows.unsettled() == attempt.length) {
      // Safe to copy again: the whole batch fails as one, and a retry policy may retry it. Only when these rows are
      // all the batch has left: rows a halving has not tried yet are certainly not written, and must not be told
      // "unknown" by a batcher that does not retry (or by an overlapping sink, which cannot).
      throw unknown;
    }
    rows.failUnsettled(attempt, unknown);
    mayHaveWritten = true;
    return null;
  }

  /**
   * Does nothing: the sink holds nothing between batches (each borrows its connection and gives it back when it
   * returns). Giving back here the connection of a write still in progress (one a batcher's close gave up on)
   * would hand the pool a connection in use, whose rollback waits behind that write. Kept so that a sink can be
   * closed with its batcher.
   */
  @Override
  public void close() {
    // nothing held
  }

  @Override
  public String toString() {
    return "PgCopySink{" + statements + "}";
  }
}
