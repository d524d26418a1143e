package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** {@link JdbcBatchSink} against a real PostgreSQL 18, started in-process. */
class JdbcBatchSinkIT {
  private static final Duration WAIT = Duration.ofSeconds(30);

  private static EmbeddedPostgres postgres;

  /** The sink's three ways of sending a batch. */
  enum Mode {
    ROWS, ROWS_REWRITTEN, UNNEST
  }

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
  void createTable() throws SQLException {
    try (Connection c = postgres.getPostgresDatabase().getConnection(); Statement s = c.createStatement()) {
      s.execute("DROP TABLE IF EXISTS events");
      s.execute("CREATE TABLE events (id BIGINT PRIMARY KEY, payload TEXT NOT NULL CHECK (payload <> 'bad'))");
    }
  }

  private final List<com.zaxxer.hikari.HikariDataSource> pools = new ArrayList<>();

  @org.junit.jupiter.api.AfterEach
  void closePools() {
    pools.forEach(com.zaxxer.hikari.HikariDataSource::close);
  }

  /** A HikariCP pool, as applications give the sink: it borrows a connection per batch. */
  private DataSource dataSource(Mode mode) {
    com.zaxxer.hikari.HikariConfig config = new com.zaxxer.hikari.HikariConfig();
    config.setJdbcUrl("jdbc:postgresql://localhost:" + postgres.getPort() + "/postgres?user=postgres"
        + "&ApplicationName=ringbatch-sink&reWriteBatchedInserts=" + (mode == Mode.ROWS_REWRITTEN));
    config.setMaximumPoolSize(2);
    config.setMinimumIdle(1);
    com.zaxxer.hikari.HikariDataSource pool = new com.zaxxer.hikari.HikariDataSource(config);
    pools.add(pool);
    return pool;
  }

  private JdbcBatchSink<Event> sink(Mode mode) {
    return sink(mode, "");
  }

  private JdbcBatchSink<Event> sink(Mode mode, String onConflict) {
    DataSource ds = dataSource(mode);
    if (mode == Mode.UNNEST) {
      return TextArrays.<Event>sink(ds,
              "INSERT INTO events (id, payload) SELECT * FROM unnest(?::bigint[], ?::text[])" + onConflict)
          .column("bigint", Event::id)
          .column("text", Event::payload)
          .build();
    }
    return JdbcBatchSink.of(ds, "INSERT INTO events (id, payload) VALUES (?, ?)" + onConflict, (ps, e) -> {
      ps.setLong(1, e.id());
      ps.setString(2, e.payload());
    });
  }

  /** Whether {@code e}'s cause says the row may or may not be in the table. */
  private static boolean unknown(Throwable e) {
    return dev.ringbatch.OutcomeUnknownException.isIn(e);
  }

  @ParameterizedTest
  @EnumSource(Mode.class)
  void concurrentCallers_everyRowLandsExactlyOnce(Mode mode) throws Exception {
    int callers = 32;
    int perCaller = 200;
    try (JdbcBatchSink<Event> sink = sink(mode);
         Batcher<Event, Integer> batcher = Batcher.of("events", BatcherConfig.ofDefaults(), sink)) {
      ExecutorService pool = Executors.newFixedThreadPool(callers);
      List<Future<List<Integer>>> results = new ArrayList<>();
      for (int c = 0; c < callers; c++) {
        int caller = c;
        results.add(pool.submit(() -> {
          List<Integer> counts = new ArrayList<>();
          for (int i = 0; i < perCaller; i++) {
            counts.add(batcher.submitAndWait(new Event(caller * 1_000_000L + i, "caller " + caller)));
          }
          return counts;
        }));
      }
      for (Future<List<Integer>> result : results) {
        assertThat(result.get(60, TimeUnit.SECONDS))
            .allMatch(count -> count == 1 || count == Statement.SUCCESS_NO_INFO);
      }
      pool.shutdown();
      assertThat(batcher.stats().meanBatchSize()).isGreaterThan(1.0);
    }
    assertThat(count("SELECT count(*) FROM events")).isEqualTo(callers * perCaller);
    assertThat(count("SELECT count(DISTINCT id) FROM events")).isEqualTo(callers * perCaller);
  }

  @ParameterizedTest
  @EnumSource(Mode.class)
  void constraintViolationInOneRow_onlyThatRowFails(Mode mode) throws Exception {
    try (JdbcBatchSink<Event> sink = sink(mode)) {
      RecordingBatch<Event, Integer> batch = RecordingBatch.of(
          new Event(1, "a"), new Event(2, "b"), new Event(3, "bad"), new Event(4, "c"), new Event(1, "dup"),
          new Event(5, "d"));

      sink.write(batch);

      assertThat(batch.failed()).containsOnlyKeys(2, 4);
      assertThat(batch.failed().get(2)).isInstanceOf(SQLException.class)
          .hasMessageContaining("events_payload_check");
      assertThat(batch.failed().get(4)).isInstanceOf(SQLException.class)
          .hasMessageContaining("duplicate key");
      assertThat(batch.completed()).containsOnlyKeys(0, 1, 3, 5);
    }
    assertThat(ids()).containsExactly(1L, 2L, 4L, 5L);
  }

  @ParameterizedTest
  @EnumSource(Mode.class)
  void backendTerminatedWhileIdleInThePool_nextBatchIsWrittenOnAFreshConnection(Mode mode) throws Exception {
    try (JdbcBatchSink<Event> sink = sink(mode)) {
      RecordingBatch<Event, Integer> first = RecordingBatch.of(new Event(1, "a"));
      sink.write(first);
      assertThat(first.completed()).containsOnlyKeys(0);

      terminateSinkBackends(); // the pooled connection the next batch borrows is dead
      // Nothing of it reached a live server (the database never answered on that connection): the sink borrows
      // a fresh one and writes the batch there, in every mode.
      RecordingBatch<Event, Integer> next = RecordingBatch.of(new Event(2, "b"), new Event(3, "c"));
      sink.write(next);
      assertThat(next.completed()).containsOnlyKeys(0, 1);
      assertThat(next.failed()).isEmpty();
      RecordingBatch<Event, Integer> after = RecordingBatch.of(new Event(4, "d"), new Event(5, "e"));
      sink.write(after);

      assertThat(after.completed()).containsOnlyKeys(0, 1);
    }
    assertThat(ids()).containsExactly(1L, 2L, 3L, 4L, 5L);
  }

  @ParameterizedTest
  @EnumSource(value = Mode.class, names = {"ROWS", "UNNEST"})
  void backendTerminatedUnderLoadWhileIdle_everyRowWrittenOnAFreshConnection(Mode mode) throws Exception {
    int callers = 16;
    int perCaller = 300;
    List<CompletableFuture<Integer>> futures = new ArrayList<>();
    List<Event> events = new ArrayList<>();
    try (JdbcBatchSink<Event> sink = sink(mode);
         Batcher<Event, Integer> batcher = Batcher.of("events", BatcherConfig.ofDefaults(), sink)) {
      ExecutorService pool = Executors.newFixedThreadPool(callers + 1);
      CountDownLatch halfway = new CountDownLatch(callers);
      CountDownLatch killed = new CountDownLatch(1);
      List<Future<?>> running = new ArrayList<>();
      for (int c = 0; c < callers; c++) {
        int caller = c;
        List<CompletableFuture<Integer>> mine = new ArrayList<>();
        List<Event> myEvents = new ArrayList<>();
        running.add(pool.submit(() -> {
          for (int i = 0; i < perCaller; i++) {
            Event event = new Event(caller * 1_000_000L + i, "x");
            myEvents.add(event);
            CompletableFuture<Integer> f = batcher.submit(event);
            mine.add(f);
            f.exceptionally(e -> null).join();
            if (i == perCaller / 2) {
              halfway.countDown();
              if (!killed.await(60, TimeUnit.SECONDS)) {
                throw new AssertionError("the backend was not terminated within 60 s");
              }
            }
          }
          synchronized (futures) {
            futures.addAll(mine);
            events.addAll(myEvents);
          }
          return null;
        }));
      }
      assertThat(halfway.await(60, TimeUnit.SECONDS)).isTrue();
      terminateSinkBackends(); // every caller waits at halfway, so the kill lands mid-run on an idle connection
      killed.countDown();
      for (Future<?> r : running) {
        r.get(60, TimeUnit.SECONDS);
      }
      pool.shutdown();
    }
    List<Long> present = ids();
    int acknowledged = 0;
    int failed = 0;
    int unknown = 0;
    for (int i = 0; i < futures.size(); i++) {
      long id = events.get(i).id();
      try {
        futures.get(i).join();
        acknowledged++;
        assertThat(present).as("acknowledged row %s", id).contains(id);
      } catch (CompletionException e) {
        if (unknown(e)) {
          unknown++; // told exactly that: it may or may not be there
        } else {
          failed++;
          assertThat(present).as("failed row %s", id).doesNotContain(id);
        }
      }
    }
    assertThat(acknowledged + failed + unknown).isEqualTo(callers * perCaller);
    assertThat(failed + unknown).as("the batch that met the dead connection was written on a fresh one").isZero();
    assertThat(present).doesNotHaveDuplicates().hasSizeBetween(acknowledged, acknowledged + unknown);
    System.out.printf("%s: %d acknowledged and present, %d failed and absent, %d outcome unknown%n", mode,
        acknowledged, failed, unknown);
  }

  @ParameterizedTest
  @EnumSource(value = Mode.class, names = {"ROWS", "UNNEST"})
  void backendTerminatedUnderLoad_withRetryPolicy_noRowFailsAndNoneIsDuplicated(Mode mode) throws Exception {
    int callers = 32;
    int perCaller = 150;
    List<CompletableFuture<Integer>> futures = new java.util.concurrent.CopyOnWriteArrayList<>();
    BatcherConfig config = BatcherConfig.builder().retryPolicy(dev.ringbatch.RetryPolicy.builder()
        .maxAttempts(5).initialBackoff(Duration.ofMillis(10)).build()).build();
    // Idempotent: a reply lost with the connection is retried too, and the retry cannot write a row twice.
    try (JdbcBatchSink<Event> sink = sink(mode, " ON CONFLICT (id) DO NOTHING").idempotent();
         Batcher<Event, Integer> batcher = Batcher.of("events", config, sink)) {
      ExecutorService pool = Executors.newFixedThreadPool(callers);
      CountDownLatch halfway = new CountDownLatch(callers);
      CountDownLatch killed = new CountDownLatch(1);
      List<Future<?>> running = new ArrayList<>();
      for (int c = 0; c < callers; c++) {
        int caller = c;
        running.add(pool.submit(() -> {
          for (int i = 0; i < perCaller; i++) {
            CompletableFuture<Integer> f = batcher.submit(new Event(caller * 1_000_000L + i, "x"));
            futures.add(f);
            f.exceptionally(e -> null).join();
            if (i == perCaller / 2) {
              halfway.countDown();
              killed.await(60, TimeUnit.SECONDS);
            }
          }
          return null;
        }));
      }
      assertThat(halfway.await(60, TimeUnit.SECONDS)).isTrue();
      terminateSinkBackends();
      killed.countDown();
      for (Future<?> r : running) {
        r.get(60, TimeUnit.SECONDS);
      }
      pool.shutdown();
    }
    long failed = futures.stream().filter(CompletableFuture::isCompletedExceptionally).count();
    assertThat(failed).as("futures failed despite the retry policy").isZero();
    assertThat(ids()).hasSize(callers * perCaller).doesNotHaveDuplicates();
    System.out.printf("%s with retries: %d acknowledged, all present once, 0 failed%n", mode, futures.size());
  }

  private static void terminateSinkBackends() throws SQLException {
    // The pool keeps at least one idle connection (minimumIdle 1), so there is always a sink backend to kill.
    assertThat(count("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
        + " WHERE application_name = 'ringbatch-sink'")).isPositive();
  }

  private static int count(String sql) throws SQLException {
    try (Connection c = postgres.getPostgresDatabase().getConnection();
         Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getInt(1);
    }
  }

  private static List<Long> ids() throws SQLException {
    List<Long> ids = new ArrayList<>();
    try (Connection c = postgres.getPostgresDatabase().getConnection();
         Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT id FROM events ORDER BY id")) {
      while (rs.next()) {
        ids.add(rs.getLong(1));
      }
    }
    return ids;
  }
}
