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
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What a caller is told when the database's reply is lost (issue 11, items 1, 2 and 5), against PostgreSQL 18
 * behind a proxy that forwards the committing message and throws the reply away.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class JdbcOutcomeIT {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final RetryPolicy RETRY = RetryPolicy.builder().maxAttempts(4)
      .initialBackoff(Duration.ofMillis(10)).maxBackoff(Duration.ofMillis(50)).build();

  private static EmbeddedPostgres postgres;
  private final List<AutoCloseable> resources = new ArrayList<>();

  record Event(long id, String payload) {}

  @BeforeAll
  static void startPostgres() throws Exception {
    postgres = EmbeddedPostgres.builder().start();
  }

  @AfterAll
  static void stopPostgres() throws Exception {
    postgres.close();
  }

  @BeforeEach
  void createTables() throws SQLException {
    PostgresSql.exec(postgres, "DROP TABLE IF EXISTS log_rows",
        "CREATE TABLE log_rows (id BIGINT NOT NULL, payload TEXT NOT NULL)",
        "DROP TABLE IF EXISTS keyed_rows", "CREATE TABLE keyed_rows (id BIGINT PRIMARY KEY, payload TEXT NOT NULL)");
  }

  @AfterEach
  void closeResources() throws Exception {
    for (int i = resources.size() - 1; i >= 0; i--) {
      resources.get(i).close();
    }
  }

  @Test
  void rows_lostCommitReply_isOutcomeUnknown_notRetried_andTheRowIsThereOnce() throws Exception {
    ReplyDroppingProxy proxy = proxy("COMMIT");
    JdbcBatchSink<Event> sink = JdbcBatchSink.of(pool(proxy.port(), ""),
        "INSERT INTO log_rows (id, payload) VALUES (?, ?)", JdbcOutcomeIT::bind);
    Batcher<Event, Integer> batcher = batcher(sink);

    proxy.dropNext(1);
    CompletableFuture<Integer> lost = batcher.submit(new Event(1, "a"));

    assertUnknown(lost, false);
    assertThat(proxy.dropped()).isEqualTo(1);
    assertThat(batcher.submit(new Event(2, "b"))).succeedsWithin(WAIT);
    assertThat(count("log_rows", 1)).as("the lost-reply row, committed once, never retried").isEqualTo(1);
    assertThat(count("log_rows", 2)).isEqualTo(1);
  }

  @Test
  void unnest_lostReplyToTheStatement_isKnownNotWritten_andRetried() throws Exception {
    ReplyDroppingProxy proxy = proxy("unnest(");
    Batcher<Event, Integer> batcher = batcher(unnest(proxy, "log_rows", ""));

    proxy.dropNext(1);
    // The statement runs in a transaction that never committed: known not written, so the batch is retried.
    assertThat(batcher.submit(new Event(1, "a"))).succeedsWithin(WAIT);
    assertThat(proxy.dropped()).isEqualTo(1);
    assertThat(count("log_rows", 1)).isEqualTo(1);
  }

  @Test
  void unnest_lostCommitReply_isOutcomeUnknown_notRetried_andTheRowIsThereOnce() throws Exception {
    ReplyDroppingProxy proxy = proxy("COMMIT");
    Batcher<Event, Integer> batcher = batcher(unnest(proxy, "log_rows", ""));

    proxy.dropNext(1);
    CompletableFuture<Integer> lost = batcher.submit(new Event(1, "a"));

    assertUnknown(lost, false);
    assertThat(batcher.submit(new Event(2, "b"))).succeedsWithin(WAIT);
    assertThat(count("log_rows", 1)).isEqualTo(1);
  }

  @Test
  void idempotentRows_lostCommitReply_isRetried_andTheCallerIsToldWritten() throws Exception {
    ReplyDroppingProxy proxy = proxy("COMMIT");
    JdbcBatchSink<Event> sink = JdbcBatchSink.of(pool(proxy.port(), ""),
        "INSERT INTO keyed_rows (id, payload) VALUES (?, ?) ON CONFLICT (id) DO NOTHING", JdbcOutcomeIT::bind)
        .idempotent();
    Batcher<Event, Integer> batcher = batcher(sink);

    proxy.dropNext(1);
    CompletableFuture<Integer> retried = batcher.submit(new Event(1, "a"));

    assertThat(retried).succeedsWithin(WAIT).as("the row was there already: 0 rows inserted by the retry")
        .isEqualTo(0);
    assertThat(count("keyed_rows", 1)).isEqualTo(1);
  }

  @Test
  void idempotentUnnest_lostReply_isRetried_andTheCallerIsToldWritten() throws Exception {
    ReplyDroppingProxy proxy = proxy("unnest(");
    JdbcBatchSink<Event> sink = unnest(proxy, "keyed_rows", " ON CONFLICT (id) DO NOTHING").idempotent();
    Batcher<Event, Integer> batcher = batcher(sink);

    proxy.dropNext(1);
    assertThat(batcher.submit(new Event(1, "a"))).succeedsWithin(WAIT);
    assertThat(count("keyed_rows", 1)).isEqualTo(1);
  }

  @Test
  void idempotent_lostRepliesOutlastTheRetries_callerIsToldOutcomeUnknownSafeToRetry() throws Exception {
    ReplyDroppingProxy proxy = proxy("COMMIT");
    JdbcBatchSink<Event> sink = JdbcBatchSink.of(pool(proxy.port(), ""),
        "INSERT INTO keyed_rows (id, payload) VALUES (?, ?) ON CONFLICT (id) DO NOTHING", JdbcOutcomeIT::bind)
        .idempotent();
    Batcher<Event, Integer> batcher = batcher(sink);

    proxy.dropNext(RETRY.maxAttempts());
    assertUnknown(batcher.submit(new Event(1, "a")), true);
    assertThat(proxy.dropped()).isEqualTo(RETRY.maxAttempts());
    assertThat(count("keyed_rows", 1)).isEqualTo(1);
  }

  @Test
  void connectionKilledWhileIdle_byIdleSessionTimeout_nextBatchStillWritten() throws Exception {
    HikariDataSource pool = pool(postgres.getPort(), "&options=-c%20idle_session_timeout%3D700");
    JdbcBatchSink<Event> sink = JdbcBatchSink.of(pool, "INSERT INTO log_rows (id, payload) VALUES (?, ?)",
        JdbcOutcomeIT::bind);
    Batcher<Event, Integer> batcher = batcher(sink, RetryPolicy.none());
    assertThat(batcher.submit(new Event(1, "a"))).succeedsWithin(WAIT);

    // The server ends the idle session on its own: the scenario is the wait, nothing is synchronised by it.
    Awaitility.await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(100))
        .until(() -> sinkBackends() == 0);

    assertThat(batcher.submit(new Event(2, "b"))).succeedsWithin(WAIT);
    assertThat(batcher.stats().failed()).isZero();
  }

  // ---- helpers

  private static void bind(java.sql.PreparedStatement ps, Event e) throws SQLException {
    ps.setLong(1, e.id());
    ps.setString(2, e.payload());
  }

  private JdbcBatchSink<Event> unnest(ReplyDroppingProxy proxy, String table, String onConflict) {
    return TextArrays.<Event>sink(pool(proxy.port(), ""), "INSERT INTO " + table
            + " (id, payload) SELECT * FROM unnest(?::bigint[], ?::text[])" + onConflict)
        .column("bigint", Event::id).column("text", Event::payload).build();
  }

  private ReplyDroppingProxy proxy(String trigger) throws Exception {
    ReplyDroppingProxy proxy = new ReplyDroppingProxy(postgres.getPort(), trigger, () -> false);
    resources.add(proxy);
    return proxy;
  }

  private HikariDataSource pool(int port, String extraUrl) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl("jdbc:postgresql://localhost:" + port + "/postgres?user=postgres&ApplicationName=ringbatch-sink"
        + extraUrl);
    config.setMaximumPoolSize(2);
    config.setConnectionTimeout(5_000);
    HikariDataSource pool = new HikariDataSource(config);
    resources.add(pool);
    return pool;
  }

  private Batcher<Event, Integer> batcher(JdbcBatchSink<Event> sink) {
    return batcher(sink, RETRY);
  }

  private Batcher<Event, Integer> batcher(JdbcBatchSink<Event> sink, RetryPolicy retry) {
    Batcher<Event, Integer> batcher = Batcher.of("events", BatcherConfig.builder().retryPolicy(retry).build(), sink);
    resources.add(() -> batcher.close(WAIT));
    return batcher;
  }

  private static void assertUnknown(CompletableFuture<Integer> future, boolean safeToRetry) {
    assertThat(future).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
        .havingCause().isInstanceOfSatisfying(OutcomeUnknownException.class,
            e -> assertThat(e.isSafeToRetry()).isEqualTo(safeToRetry))
        .withMessageContaining("may or may not have written");
  }

  private static int sinkBackends() throws SQLException {
    return PostgresSql.queryInt(postgres,
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'ringbatch-sink'");
  }

  private static int count(String table, long id) throws SQLException {
    return PostgresSql.queryInt(postgres, "SELECT count(*) FROM " + table + " WHERE id = " + id);
  }
}
