package dev.ringbatch.postgresql;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The COPY sink tests' database helpers: pools (directly or through a proxy), a table whose COPY statements are
 * counted by a statement trigger on a sequence (a sequence is not rolled back, so refused copies count too), and
 * the rows in a table.
 */
final class CopyDatabase {
  private CopyDatabase() {}

  /** Runs each statement in turn, on a connection of its own. */
  static void exec(EmbeddedPostgres postgres, String... sql) throws SQLException {
    try (Connection c = postgres.getPostgresDatabase().getConnection(); Statement s = c.createStatement()) {
      for (String statement : sql) {
        s.execute(statement);
      }
    }
  }

  /** The first column of the first row of {@code sql}. */
  static long queryLong(EmbeddedPostgres postgres, String sql) throws SQLException {
    try (Connection c = postgres.getPostgresDatabase().getConnection(); Statement s = c.createStatement();
         ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  static HikariDataSource pool(int port, String application, int size) {
    return pool(port, application, size, null);
  }

  /** A pool whose every connection first runs {@code initSql} (a session setting), if not null. */
  static HikariDataSource pool(int port, String application, int size, @Nullable String initSql) {
    HikariConfig config = new HikariConfig();
    config.setConnectionInitSql(initSql);
    config.setJdbcUrl("jdbc:postgresql://localhost:" + port + "/postgres?user=postgres&ApplicationName=" + application
        + "&prepareThreshold=0"); // statement text in every message, so a proxy can recognise it
    config.setMaximumPoolSize(size);
    config.setConnectionTimeout(10_000);
    return new HikariDataSource(config);
  }

  /** Creates {@code table (id bigint, payload text)} plus {@code constraints}, its COPYs counted. */
  static void table(EmbeddedPostgres postgres, String table, String constraints) throws SQLException {
    exec(postgres, "CREATE SEQUENCE IF NOT EXISTS copies",
        "CREATE OR REPLACE FUNCTION count_copy() RETURNS trigger LANGUAGE plpgsql AS $$"
            + " BEGIN PERFORM nextval('copies'); RETURN NULL; END $$",
        "DROP TABLE IF EXISTS " + table,
        "CREATE TABLE " + table + " (id BIGINT NOT NULL, payload TEXT NOT NULL" + constraints + ")",
        "CREATE TRIGGER count_copy BEFORE INSERT ON " + table + " FOR EACH STATEMENT EXECUTE FUNCTION count_copy()");
  }


  /** How many statements inserted into a counted table so far, refused ones included. */
  static long copies(EmbeddedPostgres postgres) throws SQLException {
    return queryLong(postgres, "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM copies");
  }

  /** How many times each id is in {@code table}. */
  static Map<Long, Integer> counts(EmbeddedPostgres postgres, String table) throws SQLException {
    Map<Long, Integer> counts = new HashMap<>();
    try (Connection c = postgres.getPostgresDatabase().getConnection(); Statement s = c.createStatement();
         ResultSet rs = s.executeQuery("SELECT id, count(*) FROM " + table + " GROUP BY id")) {
      while (rs.next()) {
        counts.put(rs.getLong(1), rs.getInt(2));
      }
    }
    return counts;
  }
}
