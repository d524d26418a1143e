package dev.ringbatch.postgresql;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.OutcomeUnknownException;
import dev.ringbatch.RetryPolicy;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The database goes away mid-run and comes back, under the COPY sink: PostgreSQL is stopped and restarted on the
 * same port and data directory while 32 callers keep submitting. With a retry policy that outlasts the outage,
 * writing resumes, every acknowledged row is in the table exactly once, every failed row (not outcome unknown) is
 * absent, no row is there twice, and no future is left pending. Plain and idempotent.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class PgCopyRestartIT {
  private static final int CALLERS = 32;
  private static final int PER_CALLER = Integer.getInteger("ringbatch.restart.perCaller", 200);

  @TempDir
  Path dataDirectory;

  record Event(long id, String payload) {}

  private EmbeddedPostgres start(int port) throws Exception {
    return EmbeddedPostgres.builder().setDataDirectory(dataDirectory).setCleanDataDirectory(false)
        .setPort(port).setServerConfig("fsync", "on").start();
  }

  @ParameterizedTest(name = "idempotent={0}")
  @ValueSource(booleans = {false, true})
  void restartMidRun_acknowledgedRowsOnce_failedRowsAbsent_writingResumes(boolean idempotent) throws Exception {
    int port;
    try (ServerSocket socket = new ServerSocket(0)) {
      port = socket.getLocalPort();
    }
    EmbeddedPostgres postgres = start(port);
    String url = "jdbc:postgresql://localhost:" + port + "/postgres?user=postgres";
    try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement()) {
      // Plain: no key, so that a row written twice shows as a duplicate rather than as a refusal.
      s.execute("CREATE TABLE events (id BIGINT NOT NULL" + (idempotent ? " PRIMARY KEY" : "")
          + ", payload TEXT NOT NULL)");
    }
    List<CompletableFuture<Integer>> futures = new CopyOnWriteArrayList<>();
    List<Long> ids = new CopyOnWriteArrayList<>();
    RetryPolicy retry = RetryPolicy.builder().maxAttempts(100).initialBackoff(Duration.ofMillis(50))
        .maxBackoff(Duration.ofMillis(500)).maxElapsed(Duration.ofSeconds(60)).build();
    long outageMillis;
    AtomicInteger retries = new AtomicInteger();
    // No pool, as in core's PostgresRestartIT: a connection opened while the server is down fails at once, and
    // the batch is retried (a pool would wait out a short outage inside getConnection).
    PGSimpleDataSource pool = new PGSimpleDataSource();
    pool.setURL(url + "&ApplicationName=ringbatch-copy-restart");
    {
      PgCopySink.Builder<Event> builder = PgCopySink.<Event>into(pool, "events").column("id", Event::id)
          .column("payload", Event::payload);
      if (idempotent) {
        builder.idempotentOn("id");
      }
      try (PgCopySink<Event> sink = builder.build();
           Batcher<Event, Integer> batcher = Batcher.of("events",
               BatcherConfig.builder().retryPolicy(retry).submitTimeout(Duration.ofSeconds(60)).build(), sink)) {
        batcher.addStatsRecorder(new dev.ringbatch.stats.StatsRecorder() {
          @Override
          public void recordRetry(int attempt, Throwable cause) {
            retries.incrementAndGet();
          }
        });
        ExecutorService threads = Executors.newFixedThreadPool(CALLERS);
        CountDownLatch halfway = new CountDownLatch(CALLERS);
        CountDownLatch stopped = new CountDownLatch(1);
        List<Future<?>> callers = new ArrayList<>();
        for (int c = 0; c < CALLERS; c++) {
          int caller = c;
          callers.add(threads.submit(() -> {
            for (int i = 0; i < PER_CALLER; i++) {
              long id = caller * 1_000_000L + i;
              ids.add(id);
              CompletableFuture<Integer> f = batcher.submit(new Event(id, "p" + id));
              futures.add(f);
              f.exceptionally(e -> null).get(120, TimeUnit.SECONDS); // a lost future shows as a timeout
              if (i == PER_CALLER / 2) {
                halfway.countDown();
                stopped.await(60, TimeUnit.SECONDS); // resume while the server is down, during its restart
              }
            }
            return null;
          }));
        }
        assertThat(halfway.await(60, TimeUnit.SECONDS)).isTrue();
        long down = System.nanoTime();
        postgres.close(); // stops the server; the data directory stays
        stopped.countDown();
        postgres = start(port);
        outageMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - down);
        for (Future<?> f : callers) {
          f.get(150, TimeUnit.SECONDS);
        }
        threads.shutdown();
      }
    }
    try {
      Map<Long, Integer> present = new HashMap<>();
      try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement();
           ResultSet rs = s.executeQuery("SELECT id, count(*) FROM events GROUP BY id")) {
        while (rs.next()) {
          present.put(rs.getLong(1), rs.getInt(2));
        }
      }
      assertThat(present).as("no row twice").allSatisfy((id, n) -> assertThat(n).as("copies of row %s", id).isOne());
      int acknowledged = 0;
      int failed = 0;
      int unknown = 0;
      for (int i = 0; i < futures.size(); i++) {
        CompletableFuture<Integer> f = futures.get(i);
        long id = ids.get(i);
        assertThat(f).as("future of row %s completed", id).isDone();
        try {
          f.join();
          acknowledged++;
          assertThat(present).as("acknowledged row %s", id).containsKey(id);
        } catch (CompletionException e) {
          if (OutcomeUnknownException.isIn(e)) {
            unknown++;
          } else {
            failed++;
            assertThat(present).as("failed row %s (%s)", id, e.getCause()).doesNotContainKey(id);
          }
        }
      }
      assertThat(acknowledged + failed + unknown).isEqualTo(CALLERS * PER_CALLER);
      assertThat(present.keySet()).allMatch(ids::contains);
      assertThat(acknowledged).as("writing resumed after the restart").isGreaterThan(CALLERS * PER_CALLER / 2);
      assertThat(retries).as("batches retried across the outage").hasPositiveValue();
      System.out.printf("COPY sink, idempotent=%s, PostgreSQL restart (%d ms down): %d callers, %d rows acknowledged"
          + " and present once, %d failed and absent, %d outcome unknown, 0 pending, %d retries%n", idempotent,
          outageMillis, CALLERS, acknowledged, failed, unknown, retries.get());
    } finally {
      postgres.close();
    }
  }
}
