package dev.ringbatch.sink;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;

/**
 * Binds the rows of a batch as one statement whose parameters are whole columns (SQL arrays), for a
 * {@link JdbcBatchSink#ofArrays arrays sink}. ringbatch-postgresql's {@code PgUnnest} is one, with PostgreSQL's
 * value contract. Called on the batcher's consumer thread only.
 *
 * @param <T> the item type
 */
public interface ArrayBinder<T> {
  /** Starts the rows of one statement, room for {@code capacity}; a new, empty one on every call. */
  Rows<T> rows(int capacity);

  /**
   * Starts the rows of one statement that will run on {@code c}, before any row is added: a binder that reads
   * something of the database once (the types its columns go to, say) may read it here. By default
   * {@link #rows(int)}.
   *
   * @throws SQLException if reading fails: nothing of the batch was sent
   */
  default Rows<T> rows(Connection c, int capacity) throws SQLException {
    return rows(capacity);
  }

  /** The rows of one statement. */
  interface Rows<T> {
    /**
     * Adds {@code item} as the next row, or throws: the item then fails alone with what was thrown, and the row is
     * not added (what the failed call put in place of it is overwritten by the next one). Unchecked only: a column
     * value is computed, not waited for.
     */
    void add(T item);

    /**
     * Binds the rows added so far, possibly none (to learn whether the statement itself is refused), as the
     * statement's parameters, one array per column; the sink then runs it on {@code c}.
     *
     * @param autoCommit whether the statement runs in autocommit (an idempotent sink), else in a transaction
     */
    void bind(Connection c, PreparedStatement ps, boolean autoCommit) throws SQLException;
  }
}
