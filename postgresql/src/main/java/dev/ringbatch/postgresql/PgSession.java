package dev.ringbatch.postgresql;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Collections;
import java.util.Map;
import java.util.WeakHashMap;

/**
 * The session setting the {@link PgValues} contract depends on: {@code array_nulls}, without which PostgreSQL
 * reads the {@code NULL} of an array literal (an unnest sink's column, an array value) as the string "NULL". Read
 * once per physical connection (one {@code SHOW}, remembered weakly by connection); on a connection where it is
 * off, each transaction turns it on for itself ({@code SET LOCAL}), and an autocommit one for the session. Normal
 * connections pay no round trip after the first. A setting changed later by the application is not seen. Used by
 * the COPY and unnest sinks before each transaction, and by {@link PgValues#set} for an array that may hold a null.
 */
final class PgSession {
  /** Physical connection: whether array_nulls must be turned on in each of its transactions. */
  private static final Map<Connection, Boolean> ARRAY_NULLS_OFF =
      Collections.synchronizedMap(new WeakHashMap<>());

  private PgSession() {}

  /**
   * Makes sure {@code c}'s current transaction (or, in autocommit, its session) reads an array literal's
   * {@code NULL} as SQL NULL. Call before the first statement of each transaction; a connection to another
   * database than PostgreSQL is left alone.
   */
  static void arrayNullsOn(Connection c, boolean autoCommit) throws SQLException {
    if (arrayNullsOff(c)) {
      Connection physical = c.isWrapperFor(Connection.class) ? c.unwrap(Connection.class) : c;
      try (Statement s = c.createStatement()) {
        s.execute(autoCommit ? "SET array_nulls = on" : "SET LOCAL array_nulls = on");
      }
      if (autoCommit) {
        ARRAY_NULLS_OFF.put(physical, false);
      }
    }
  }

  /** Whether {@code c}'s session reads an array literal's {@code NULL} as a string (one {@code SHOW}, remembered). */
  static boolean arrayNullsOff(Connection c) throws SQLException {
    Connection physical = c.isWrapperFor(Connection.class) ? c.unwrap(Connection.class) : c;
    Boolean off = ARRAY_NULLS_OFF.get(physical);
    if (off == null) {
      off = false;
      if ("PostgreSQL".equals(c.getMetaData().getDatabaseProductName())) {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SHOW array_nulls")) {
          off = rs.next() && "off".equalsIgnoreCase(rs.getString(1));
        }
      }
      ARRAY_NULLS_OFF.put(physical, off);
    }
    return off;
  }
}
