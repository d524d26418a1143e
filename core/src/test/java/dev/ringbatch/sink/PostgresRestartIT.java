package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.RetryPolicy;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The database goes away mid-run and comes back: PostgreSQL is stopped and restarted on the same port and
 * data directory while 32 callers keep submitting. With a retry policy that outlasts the outage, writing
 * resumes, every acknowledged row is in the table exactly once, every failed row is absent, and no future is
 * left pending.
 */
class PostgresRestartIT {
  private static final int CALLERS = 32;
  private static final int PER_CALLER = Integer.getInteger("ringbatch.restart.perCaller", 200);

  @TempDir
  Path dataDirectory;

  record Event(long id) {}

  private EmbeddedPostgres start(int port) throws Exception {
    return EmbeddedPostgres.builder().setDataDirectory(dataDirectory).setCleanDataDirectory(false)
        .setPort(port).setServerConfig("fsync", "on").start();
  }

  @Test
  void restartMidRun_acknowledgedRowsOnceFailedRowsAbsentWritingResumes() throws Exception {
    int port;
    try (ServerSocket socket = new ServerSocket(0)) {
      port = socket.getLocalPort();
    }
    EmbeddedPostgres postgres = start(port);
    String url = postgres.getJdbcUrl("postgres", "postgres") + "&user=postgres";
    try (Connection c = new UrlDataSource(url).getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE events (id BIGINT PRIMARY KEY)");
    }
    List<CompletableFuture<Integer>> futures = new CopyOnWriteArrayList<>();
    List<Long> ids = new CopyOnWriteArrayList<>();
    RetryPolicy retry = RetryPolicy.builder().maxAttempts(100).initialBackoff(Duration.ofMillis(50))
        .maxBackoff(Duration.ofMillis(500)).maxElapsed(Duration.ofSeconds(60)).build();
    long outageMillis;
    java.util.concurrent.atomic.AtomicInteger retries = new java.util.concurrent.atomic.AtomicInteger();
    try (JdbcBatchSink<Event> sink = TextArrays.<Event>sink(new UrlDataSource(url),
            "INSERT INTO events (id) SELECT * FROM unnest(?::bigint[])").column("bigint", Event::id).build();
         Batcher<Event, Integer> batcher = Batcher.of("events",
             BatcherConfig.builder().retryPolicy(retry).submitTimeout(Duration.ofSeconds(60)).build(), sink)) {
      batcher.addStatsRecorder(new dev.ringbatch.stats.StatsRecorder() {
        @Override
        public void recordRetry(int attempt, Throwable cause) {
          retries.incrementAndGet();
        }
      });
      ExecutorService pool = Executors.newFixedThreadPool(CALLERS);
      CountDownLatch halfway = new CountDownLatch(CALLERS);
      CountDownLatch stopped = new CountDownLatch(1);
      List<Future<?>> callers = new ArrayList<>();
      for (int c = 0; c < CALLERS; c++) {
        int caller = c;
        callers.add(pool.submit(() -> {
          for (int i = 0; i < PER_CALLER; i++) {
            long id = caller * 1_000_000L + i;
            ids.add(id);
            CompletableFuture<Integer> f = batcher.submit(new Event(id));
            futures.add(f);
            f.exceptionally(e -> null).join();
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
        f.get(120, TimeUnit.SECONDS);
      }
      pool.shutdown();
    }
    try {
      Set<Long> present = new HashSet<>();
      try (Connection c = new UrlDataSource(url).getConnection(); Statement s = c.createStatement();
           ResultSet rs = s.executeQuery("SELECT id FROM events")) {
        while (rs.next()) {
          assertThat(present.add(rs.getLong(1))).as("row %s present once", rs.getLong(1)).isTrue();
        }
      }
      int acknowledged = 0;
      int failed = 0;
      for (int i = 0; i < futures.size(); i++) {
        CompletableFuture<Integer> f = futures.get(i);
        assertThat(f).as("future %s completed", i).isDone();
        try {
          f.join();
          acknowledged++;
          assertThat(present).as("acknowledged row %s", ids.get(i)).contains(ids.get(i));
        } catch (CompletionException e) {
          failed++;
          assertThat(present).as("failed row %s", ids.get(i)).doesNotContain(ids.get(i));
        }
      }
      assertThat(acknowledged + failed).isEqualTo(CALLERS * PER_CALLER);
      assertThat(present).hasSize(acknowledged);
      assertThat(acknowledged).as("writing resumed after the restart").isGreaterThan(CALLERS * PER_CALLER / 2);
      assertThat(retries).as("batches retried across the outage").hasPositiveValue();
      System.out.printf("PostgreSQL restart (%d ms down): %d callers, %d rows acknowledged and present once,"
          + " %d failed and absent, 0 pending, %d retries%n", outageMillis, CALLERS, acknowledged, failed,
          retries.get());
    } finally {
      postgres.close();
    }
  }
}
