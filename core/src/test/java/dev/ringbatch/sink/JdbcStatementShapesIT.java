package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.RetryPolicy;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 20, items 1 to 3, on PostgreSQL 18 through HikariCP: statements that return rows are written once and
 * told written; a connection the server ended while idle in the pool is replaced, not told "outcome unknown";
 * an error no row can cause alone fails the batch at once instead of being halved down to single rows.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class JdbcStatementShapesIT {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static EmbeddedPostgres postgres;
  private final List<AutoCloseable> resources = new ArrayList<>();

  record Event(long id, String payload) {}

  @BeforeAll
  static void startPostgres() throws Exception {
    postgres = EmbeddedPostgres.builder().start();
    PostgresSql.exec(postgres, "CREATE ROLE reader LOGIN", "CREATE TABLE shapes (id BIGINT NOT NULL,"
            + " payload TEXT NOT NULL CHECK (payload <> 'bad'))", // no key: a row written twice shows
        "GRANT SELECT ON shapes TO reader",
        "CREATE FUNCTION put_rows(ids bigint[], ps text[]) RETURNS bigint LANGUAGE sql AS"
            + " $$ INSERT INTO shapes SELECT * FROM unnest(ids, ps) RETURNING 1; SELECT count(*) FROM shapes $$");
  }

  @AfterAll
  static void stopPostgres() throws Exception {
    postgres.close();
  }

  @BeforeEach
  void emptyTable() throws SQLException {
    PostgresSql.exec(postgres, "TRUNCATE shapes");
  }

  @AfterEach
  void closeResources() throws Exception {
    for (int i = resources.size() - 1; i >= 0; i--) {
      resources.get(i).close();
    }
  }

  // ---- item 1: statements that return rows

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {
      "INSERT INTO shapes (id, payload) SELECT * FROM unnest(?::bigint[], ?::text[]) RETURNING id",
      "SELECT put_rows(?::bigint[], ?::text[])",
      "WITH w AS (INSERT INTO shapes SELECT * FROM unnest(?::bigint[], ?::text[]) RETURNING id) SELECT id FROM w"})
  void unnest_statementReturningRows_isWrittenOnce_andEveryCallerIsToldWritten(String sql) throws Exception {
    for (boolean idempotent : new boolean[] {false, true}) {
      emptyTable();
      JdbcBatchSink<Event> sink = unnest(pool(""), sql);
      RecordingBatch<Event, Integer> batch = events(8, 0);
      (idempotent ? sink.idempotent() : sink).write(batch);

      assertThat(batch.failed()).as("idempotent=%s", idempotent).isEmpty();
      assertThat(batch.completed()).hasSize(8);
      assertThat(rows()).as("each row once, idempotent=%s", idempotent).isEqualTo(8);
      assertThat(PostgresSql.queryInt(postgres, "SELECT count(DISTINCT id) FROM shapes")).isEqualTo(8);
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"INSERT INTO shapes (id, payload) VALUES (?, ?) RETURNING id",
      "SELECT put_rows(ARRAY[?::bigint], ARRAY[?::text])"})
  void rows_statementReturningRows_isWrittenOnce_andEveryCallerIsToldWritten(String sql) throws Exception {
    CountingDataSource counting = new CountingDataSource(pool(""));
    JdbcBatchSink<Event> sink = JdbcBatchSink.of(counting.dataSource(), sql, JdbcStatementShapesIT::bind);
    RecordingBatch<Event, Integer> batch = events(8, 0);

    sink.write(batch);

    assertThat(batch.failed()).isEmpty();
    assertThat(batch.completed()).hasSize(8);
    assertThat(rows()).as("each row once").isEqualTo(8);
    assertThat(counting.executes).as("one statement, not halved").hasValue(1);
  }

  // ---- item 2: a connection the server ended while idle in the pool

  @ParameterizedTest(name = "{0}, idempotent={1}")
  @CsvSource({"rows, false", "unnest, false", "rows, true", "unnest, true"})
  void connectionTerminatedWhileIdleInThePool_nextBatchIsWritten_notOutcomeUnknown(String mode, boolean idempotent)
      throws Exception {
    HikariDataSource pool = pool("");
    JdbcBatchSink<Event> sink = mode.equals("rows")
        ? JdbcBatchSink.of(pool, "INSERT INTO shapes (id, payload) VALUES (?, ?)", JdbcStatementShapesIT::bind)
        : unnest(pool, "INSERT INTO shapes (id, payload) SELECT * FROM unnest(?::bigint[], ?::text[])");
    Batcher<Event, Integer> batcher = batcher(idempotent ? sink.idempotent() : sink);
    assertThat(batcher.submit(new Event(1, "a"))).succeedsWithin(WAIT);

    // Ends every idle pooled connection and waits until each backend has exited: the next batch comes well within
    // HikariCP's 500 ms validation bypass, so the pool hands a dead connection to the sink.
    assertThat(PostgresSql.queryInt(postgres, "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 10000))"
        + " FROM pg_stat_activity WHERE application_name = 'ringbatch-shapes'")).isPositive();

    assertThat(batcher.submit(new Event(2, "b"))).succeedsWithin(WAIT);
    assertThat(batcher.stats().failed()).isZero();
    assertThat(rows()).isEqualTo(2);
  }

  // ---- item 3: errors that no row causes alone

  @ParameterizedTest(name = "{0} {1}")
  @CsvSource(delimiter = '|', value = {
      "rows   | INSERT INTO missing (id, payload) VALUES (?, ?)                  |  | 42P01",
      "unnest | INSERT INTO missing SELECT * FROM unnest(?::bigint[], ?::text[]) |  | 42P01",
      "rows   | INSERT INTO shapes (id, payload) VALUES (?, ?)                   | reader | 42501",
      "unnest | INSERT INTO shapes SELECT * FROM unnest(?::bigint[], ?::text[])  | reader | 42501",
      "rows   | INSERT INTO shapes (id, payload) VALUES (?, ?)                   | readonly | 25006",
      "unnest | INSERT INTO shapes SELECT * FROM unnest(?::bigint[], ?::text[])  | readonly | 25006",
      "rows   | INSERT INTO shapes (id, payload) VALUES (?, ?                    |  | 42601",
      "unnest | INSERT INTO shapes SELECT * FROM unnest(?::bigint[], ?::text[]   |  | 42601"})
  void statementLevelError_failsTheWholeBatchAtOnce_withTheDatabasesError(String mode, String sql, String who,
      String state) throws Exception {
    String url = who == null ? "" : who.equals("reader") ? "&user=reader"
        : "&options=-c%20default_transaction_read_only%3Don";
    CountingDataSource counting = new CountingDataSource(pool(url));
    JdbcBatchSink<Event> sink = mode.equals("rows")
        ? JdbcBatchSink.of(counting.dataSource(), sql, JdbcStatementShapesIT::bind)
        : unnest(counting.dataSource(), sql);
    RecordingBatch<Event, Integer> batch = events(1_024, 0);

    assertThatThrownBy(() -> sink.write(batch)).isInstanceOfSatisfying(SQLException.class,
        e -> assertThat(e.getSQLState()).isEqualTo(state));
    assertThat(counting.executes).as("statements sent").hasValueLessThanOrEqualTo(mode.equals("rows") ? 3 : 2);
    assertThat(counting.validations).as("isValid round trips").hasValue(0);
    assertThat(rows()).isZero();
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"rows", "unnest"})
  void badRows_areIsolatedWithinTwoKLogNStatements(String mode) throws Exception {
    CountingDataSource counting = new CountingDataSource(pool(""));
    JdbcBatchSink<Event> sink = mode.equals("rows")
        ? JdbcBatchSink.of(counting.dataSource(), "INSERT INTO shapes (id, payload) VALUES (?, ?)",
            JdbcStatementShapesIT::bind)
        : unnest(counting.dataSource(), "INSERT INTO shapes SELECT * FROM unnest(?::bigint[], ?::text[])");
    RecordingBatch<Event, Integer> batch = events(1_024, 2);

    sink.write(batch);

    assertThat(batch.failed()).hasSize(2).allSatisfy((row, e) ->
        assertThat(((SQLException) e).getSQLState()).isEqualTo("23514"));
    assertThat(batch.completed()).hasSize(1_022);
    assertThat(rows()).isEqualTo(1_022);
    assertThat(counting.executes).as("statements for k=2 bad rows in n=1024").hasValueLessThanOrEqualTo(2 * 2 * 10 + 1);
    assertThat(counting.validations).as("isValid round trips").hasValue(0);
  }

  // ---- issue 21, item 2: a statement timeout

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"rows", "unnest"})
  void statementOverItsQueryTimeout_isCancelledAndRolledBack_theWholeBatchFailsAtOnce(String mode) throws Exception {
    CountingDataSource counting = new CountingDataSource(pool(""));
    JdbcBatchSink<Event> sink = (mode.equals("rows")
        ? JdbcBatchSink.of(counting.dataSource(), "INSERT INTO shapes (id, payload) SELECT ?, ? FROM pg_sleep(5)",
            JdbcStatementShapesIT::bind)
        : unnest(counting.dataSource(), "INSERT INTO shapes SELECT u.* FROM unnest(?::bigint[], ?::text[]) u,"
            + " pg_sleep(5)")).withQueryTimeout(Duration.ofMillis(300));
    assertThat(sink.toString()).as("rounded up to whole seconds").contains("queryTimeout=PT1S");

    assertThatThrownBy(() -> sink.write(events(4, 0))).isInstanceOfSatisfying(SQLException.class,
        e -> assertThat(e.getSQLState()).isEqualTo("57014"));
    assertThat(counting.executes).as("statements sent").hasValue(1);
    assertThat(rows()).isZero();
  }

  @Test
  void queryTimeout_mustBePositive_namingTheValue() {
    JdbcBatchSink<Event> sink = JdbcBatchSink.of(pool(""), "INSERT INTO shapes VALUES (?, ?)",
        JdbcStatementShapesIT::bind);
    assertThatThrownBy(() -> sink.withQueryTimeout(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("queryTimeout must be positive but was PT0S");
    assertThatThrownBy(() -> sink.withQueryTimeout(Duration.ofSeconds(-5)))
        .hasMessage("queryTimeout must be positive but was PT-5S");
  }

  // ---- helpers

  /** {@code n} events, of which {@code bad} (spread over the batch) break the CHECK constraint. */
  private static RecordingBatch<Event, Integer> events(int n, int bad) {
    Event[] events = new Event[n];
    for (int i = 0; i < n; i++) {
      boolean isBad = bad > 0 && i % (n / bad) == n / bad / 2;
      events[i] = new Event(i, isBad ? "bad" : "p" + i);
    }
    return RecordingBatch.of(events);
  }

  private static void bind(java.sql.PreparedStatement ps, Event e) throws SQLException {
    ps.setLong(1, e.id());
    ps.setString(2, e.payload());
  }

  private static JdbcBatchSink<Event> unnest(javax.sql.DataSource ds, String sql) {
    return TextArrays.<Event>sink(ds, sql).column("bigint", Event::id).column("text", Event::payload).build();
  }

  private HikariDataSource pool(String extraUrl) {
    HikariConfig config = new HikariConfig();
    String url = "jdbc:postgresql://localhost:" + postgres.getPort() + "/postgres?ApplicationName=ringbatch-shapes";
    config.setJdbcUrl(url + (extraUrl.contains("user=") ? extraUrl : "&user=postgres" + extraUrl));
    config.setMaximumPoolSize(2);
    config.setConnectionTimeout(5_000);
    HikariDataSource pool = new HikariDataSource(config);
    resources.add(pool);
    return pool;
  }

  private Batcher<Event, Integer> batcher(JdbcBatchSink<Event> sink) {
    Batcher<Event, Integer> batcher = Batcher.of("shapes",
        BatcherConfig.builder().retryPolicy(RetryPolicy.none()).build(), sink);
    resources.add(() -> batcher.close(WAIT));
    return batcher;
  }

  private static int rows() throws SQLException {
    return PostgresSql.queryInt(postgres, "SELECT count(*) FROM shapes");
  }
}
