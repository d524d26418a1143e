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
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What an idempotent unnest insert's callers are told when the statement's replies are lost or come late (outcome
 * unknown, the row written), and that a statement with several results reports no count (PostgreSQL 18 through
 * HikariCP; the cases a hostile review of issue 20 found).
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class JdbcUnnestRepliesIT {
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static EmbeddedPostgres postgres;
  private final List<AutoCloseable> resources = new ArrayList<>();

  record Event(long id, String payload) {}


  @BeforeAll
  static void startPostgres() throws Exception {
    postgres = EmbeddedPostgres.builder().start();
    PostgresSql.exec(postgres,
        "CREATE TABLE keyed (id BIGINT PRIMARY KEY, payload TEXT NOT NULL)",
        // Row-level security: the policy refuses one row, not the statement.
        "CREATE ROLE writer LOGIN",
        "CREATE TABLE secured (id BIGINT NOT NULL, payload TEXT NOT NULL)",
        "ALTER TABLE secured ENABLE ROW LEVEL SECURITY",
        "CREATE POLICY no_bad ON secured FOR INSERT TO writer WITH CHECK (payload <> 'bad')",
        "CREATE POLICY see_all ON secured FOR SELECT TO writer USING (true)",
        "GRANT SELECT, INSERT ON secured TO writer",
        // Classic trigger-routed partitioning: a row whose month has no child table raises 42P01 for that row.
        "CREATE TABLE routed (id BIGINT NOT NULL, payload TEXT NOT NULL)",
        "CREATE TABLE routed_a (LIKE routed)",
        "CREATE FUNCTION route() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
            + " EXECUTE format('INSERT INTO %I VALUES ($1.*)', 'routed_' || left(NEW.payload, 1)) USING NEW;"
            + " RETURN NULL; END $$",
        "CREATE TRIGGER route BEFORE INSERT ON routed FOR EACH ROW EXECUTE FUNCTION route()",
        // A deferred constraint trigger: its work runs in COMMIT, not in the sink's statement.
        "CREATE TABLE deferred (id BIGINT NOT NULL, payload TEXT NOT NULL)",
        "CREATE FUNCTION slow_check() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(6);"
            + " RETURN NULL; END $$",
        "CREATE CONSTRAINT TRIGGER slow_check AFTER INSERT ON deferred DEFERRABLE INITIALLY DEFERRED"
            + " FOR EACH ROW EXECUTE FUNCTION slow_check()",
        "CREATE TABLE audit (id BIGINT NOT NULL)",
        "CREATE TABLE parents (id BIGINT PRIMARY KEY)", "INSERT INTO parents VALUES (1), (2)",
        "CREATE TABLE children (id BIGINT NOT NULL, parent_id BIGINT NOT NULL REFERENCES parents)");
  }

  @AfterAll
  static void stopPostgres() throws Exception {
    postgres.close();
  }

  @BeforeEach
  void emptyTables() throws SQLException {
    PostgresSql.exec(postgres, "TRUNCATE keyed, secured, routed, routed_a, deferred, audit, children");
  }

  @AfterEach
  void closeResources() throws Exception {
    for (int i = resources.size() - 1; i >= 0; i--) {
      resources.get(i).close();
    }
  }

  // ---- 1. idempotent unnest, autocommit: a statement that may have committed is reported as a plain failure

  /**
   * docs/sinks.md: "the reply to the COMMIT is lost (or, for an idempotent() unnest sink, the reply to its
   * autocommit statement) -> OutcomeUnknownException". On a connection the database has not answered yet in the
   * batch, the sink instead calls it "dead before the batch began", re-runs it, and after three replacements
   * fails the batch with the plain connection error: the caller is told "failed" for a row that is in the table.
   */
  @Test
  void idempotentUnnest_lostStatementRepliesOnFreshConnections_rowWritten_callerToldOutcomeUnknown() throws Exception {
    ReplyDroppingProxy proxy = new ReplyDroppingProxy(postgres.getPort(), "unnest(", () -> false);
    resources.add(proxy);
    JdbcBatchSink<Event> sink = TextArrays.<Event>sink(pool(proxy.port(), "&user=postgres", 2),
            "INSERT INTO keyed (id, payload) SELECT * FROM unnest(?::bigint[], ?::text[]) ON CONFLICT (id) DO NOTHING")
        .column("bigint", Event::id).column("text", Event::payload).build().idempotent();
    Batcher<Event, Integer> batcher = batcher(sink, RetryPolicy.none());

    proxy.dropNext(4);
    CompletableFuture<Integer> future = batcher.submit(new Event(1, "a"));

    Throwable told = outcome(future);
    assertThat(proxy.dropped()).as("statements the server ran, each committed in autocommit").isEqualTo(4);
    assertThat(count("keyed")).as("the row is in the table").isEqualTo(1);
    assertThat(told).as("a caller whose row is in the table must not be told a plain failure")
        .isInstanceOf(OutcomeUnknownException.class);
  }

  /** Held up: the same four lost replies in a transaction (not idempotent) wrote nothing, and the caller is told so. */
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"rows", "unnest"})
  void transaction_lostStatementRepliesOnFreshConnections_toldFailed_andNothingWritten(String mode)
      throws Exception {
    ReplyDroppingProxy proxy = new ReplyDroppingProxy(postgres.getPort(), "keyed", () -> false);
    resources.add(proxy);
    HikariDataSource pool = pool(proxy.port(), "&user=postgres", 2);
    JdbcBatchSink<Event> sink = mode.equals("rows")
        ? JdbcBatchSink.of(pool, "INSERT INTO keyed (id, payload) VALUES (?, ?)", JdbcUnnestRepliesIT::bind)
        : TextArrays.<Event>sink(pool, "INSERT INTO keyed (id, payload) SELECT * FROM unnest(?::bigint[], ?::text[])")
            .column("bigint", Event::id).column("text", Event::payload).build();
    Batcher<Event, Integer> batcher = batcher(sink, RetryPolicy.none());

    proxy.dropNext(4);
    Throwable told = outcome(batcher.submit(new Event(1, "a")));
    assertThat(proxy.dropped()).isEqualTo(4);
    assertThat(told).isInstanceOf(SQLException.class);
    assertThat(count("keyed")).isZero();
    proxy.dropNext(1);
    assertThat(outcome(batcher.submit(new Event(2, "b")))).isNull(); // one dead connection replaced
    assertThat(count("keyed")).isEqualTo(1);
  }

  /**
   * The realistic form of the same defect: pgjdbc's socketTimeout shorter than the statement (the docs tell users
   * to set socketTimeout). Each attempt runs to completion and commits on the server; the client gives up first.
   */
  @Test
  void idempotentUnnest_socketTimeoutShorterThanTheStatement_rowWritten_callerToldOutcomeUnknown() throws Exception {
    JdbcBatchSink<Event> sink = TextArrays.<Event>sink(
            pool(postgres.getPort(), "&user=postgres&socketTimeout=1", 2),
            "INSERT INTO keyed (id, payload) SELECT u.* FROM unnest(?::bigint[], ?::text[]) u, pg_sleep(1.5)"
                + " ON CONFLICT (id) DO NOTHING")
        .column("bigint", Event::id).column("text", Event::payload).build().idempotent();
    Batcher<Event, Integer> batcher = batcher(sink, RetryPolicy.none());

    CompletableFuture<Integer> future = batcher.submit(new Event(1, "a"));

    Throwable told = outcome(future);
    // The server runs the last attempt to its end after the client gave up: wait until no such statement runs.
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(50))
        .until(() -> PostgresSql.queryInt(postgres, "SELECT count(*) FROM pg_stat_activity WHERE state = 'active'"
            + " AND query LIKE '%pg_sleep(1.5)%' AND pid <> pg_backend_pid()") == 0);
    assertThat(count("keyed")).as("the row is in the table").isEqualTo(1);
    assertThat(told).as("a caller whose row is in the table must not be told a plain failure")
        .isInstanceOf(OutcomeUnknownException.class);
  }

  // ---- 2. statement-level classification of errors one row causes

  /**
   * A row-level security WITH CHECK policy refuses one row with SQLState 42501. The sink takes class 42 as "no row
   * can cause it" and fails every good row of the batch with the bad row's error; a retry fails the same way.
   */
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"rows", "unnest"})
  void rowLevelSecurityRefusingOneRow_failsOnlyThatRow(String mode) throws Exception {
    HikariDataSource pool = pool(postgres.getPort(), "&user=writer", 2);
    JdbcBatchSink<Event> sink = mode.equals("rows")
        ? JdbcBatchSink.of(pool, "INSERT INTO secured (id, payload) VALUES (?, ?)", JdbcUnnestRepliesIT::bind)
        : TextArrays.<Event>sink(pool, "INSERT INTO secured SELECT * FROM unnest(?::bigint[], ?::text[])")
            .column("bigint", Event::id).column("text", Event::payload).build();
    RecordingBatch<Event, Integer> batch = RecordingBatch.of(new Event(1, "a1"), new Event(2, "a2"),
        new Event(3, "a3"), new Event(4, "bad"), new Event(5, "a5"), new Event(6, "a6"), new Event(7, "a7"),
        new Event(8, "a8"));

    Throwable thrown = null;
    try {
      sink.write(batch);
    } catch (SQLException e) {
      thrown = e;
    }

    assertThat(thrown).as("the whole batch thrown for one row's policy violation").isNull();
    assertThat(batch.failed()).as("failed rows").containsOnlyKeys(3);
    assertThat(count("secured")).isEqualTo(7);
  }

  /** Trigger-routed partitioning: a row routed to a missing child raises 42P01 for that row alone. */
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"rows", "unnest"})
  void triggerRoutingOneRowToAMissingTable_failsOnlyThatRow(String mode) throws Exception {
    HikariDataSource pool = pool(postgres.getPort(), "&user=postgres", 2);
    JdbcBatchSink<Event> sink = mode.equals("rows")
        ? JdbcBatchSink.of(pool, "INSERT INTO routed (id, payload) VALUES (?, ?)", JdbcUnnestRepliesIT::bind)
        : TextArrays.<Event>sink(pool, "INSERT INTO routed SELECT * FROM unnest(?::bigint[], ?::text[])")
            .column("bigint", Event::id).column("text", Event::payload).build();
    RecordingBatch<Event, Integer> batch = RecordingBatch.of(new Event(1, "a1"), new Event(2, "a2"),
        new Event(3, "z3"), new Event(4, "a4"));

    Throwable thrown = null;
    try {
      sink.write(batch);
    } catch (SQLException e) {
      thrown = e;
    }

    assertThat(thrown).as("the whole batch thrown for one row's routing error").isNull();
    assertThat(batch.failed()).as("failed rows").containsOnlyKeys(2);
    assertThat(count("routed_a")).isEqualTo(3);
  }

  /**
   * lock_timeout (a common production setting) and one row whose foreign-key parent another transaction holds
   * FOR UPDATE: only that row waits and gets 55P03. The sink fails every row of the batch with it.
   */
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"rows", "unnest"})
  void lockTimeoutOnOneRowsParent_failsOnlyThatRow(String mode) throws Exception {
    HikariDataSource pool = pool(postgres.getPort(), "&user=postgres&options=-c%20lock_timeout%3D500", 2);
    JdbcBatchSink<Event> sink = mode.equals("rows")
        ? JdbcBatchSink.of(pool, "INSERT INTO children (id, parent_id) VALUES (?, ?::bigint)", JdbcUnnestRepliesIT::bind)
        : TextArrays.<Event>sink(pool, "INSERT INTO children SELECT * FROM unnest(?::bigint[], ?::bigint[])")
            .column("bigint", Event::id).column("bigint", e -> Long.valueOf(e.payload())).build();
    RecordingBatch<Event, Integer> batch = RecordingBatch.of(new Event(1, "1"), new Event(2, "1"),
        new Event(3, "2"), new Event(4, "1"));
    Throwable thrown = null;
    try (Connection locker = postgres.getPostgresDatabase().getConnection()) {
      locker.setAutoCommit(false);
      try (Statement s = locker.createStatement()) {
        s.execute("SELECT * FROM parents WHERE id = 2 FOR UPDATE");
      }
      try {
        sink.write(batch);
      } catch (SQLException e) {
        thrown = e;
      }
      locker.rollback();
    }

    assertThat(thrown).as("the whole batch thrown for one row's lock timeout").isNull();
    assertThat(batch.failed()).as("failed rows").containsOnlyKeys(2);
    assertThat(count("children")).isEqualTo(3);
  }

  // ---- 4. withQueryTimeout does not bound the COMMIT

  /**
   * withQueryTimeout promises a statement running longer is cancelled and the batch fails at once (57014). A
   * deferred constraint trigger runs in the COMMIT, which the sink sends with Connection.commit(): no timeout
   * applies, and the write blocks for as long as the COMMIT takes.
   */
  @Test
  void unnestResult_ofAStatementWithSeveralResults_isNoInfo_notTheLastCount() throws Exception {
    PostgresSql.exec(postgres, "INSERT INTO keyed VALUES (1, 'old'), (2, 'old')");
    HikariDataSource pool = pool(postgres.getPort(), "&user=postgres", 2);
    JdbcBatchSink<Event> sink = TextArrays.<Event>sink(pool,
            "INSERT INTO keyed SELECT * FROM unnest(?::bigint[], ?::text[]) ON CONFLICT (id) DO NOTHING;"
                + " INSERT INTO audit SELECT * FROM unnest(?::bigint[])")
        .column("bigint", Event::id).column("text", Event::payload).column("bigint", Event::id).build();
    RecordingBatch<Event, Integer> batch = RecordingBatch.of(new Event(1, "new"), new Event(2, "new"));

    sink.write(batch);

    assertThat(text("SELECT string_agg(payload, ',' ORDER BY id) FROM keyed")).isEqualTo("old,old");
    assertThat(batch.completed()).as("per-item results when no item's row was inserted")
        .allSatisfy((i, result) -> assertThat(result).isNotEqualTo(1));
  }

  // ---- helpers

  private static Throwable outcome(CompletableFuture<Integer> future) {
    try {
      future.get(WAIT.toSeconds(), TimeUnit.SECONDS);
      return null;
    } catch (ExecutionException e) {
      return e.getCause();
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  private static void bind(java.sql.PreparedStatement ps, Event e) throws SQLException {
    ps.setLong(1, e.id());
    ps.setString(2, e.payload());
  }

  private HikariDataSource pool(int port, String extraUrl, int size) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl("jdbc:postgresql://localhost:" + port + "/postgres?ApplicationName=ringbatch-review" + extraUrl);
    config.setMaximumPoolSize(size);
    config.setConnectionTimeout(5_000);
    HikariDataSource pool = new HikariDataSource(config);
    resources.add(pool);
    return pool;
  }

  private Batcher<Event, Integer> batcher(JdbcBatchSink<Event> sink, RetryPolicy retry) {
    Batcher<Event, Integer> batcher = Batcher.of("review", BatcherConfig.builder().retryPolicy(retry).build(), sink);
    resources.add(() -> batcher.close(WAIT));
    return batcher;
  }

  private static int count(String table) throws SQLException {
    return PostgresSql.queryInt(postgres, "SELECT count(*) FROM " + table);
  }

  private static String text(String sql) throws SQLException {
    try (Connection c = postgres.getPostgresDatabase().getConnection(); Statement s = c.createStatement();
         ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getString(1);
    }
  }
}
