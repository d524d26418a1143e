package dev.ringbatch.sink;

import dev.ringbatch.internal.Causes;
import java.sql.BatchUpdateException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

/** How {@link JdbcBatchSink} reads a JDBC failure: a lost connection, the row to blame, the row's own error. */
final class JdbcFailures {
  private JdbcFailures() {}

  /**
   * Whether the connection is gone: SQLState class {@code 08} (connection exception) or {@code 57P0x}
   * (PostgreSQL's administrator shutdown / terminated backend) anywhere in the chain, or a connection that no
   * longer validates.
   */
  static boolean connectionLost(Connection c, Throwable e) {
    if (Causes.any(e, JdbcFailures::statesConnectionLost)) {
      return true;
    }
    try {
      return !c.isValid(2);
    } catch (SQLException | RuntimeException broken) {
      e.addSuppressed(broken);
      return true;
    }
  }

  /** Whether {@code t} is an SQLException whose chain says the connection is gone. */
  private static boolean statesConnectionLost(Throwable t) {
    int depth = 0; // getNextException chains may loop too
    for (SQLException s = t instanceof SQLException sql ? sql : null; s != null && depth < 64;
        s = s.getNextException(), depth++) {
      String state = s.getSQLState();
      if (state != null && (state.startsWith("08") || state.startsWith("57P0"))) {
        return true;
      }
    }
    return false;
  }

  /** The most specific error for one row: pgjdbc puts the server's message in the next exception. */
  static Throwable rowCause(Throwable e) {
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
