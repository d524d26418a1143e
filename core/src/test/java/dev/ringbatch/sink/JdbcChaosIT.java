package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.OutcomeUnknownException;
import dev.ringbatch.RetryPolicy;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * JdbcBatchSink under chaos on PostgreSQL 18, for every statement shape (a plain insert, {@code ON CONFLICT},
 * {@code RETURNING}, a bulk function): replies to the committing message lost at random by a proxy, backends
 * killed at random, the table renamed away and its privilege revoked mid-run, a retry policy on. After each run every caller's answer is checked against the
 * table: told written => there once; told failed => absent; told outcome unknown => either; no row twice.
 * {@code -Dringbatch.jdbc.chaos.rows=100000} for a longer run.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class JdbcChaosIT {
  private static final int ROWS = Integer.getInteger("ringbatch.jdbc.chaos.rows", 10_000);
  private static final int CALLERS = 16;

  private static EmbeddedPostgres postgres;

  record Event(long id, String payload) {}

  @BeforeAll
  static void startPostgres() throws Exception {
    postgres = EmbeddedPostgres.builder().start();
    PostgresSql.exec(postgres, "CREATE ROLE chaos_writer LOGIN");
  }

  @AfterAll
  static void stopPostgres() throws Exception {
    postgres.close();
  }

  @ParameterizedTest(name = "{0} {1}, idempotent={2}")
  @CsvSource({"rows, insert, false", "unnest, insert, false", "rows, insert, true", "unnest, insert, true",
      "rows, returning, false", "unnest, returning, false", "unnest, function, false"})
  void lostRepliesKilledBackendsAndSchemaChanges_everyAnswerMatchesTheTable(String mode, String shape,
      boolean idempotent) throws Exception {
    String table = "chaos_" + mode + "_" + shape + (idempotent ? "_idem" : "");
    PostgresSql.exec(postgres, "DROP TABLE IF EXISTS " + table, "DROP TABLE IF EXISTS " + table + "_away",
        "CREATE TABLE " + table + " (id BIGINT NOT NULL"
        + (idempotent ? " PRIMARY KEY" : "") + ", payload TEXT NOT NULL)", // no key: a duplicate shows
        "GRANT INSERT, SELECT ON " + table + " TO chaos_writer",
        "CREATE OR REPLACE FUNCTION put_" + table + "(ids bigint[], ps text[]) RETURNS bigint LANGUAGE sql AS $$"
            + " INSERT INTO " + table + " SELECT * FROM unnest(ids, ps) RETURNING 1; SELECT 1::bigint $$");
    Map<Long, CompletableFuture<Integer>> futures = new ConcurrentHashMap<>();
    AtomicInteger kills = new AtomicInteger();
    AtomicInteger schemaChanges = new AtomicInteger();
    int dropped;
    dev.ringbatch.BatcherStats stats;
    // An autocommit statement (idempotent unnest) commits with its own reply; the others commit with COMMIT.
    String trigger = mode.equals("unnest") && idempotent ? "unnest(" : "COMMIT";
    try (ReplyDroppingProxy proxy = new ReplyDroppingProxy(postgres.getPort(), trigger,
            () -> ThreadLocalRandom.current().nextInt(100) < 2);
         HikariDataSource pool = pool(proxy.port())) {
      JdbcBatchSink<Event> sink = sink(pool, mode, shape, table, idempotent);
      BatcherConfig config = BatcherConfig.builder().retryPolicy(RetryPolicy.builder().maxAttempts(6)
          .initialBackoff(Duration.ofMillis(5)).maxBackoff(Duration.ofMillis(50)).build()).build();
      AtomicBoolean running = new AtomicBoolean(true);
      Thread killer = new Thread(() -> {
        while (running.get()) {
          LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20 + ThreadLocalRandom.current().nextInt(60)));
          try {
            kills.addAndGet(PostgresSql.queryInt(postgres,
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                + " WHERE application_name = 'ringbatch-chaos'"));
            if (ThreadLocalRandom.current().nextInt(4) == 0) {
              schemaChanges.incrementAndGet(); // the table is missing, then not writable, for a moment
              PostgresSql.exec(postgres, "ALTER TABLE " + table + " RENAME TO " + table + "_away");
              PostgresSql.exec(postgres, "ALTER TABLE " + table + "_away RENAME TO " + table);
              PostgresSql.exec(postgres, "REVOKE INSERT ON " + table + " FROM chaos_writer");
              PostgresSql.exec(postgres, "GRANT INSERT ON " + table + " TO chaos_writer");
            }
          } catch (SQLException e) {
            throw new IllegalStateException(e);
          }
        }
      }, "backend-killer"); // load generation, paced by a random park: it synchronises nothing
      try (Batcher<Event, Integer> batcher = Batcher.of("chaos", config, sink)) {
        killer.start();
        ExecutorService callers = Executors.newFixedThreadPool(CALLERS);
        Future<?>[] done = new Future<?>[CALLERS];
        for (int c = 0; c < CALLERS; c++) {
          int caller = c;
          done[c] = callers.submit(() -> {
            for (long id = caller; id < ROWS; id += CALLERS) {
              CompletableFuture<Integer> f = batcher.submit(new Event(id, "p" + id));
              futures.put(id, f);
              f.exceptionally(e -> null).join(); // a closed loop: each caller waits for its answer
            }
            return null;
          });
        }
        for (Future<?> f : done) {
          f.get(240, TimeUnit.SECONDS);
        }
        callers.shutdown();
        stats = batcher.stats();
      } finally {
        running.set(false);
        killer.join(10_000);
      }
      dropped = proxy.dropped();
    }

    Map<Long, Integer> present = counts(table);
    int written = 0;
    int failed = 0;
    int unknown = 0;
    for (Map.Entry<Long, CompletableFuture<Integer>> e : futures.entrySet()) {
      long id = e.getKey();
      int copies = present.getOrDefault(id, 0);
      assertThat(copies).as("copies of row %s", id).isLessThanOrEqualTo(1);
      try {
        e.getValue().join();
        written++;
        assertThat(copies).as("row %s told written", id).isEqualTo(1);
      } catch (CompletionException failure) {
        if (OutcomeUnknownException.isIn(failure)) {
          unknown++;
        } else {
          failed++;
          assertThat(copies).as("row %s told failed (%s)", id, failure.getCause()).isZero();
        }
      }
    }
    assertThat(futures).hasSize(ROWS);
    assertThat(present.keySet()).allMatch(futures::containsKey);
    System.out.printf("jdbc chaos %s %s idempotent=%s: %d rows, %d written, %d failed, %d unknown, %d replies"
        + " lost, %d backends killed, %d schema changes, 0 duplicates%n", mode, shape, idempotent, ROWS, written,
        failed, unknown, dropped, kills.get(), schemaChanges.get());
    assertThat(stats.written()).as("written, as the batcher counts them").isEqualTo(written);
    assertThat(stats.failed()).as("failed and outcome unknown, as the batcher counts them").isEqualTo(failed + unknown);
    assertThat(dropped + kills.get()).as("chaos happened").isPositive();
  }

  private static JdbcBatchSink<Event> sink(HikariDataSource pool, String mode, String shape, String table,
      boolean idempotent) {
    String onConflict = idempotent ? " ON CONFLICT (id) DO NOTHING" : "";
    String returning = shape.equals("returning") ? " RETURNING id" : "";
    JdbcBatchSink<Event> sink;
    if (mode.equals("rows")) {
      sink = JdbcBatchSink.of(pool, "INSERT INTO " + table + " (id, payload) VALUES (?, ?)" + onConflict + returning,
          (ps, e) -> {
            ps.setLong(1, e.id());
            ps.setString(2, e.payload());
          });
    } else {
      String sql = shape.equals("function") ? "SELECT put_" + table + "(?::bigint[], ?::text[])"
          : "INSERT INTO " + table + " (id, payload) SELECT * FROM unnest(?::bigint[], ?::text[])" + onConflict
              + returning;
      sink = TextArrays.<Event>sink(pool, sql).column("bigint", Event::id).column("text", Event::payload)
          .build();
    }
    return idempotent ? sink.idempotent() : sink;
  }

  private static HikariDataSource pool(int port) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl("jdbc:postgresql://localhost:" + port + "/postgres?user=chaos_writer&ApplicationName=ringbatch-chaos"
        + "&prepareThreshold=0"); // statement text in every message, so the proxy can recognise it
    config.setMaximumPoolSize(2);
    config.setConnectionTimeout(10_000);
    return new HikariDataSource(config);
  }

  private static Map<Long, Integer> counts(String table) throws SQLException {
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
