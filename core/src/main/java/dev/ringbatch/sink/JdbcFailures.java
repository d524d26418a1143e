package dev.ringbatch.sink;

import dev.ringbatch.internal.shared.Causes;
import java.sql.BatchUpdateException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLRecoverableException;
import java.sql.Statement;
import org.jspecify.annotations.Nullable;

/**
 * How ringbatch's JDBC sinks read a JDBC failure: a lost connection, an error no single row can cause, the row to
 * blame, the row's own error. Public so that sinks in other modules ({@code ringbatch-postgresql}'s COPY sink) and
 * hand-written sinks classify failures exactly as {@link JdbcBatchSink} does.
 */
public final class JdbcFailures {
  private JdbcFailures() {}

  /**
   * Whether the connection is gone: SQLState class {@code 08} (connection exception) or {@code 57P0x}
   * (PostgreSQL's administrator shutdown / terminated backend) anywhere in the chain, or a connection that no
   * longer validates.
   */
  public static boolean connectionLost(Connection c, Throwable e) {
    if (Causes.any(e, JdbcFailures::statesConnectionLost)) {
      return true;
    }
    if (state(e) != null) {
      return false; // the database answered with an error of its own: the connection works (no isValid round trip)
    }
    try {
      return !c.isValid(2);
    } catch (Throwable broken) { // a driver's AssertionError on a dead backend too: the connection is lost
      e.addSuppressed(broken);
      return true;
    }
  }

  /**
   * Whether {@code commit()} failing with {@code e} is the database's refusal of the COMMIT, so that nothing of the
   * transaction is committed: an {@link SQLException} with an SQLState (a deferred constraint, a serialization
   * failure, a deferred trigger's error), on a connection that is not lost. Not a refusal, and so an unknown
   * outcome: a lost connection (by SQLState, or a JDBC connection exception); an {@code Error}, a {@code RuntimeException} or an SQLException with no SQLState
   * (a wrapper of the connection, or a driver, failing after the COMMIT may have been sent); {@code 40003}
   * (statement completion unknown: CockroachDB's "result is ambiguous"); an internal or system error
   * ({@code XX}, {@code 58}: PostgreSQL may raise one after the commit record); an invalid transaction state
   * ({@code 25}: pgjdbc's own refusal when auto-commit is on, whose statements committed on their own).
   */
  public static boolean commitRefused(Connection c, Throwable e) {
    if (!(e instanceof SQLException) || e instanceof SQLRecoverableException
        || e instanceof java.sql.SQLNonTransientConnectionException
        || e instanceof java.sql.SQLTransientConnectionException || connectionLost(c, e)) {
      return false; // JDBC's connection exceptions too, whatever their vendor's state (H2's 90067)
    }
    String state = state(e);
    if (state == null || state.length() != 5 || state.equals("40003")) {
      return false;
    }
    return switch (state.substring(0, 2)) {
      case "XX", "58", "25" -> false;
      default -> true;
    };
  }

  /** Whether {@code t} is an SQLException whose chain says the connection is gone. */
  private static boolean statesConnectionLost(Throwable t) {
    return lostState(t) != null;
  }

  /** The SQLState in {@code t}'s next-exception chain that says the connection is gone, or null. */
  private static @Nullable String lostState(Throwable t) {
    int depth = 0; // getNextException chains may loop too
    for (SQLException s = t instanceof SQLException sql ? sql : null; s != null && depth < 64;
        s = s.getNextException(), depth++) {
      String state = s.getSQLState();
      if (state != null && (state.startsWith("08") || state.startsWith("57P0"))) {
        return state;
      }
    }
    return null;
  }

  /**
   * What a whole batch fails with when its connection was lost before anything of it committed: {@code e} itself
   * when its own SQLState says the connection is gone, else an {@link SQLRecoverableException} with the state of
   * the loss found in its chain ({@code 08006} if none) and {@code e} as its cause. Never a row's own refusal that
   * arrived with the lost connection chained behind it: every row of the batch would be told it broke a
   * constraint, and a retry policy would not retry it.
   */
  public static SQLException lostConnection(Throwable e) {
    if (e instanceof SQLException sql && sql.getSQLState() != null
        && (sql.getSQLState().startsWith("08") || sql.getSQLState().startsWith("57P0"))) {
      return sql;
    }
    String state = null;
    int depth = 0;
    for (Throwable t = e; t != null && state == null && depth < 64; t = t.getCause(), depth++) {
      state = lostState(t);
    }
    return new SQLRecoverableException("the connection was lost before any row of the batch was committed ("
        + e + ")", state != null ? state : "08006", e);
  }

  /**
   * Whether no single row can have caused {@code e}, so that isolating rows would only repeat it: the statement,
   * the session or the server refused the whole batch. By SQLState class: syntax or access ({@code 42}: a missing
   * table, a revoked privilege), transaction state ({@code 25}: a read-only standby), not supported
   * ({@code 0A}), authorization ({@code 28}), missing catalog or schema ({@code 3D}, {@code 3F}), transaction
   * rollback ({@code 40}: a serialization failure or deadlock, for a retry of the whole batch), resources
   * ({@code 53}: a full disk), object state ({@code 55}: a lock not available), operator intervention
   * ({@code 57}: a cancelled or timed-out statement), system ({@code 58}), and the driver's "a result was
   * returned when none was expected" ({@code 0100E}). Any other state (data, constraints, triggers) or none
   * may come from one row, and the rows are isolated.
   */
  public static boolean statementLevel(Throwable e) {
    String state = state(e);
    if (state == null || state.length() < 2) {
      return false;
    }
    return switch (state.substring(0, 2)) {
      case "42", "25", "0A", "28", "3D", "3F", "40", "53", "55", "57", "58" -> true;
      default -> state.equals(RETURNED_ROWS);
    };
  }

  /**
   * Whether a statement-level error of {@code e}'s class may still come from one row, so that a probe without the
   * rows should confirm it: syntax or access ({@code 42}: a row-level security policy, or a trigger routing one row
   * to a missing table) and object state ({@code 55}: a lock on one row's parent). A cancelled or timed-out
   * statement, a full disk, a read-only database or a serialization failure concern the execution as a whole.
   */
  public static boolean mayBeOneRows(Throwable e) {
    String state = state(e);
    return state != null && (state.startsWith("42") || state.startsWith("55"));
  }

  /** pgjdbc's SQLState for "a result was returned when none was expected". */
  private static final String RETURNED_ROWS = "0100E";

  /** The database's SQLState for {@code e}: the next exception's (the server's own), else the first in the chain. */
  public static @Nullable String state(Throwable e) {
    int depth = 0;
    for (Throwable t = rowCause(e); t != null && depth < 64; t = t.getCause(), depth++) {
      if (t instanceof SQLException sql && sql.getSQLState() != null) {
        return sql.getSQLState();
      }
    }
    return e instanceof SQLException sql ? sql.getSQLState() : null;
  }

  /** The most specific error for one row: pgjdbc puts the server's message in the next exception. */
  public static Throwable rowCause(Throwable e) {
    SQLException next = e instanceof SQLException sql ? sql.getNextException() : null;
    return next != null ? next : e;
  }

  /**
   * Returns the position in {@code attempt} of the one row the driver blames, or -1 when the driver's
   * report does not name exactly one. A driver that stops at the first failure reports the counts of the
   * rows before it; one that goes on marks each failure {@link Statement#EXECUTE_FAILED}.
   */
  static int culprit(Throwable e, int[] attempt) {
    if (!(e instanceof BatchUpdateException bue)) {
      return -1;
    }
    int[] counts = bue.getUpdateCounts();
    if (counts == null) {
      return -1;
    }
    if (counts.length < attempt.length) {
      return counts.length;
    }
    if (counts.length > attempt.length) {
      return -1; // more counts than rows sent: the driver's answer names nothing
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
}
