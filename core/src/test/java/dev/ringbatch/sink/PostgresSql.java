package dev.ringbatch.sink;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/** Plain SQL against the embedded PostgreSQL of a test, on a connection of its own (not the sink's). */
final class PostgresSql {
  private PostgresSql() {}

  /** The first column of the first row of {@code sql}, as an int. */
  static int queryInt(EmbeddedPostgres postgres, String sql) throws SQLException {
    try (Connection c = postgres.getPostgresDatabase().getConnection();
         Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getInt(1);
    }
  }

  /** Runs each statement in turn. */
  static void exec(EmbeddedPostgres postgres, String... sql) throws SQLException {
    try (Connection c = postgres.getPostgresDatabase().getConnection(); Statement s = c.createStatement()) {
      for (String statement : sql) {
        s.execute(statement);
      }
    }
  }
}
