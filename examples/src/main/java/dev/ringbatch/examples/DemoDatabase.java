package dev.ringbatch.examples;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import org.jspecify.annotations.Nullable;

/**
 * The database of the demos: PostgreSQL 18 started in-process (nothing to install), or a server of your own
 * with {@code --jdbc-url}. Hands out HikariCP pools.
 */
final class DemoDatabase implements AutoCloseable {
  private final @Nullable EmbeddedPostgres embedded;
  private final String url;

  private DemoDatabase(@Nullable EmbeddedPostgres embedded, String url) {
    this.embedded = embedded;
    this.url = url;
  }

  /**
   * Starts the database. With {@code durability} {@code on} (the default) the embedded server flushes the
   * WAL to disk on every commit ({@code fsync=on}, {@code synchronous_commit=on}), as a production server
   * does; the embedded library's own defaults turn both off, which hides the very cost batching saves.
   * {@code off} restores them.
   */
  static DemoDatabase start(String jdbcUrl, String durability, PrintStream out) throws IOException {
    if (!jdbcUrl.isEmpty()) {
      out.println("database: " + jdbcUrl);
      return new DemoDatabase(null, jdbcUrl);
    }
    if (!durability.equals("on") && !durability.equals("off")) {
      throw new IllegalArgumentException("--durability must be 'on' or 'off' but was '" + durability + "'");
    }
    long t0 = System.nanoTime();
    EmbeddedPostgres postgres = EmbeddedPostgres.builder()
        .setServerConfig("fsync", durability)
        .setServerConfig("synchronous_commit", durability)
        .start();
    String url = postgres.getJdbcUrl("postgres", "postgres");
    out.printf("database: embedded PostgreSQL 18 on port %d (fsync and synchronous_commit %s), started in %.1f s%n",
        postgres.getPort(), durability, (System.nanoTime() - t0) / 1e9);
    return new DemoDatabase(postgres, url);
  }

  /** A pool of {@code size} connections; {@code properties} are driver properties, as name, value pairs. */
  HikariDataSource pool(String name, int size, String... properties) {
    HikariConfig config = new HikariConfig();
    for (int i = 0; i + 1 < properties.length; i += 2) {
      config.addDataSourceProperty(properties[i], properties[i + 1]);
    }
    config.setJdbcUrl(url);
    config.setUsername("postgres");
    config.setPoolName(name);
    config.setMaximumPoolSize(size);
    config.setMinimumIdle(size);
    config.addDataSourceProperty("ApplicationName", name);
    return new HikariDataSource(config);
  }

  String url() {
    return url;
  }

  static void execute(HikariDataSource pool, String sql) throws SQLException {
    try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  static long count(HikariDataSource pool, String sql) throws SQLException {
    try (Connection c = pool.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  @Override
  public void close() throws IOException {
    if (embedded != null) {
      embedded.close();
    }
  }
}
