package dev.ringbatch.sink;

import java.lang.System.Logger.Level;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * The connection and prepared statement {@link JdbcBatchSink} uses for one batch: borrowed from the pool on
 * first use, given back when the batch is written ({@link #release}), thrown away when it broke
 * ({@link #discard}). Holding nothing between batches lets the pool's lifetime, validation and leak detection
 * apply. Public so that sinks in other modules ({@code ringbatch-postgresql}'s COPY sink) keep the same connection
 * rules as {@link JdbcBatchSink}. Not thread-safe: one per sink, used on the thread that writes batches.
 */
public final class BatchConnection {
  private static final System.Logger LOG = System.getLogger(BatchConnection.class.getName());

  private final DataSource dataSource;
  private final String sql;
  private final boolean autoCommit;
  private @Nullable Connection connection;
  private @Nullable PreparedStatement statement;
  private final int queryTimeoutSeconds;
  /** Whether the database answered anything on this connection in this batch (a result or an error of its own). */
  private boolean answered;

  /**
   * @param dataSource where a connection is borrowed for each batch
   * @param sql the statement {@link #statement()} prepares
   * @param autoCommit the auto-commit mode every borrowed connection is put in
   * @param queryTimeoutSeconds the prepared statement's query timeout, 0 for none
   */
  public BatchConnection(DataSource dataSource, String sql, boolean autoCommit, int queryTimeoutSeconds) {
    this.dataSource = dataSource;
    this.sql = sql;
    this.autoCommit = autoCommit;
    this.queryTimeoutSeconds = queryTimeoutSeconds;
  }

  /** Whether borrowed connections are in auto-commit mode. */
  public boolean autoCommit() {
    return autoCommit;
  }

  /** The database answered on this connection: it was alive when the batch began. */
  public void answered() {
    answered = true;
  }

  /**
   * Whether the connection has not been answered yet in this batch: a loss then means it was dead before the
   * batch began (ended by the server while idle in the pool), and a fresh one may be borrowed.
   */
  public boolean unanswered() {
    return connection != null && !answered;
  }

  /** The connection borrowed for this batch, or null if none is. */
  public @Nullable Connection borrowed() {
    return connection;
  }

  /** The batch's connection, borrowed on first use. */
  public Connection get() throws SQLException {
    Connection c = connection;
    if (c == null) {
      c = dataSource.getConnection();
      try {
        if (c.getAutoCommit() != autoCommit) {
          c.setAutoCommit(autoCommit);
        }
      } catch (Throwable e) { // an Error too (a driver's or a wrapper's assertion): the connection goes back
        closeQuietly(c, e);
        throw e;
      }
      connection = c;
    }
    return c;
  }

  /** The statement, prepared on the batch's connection on first use. */
  public PreparedStatement statement() throws SQLException {
    PreparedStatement ps = statement;
    if (ps == null) {
      ps = get().prepareStatement(sql);
      statement = ps;
      if (queryTimeoutSeconds > 0) {
        ps.setQueryTimeout(queryTimeoutSeconds);
      }
    }
    return ps;
  }

  /**
   * Gives the connection back to the pool (a broken one is recognised and evicted by the pool). Never throws: it
   * runs after a commit, whose rows are written whatever a close then does.
   */
  public void release() {
    Connection c = connection;
    PreparedStatement ps = statement;
    connection = null;
    statement = null;
    answered = false;
    try {
      if (ps != null) {
        ps.close();
      }
    } catch (Throwable e) { // an Error too (a driver's or a wrapper's assertion)
      LOG.log(Level.DEBUG, "closing a statement failed", e);
    } finally {
      if (c != null) {
        closeQuietly(c, null);
      }
    }
  }

  /**
   * The connection broke, or its transaction could not be rolled back: aborts it (the server then rolls back
   * whatever it held, and a pool such as HikariCP evicts it) and drops it, so the next attempt borrows another.
   */
  public void discard() {
    Connection c = connection;
    if (c != null) {
      try {
        c.abort(Runnable::run);
      } catch (Throwable e) { // a driver without abort (or whose abort fails): closing must do
        LOG.log(Level.DEBUG, "aborting a broken connection failed", e);
      }
    }
    release();
  }

  /**
   * Rolls back an open transaction after {@code cause}; a failure to do so is attached to it.
   *
   * @return whether nothing of the transaction is left (rolled back, or autocommit)
   */
  public static boolean rollback(Connection c, Throwable cause) {
    try {
      if (!c.getAutoCommit()) {
        c.rollback();
      }
      return true;
    } catch (Throwable e) { // a driver's AssertionError on a dead backend too: the caller discards the connection
      cause.addSuppressed(e);
      return false;
    }
  }

  private static void closeQuietly(Connection c, @Nullable Throwable cause) {
    try {
      c.close();
    } catch (Throwable e) { // an Error too: nothing is left to do with the connection, and rows may be committed
      if (cause != null) {
        cause.addSuppressed(e);
      } else {
        LOG.log(Level.DEBUG, "closing a broken connection failed", e);
      }
    }
  }
}
