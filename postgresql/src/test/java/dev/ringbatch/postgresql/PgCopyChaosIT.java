package dev.ringbatch.postgresql;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.BatcherStats;
import dev.ringbatch.OutcomeUnknownException;
import dev.ringbatch.RetryPolicy;
import dev.ringbatch.sink.ReplyDroppingProxy;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.sql.SQLException;
import java.time.Duration;
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
 * PgCopySink and OverlappingCopySink under chaos on PostgreSQL 18: about 2% of COMMIT replies lost by a proxy,
 * backends killed every 20-80 ms, about 1% of rows refused by a CHECK constraint, a retry policy on (the sync
 * batcher). After each run every caller's answer is checked against the table: told written => there once; told
 * failed (not outcome unknown) => absent; every bad row failed; no row twice; every future completed; the
 * batcher's counts match. {@code -Dringbatch.copy.chaos.rows=100000} for a longer run.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class PgCopyChaosIT {
  private static final int ROWS = Integer.getInteger("ringbatch.copy.chaos.rows", 10_000);
  private static final int CALLERS = 16;
  private static final String APPLICATION = "ringbatch-copy-chaos";

  private static EmbeddedPostgres postgres;

  record Event(long id, String payload) {}

  @BeforeAll
  static void startPostgres() throws Exception {
    postgres = EmbeddedPostgres.builder().start();
  }

  @AfterAll
  static void stopPostgres() throws Exception {
    postgres.close();
  }

  /** About 1% of the rows violate the CHECK constraint. */
  private static boolean bad(long id) {
    return id % 97 == 13;
  }

  @ParameterizedTest(name = "idempotent={0}, overlapping={1}")
  @CsvSource({"false, false", "true, false", "false, true", "true, true"})
  void lostCommitRepliesKilledBackendsBadRows_everyAnswerMatchesTheTable(boolean idempotent, boolean overlapping)
      throws Exception {
    String table = "copy_chaos" + (idempotent ? "_idem" : "") + (overlapping ? "_overlap" : "");
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS " + table,
        "CREATE TABLE " + table + " (id BIGINT NOT NULL" + (idempotent ? " PRIMARY KEY" : "") // no key: a duplicate shows
            + ", payload TEXT NOT NULL, CHECK (payload <> 'bad'))");
    Map<Long, CompletableFuture<Integer>> futures = new ConcurrentHashMap<>();
    AtomicInteger kills = new AtomicInteger();
    int dropped;
    BatcherStats stats;
    long started = System.nanoTime();
    // "COMMIT" and its terminating NUL: the COMMIT message itself, not a staging table's "ON COMMIT DELETE ROWS".
    try (ReplyDroppingProxy proxy = new ReplyDroppingProxy(postgres.getPort(), "COMMIT\0",
            () -> ThreadLocalRandom.current().nextInt(100) < 2);
         HikariDataSource pool = CopyDatabase.pool(proxy.port(), APPLICATION, 4)) {
      PgCopySink.Builder<Event> builder = PgCopySink.<Event>into(pool, table).column("id", Event::id)
          .column("payload", Event::payload);
      if (idempotent) {
        builder.idempotentOn("id");
      }
      AtomicBoolean running = new AtomicBoolean(true);
      Thread killer = new Thread(() -> {
        while (running.get()) {
          LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20 + ThreadLocalRandom.current().nextInt(60)));
          try {
            kills.addAndGet((int) CopyDatabase.queryLong(postgres,
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                    + " WHERE application_name = '" + APPLICATION + "'"));
          } catch (SQLException e) {
            throw new IllegalStateException(e);
          }
        }
      }, "backend-killer"); // load generation, paced by a random park: it synchronises nothing
      OverlappingCopySink<Event> overlappingSink = overlapping ? builder.buildOverlapping(2) : null;
      PgCopySink<Event> syncSink = overlapping ? null : builder.build();
      try (Batcher<Event, Integer> batcher = overlapping
          ? Batcher.ofAsync("copy-chaos", BatcherConfig.builder().maxInFlightBatches(2).build(), overlappingSink)
          : Batcher.of("copy-chaos", BatcherConfig.builder().retryPolicy(RetryPolicy.builder().maxAttempts(6)
              .initialBackoff(Duration.ofMillis(5)).maxBackoff(Duration.ofMillis(50)).build()).build(), syncSink)) {
        killer.start();
        ExecutorService callers = Executors.newFixedThreadPool(CALLERS);
        Future<?>[] done = new Future<?>[CALLERS];
        for (int c = 0; c < CALLERS; c++) {
          int caller = c;
          done[c] = callers.submit(() -> {
            for (long id = caller; id < ROWS; id += CALLERS) {
              CompletableFuture<Integer> f = batcher.submit(new Event(id, bad(id) ? "bad" : "p" + id));
              futures.put(id, f);
              // A closed loop: each caller waits for its answer; a lost future shows as a timeout here.
              f.exceptionally(e -> null).get(60, TimeUnit.SECONDS);
            }
            return null;
          });
        }
        for (Future<?> f : done) {
          f.get(150, TimeUnit.SECONDS);
        }
        callers.shutdown();
        stats = batcher.stats();
      } finally {
        running.set(false);
        killer.join(10_000);
        if (overlappingSink != null) {
          overlappingSink.close();
        }
        if (syncSink != null) {
          syncSink.close();
        }
      }
      dropped = proxy.dropped();
    }
    long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started);

    Map<Long, Integer> present = CopyDatabase.counts(postgres, table);
    int written = 0;
    int failed = 0;
    int unknown = 0;
    assertThat(futures).hasSize(ROWS);
    for (Map.Entry<Long, CompletableFuture<Integer>> e : futures.entrySet()) {
      long id = e.getKey();
      CompletableFuture<Integer> f = e.getValue();
      assertThat(f).as("future of row %s completed", id).isDone();
      int copies = present.getOrDefault(id, 0);
      assertThat(copies).as("copies of row %s", id).isLessThanOrEqualTo(1);
      try {
        Integer result = f.join();
        written++;
        assertThat(bad(id)).as("bad row %s told written (%s)", id, result).isFalse();
        assertThat(copies).as("row %s told written (%s)", id, result).isEqualTo(1);
        assertThat(result).as("row %s's result", id).isIn(idempotent ? new Integer[] {0, 1} : new Integer[] {1});
      } catch (CompletionException failure) {
        if (OutcomeUnknownException.isIn(failure)) {
          unknown++;
          // A bad row is never in a committed COPY, so it is never outcome unknown.
          assertThat(bad(id)).as("bad row %s told outcome unknown", id).isFalse();
        } else {
          failed++;
          assertThat(copies).as("row %s told failed (%s)", id, failure.getCause()).isZero();
        }
      }
    }
    assertThat(present.keySet()).allMatch(futures::containsKey);
    System.out.printf("copy chaos idempotent=%s overlapping=%s: %d rows, %d written, %d failed, %d unknown,"
        + " %d replies lost, %d backends killed, 0 duplicates, %d s%n", idempotent, overlapping, ROWS, written,
        failed, unknown, dropped, kills.get(), seconds);
    assertThat(stats.written()).as("written, as the batcher counts them").isEqualTo(written);
    assertThat(stats.failed()).as("failed and outcome unknown, as the batcher counts them").isEqualTo(failed + unknown);
    assertThat(dropped + kills.get()).as("chaos happened").isPositive();
    assertThat(written).as("most rows written despite the chaos").isGreaterThan(ROWS / 2);
  }
}
