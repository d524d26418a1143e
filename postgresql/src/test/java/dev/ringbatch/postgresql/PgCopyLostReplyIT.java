package dev.ringbatch.postgresql;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.OutcomeUnknownException;
import dev.ringbatch.RetryPolicy;
import dev.ringbatch.sink.RecordingBatch;
import dev.ringbatch.sink.ReplyDroppingProxy;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Timeout;

/**
 * PgCopySink when the connection goes: a reply lost before the copy was finished (nothing written: the batch
 * fails whole, a retry writes it once), the COMMIT's reply lost (outcome unknown; safe to retry in idempotent
 * mode), a backend killed mid-COPY, a pooled connection ended while idle.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PgCopyLostReplyIT {
  /** The COMMIT message itself (its text ends with NUL), not the staging table's "ON COMMIT DELETE ROWS". */
  static final String COMMIT = "COMMIT\u0000";

  private static EmbeddedPostgres postgres;

  record Event(long id, String payload) {}

  @BeforeAll
  static void start() throws Exception {
    postgres = EmbeddedPostgres.builder().start();
  }

  @AfterAll
  static void stop() throws Exception {
    postgres.close();
  }

  private static List<Event> events(int n, String marker) {
    return IntStream.range(0, n).mapToObj(i -> new Event(i, i == n / 2 ? marker : "p" + i)).toList();
  }

  private static PgCopySink<Event> sink(HikariDataSource pool, String table, boolean idempotent) {
    PgCopySink.Builder<Event> b = PgCopySink.<Event>into(pool, table).column("id", Event::id)
        .column("payload", Event::payload);
    return (idempotent ? b.idempotentOn("id") : b).build();
  }

  /** 33 rows (the fewest copied in a transaction) and 500: the reply lost is the COPY's, before its COMMIT. */
  @ParameterizedTest
  @ValueSource(ints = {33, 500})
  void replyLostBeforeTheCommit_nothingWritten_batchFailsWhole_aRetryWritesItOnce(int rows) throws Exception {
    CopyDatabase.table(postgres, "lost_mid_copy", ", PRIMARY KEY (id)");
    try (ReplyDroppingProxy proxy = new ReplyDroppingProxy(postgres.getPort(), "LOSE-HERE", () -> false);
         HikariDataSource pool = CopyDatabase.pool(proxy.port(), "lost-mid-copy", 2)) {
      proxy.dropNext(1); // the server's answer to the copy holding this line never arrives
      RecordingBatch<Event, Integer> batch = RecordingBatch.of(events(rows, "LOSE-HERE"));
      assertThatThrownBy(() -> sink(pool, "lost_mid_copy", false).write(batch)).isInstanceOf(SQLException.class);
      assertThat(proxy.dropped()).isOne();
      assertThat(batch.completed()).isEmpty();
      assertThat(batch.failed()).isEmpty();
      assertThat(CopyDatabase.counts(postgres, "lost_mid_copy")).isEmpty();

      proxy.dropNext(1);
      RetryPolicy retry = RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ofMillis(1)).build();
      // One batch of all the rows (it lingers until full), so that it is copied in a transaction as above
      try (Batcher<Event, Integer> batcher = Batcher.of("lost-mid-copy", BatcherConfig.builder().retryPolicy(retry)
          .maxBatchSize(rows).linger(Duration.ofSeconds(20)).build(), sink(pool, "lost_mid_copy", false))) {
        List<CompletableFuture<Integer>> futures = events(rows, "LOSE-HERE").stream().map(batcher::submit).toList();
        assertThat(futures).allSatisfy(f -> assertThat(f).succeedsWithin(Duration.ofSeconds(30)).isEqualTo(1));
      }
      assertThat(CopyDatabase.counts(postgres, "lost_mid_copy")).hasSize(rows).allSatisfy((id, n) -> assertThat(n).isOne());
    }
  }

  /**
   * The reply lost is the one to what commits the rows: the COMMIT after the COPY of 33 rows (the fewest copied in a
   * transaction) or 300, or the end of the COPY of a small batch (1 to 32 rows), which commits in auto-commit. The
   * server committed them and the sink cannot know it: every row is told outcome unknown (not safe to retry), never
   * failed, never copied again, and is there once.
   */
  @ParameterizedTest
  @ValueSource(ints = {1, 24, PgCopySink.AUTOCOMMIT_ROWS, PgCopySink.AUTOCOMMIT_ROWS + 1, 300})
  void replyToWhatCommitsLost_everyRowToldOutcomeUnknown_notSafeToRetry_rowsThereOnce(int rows) throws Exception {
    CopyDatabase.table(postgres, "lost_commit", ", PRIMARY KEY (id)");
    String committing = rows <= PgCopySink.AUTOCOMMIT_ROWS ? "LOSE-HERE" : COMMIT;
    try (ReplyDroppingProxy proxy = new ReplyDroppingProxy(postgres.getPort(), committing, () -> false);
         HikariDataSource pool = CopyDatabase.pool(proxy.port(), "lost-commit", 2)) {
      proxy.dropNext(1);
      RecordingBatch<Event, Integer> batch = RecordingBatch.of(events(rows, "LOSE-HERE"));
      sink(pool, "lost_commit", false).write(batch);

      assertThat(proxy.dropped()).isOne();
      assertThat(batch.completed()).isEmpty();
      assertThat(batch.failed()).hasSize(rows).allSatisfy((i, e) -> {
        assertThat(e).isInstanceOf(OutcomeUnknownException.class);
        assertThat(((OutcomeUnknownException) e).isSafeToRetry()).isFalse();
      });
      // The proxy let it through: the rows are there, once each, whatever the callers heard.
      assertThat(CopyDatabase.counts(postgres, "lost_commit")).hasSize(rows)
          .allSatisfy((id, n) -> assertThat(n).isOne());
    }
  }

  @Test
  void commitReplyLostAfterRefusedRows_theRefusedFail_theRestAreOutcomeUnknown_andThereOnce() throws Exception {
    CopyDatabase.table(postgres, "lost_commit_salvage", ", CHECK (payload <> 'bad')");
    try (ReplyDroppingProxy proxy = new ReplyDroppingProxy(postgres.getPort(), COMMIT, () -> false);
         HikariDataSource pool = CopyDatabase.pool(proxy.port(), "lost-commit-salvage", 2)) {
      proxy.dropNext(1);
      List<Event> items = IntStream.range(0, 200).mapToObj(i -> new Event(i, i % 50 == 7 ? "bad" : "p" + i)).toList();
      RecordingBatch<Event, Integer> batch = RecordingBatch.of(items);
      sink(pool, "lost_commit_salvage", false).write(batch);

      assertThat(proxy.dropped()).isOne();
      assertThat(batch.completed()).isEmpty();
      assertThat(batch.failed()).hasSize(200).allSatisfy((i, e) -> {
        if (i % 50 == 7) {
          assertThat(((SQLException) e).getSQLState()).as("refused row %s", i).isEqualTo("23514");
        } else {
          assertThat(e).as("row %s", i).isInstanceOf(OutcomeUnknownException.class);
        }
      });
      // The one COMMIT went through: every good row is there once, no bad row is.
      assertThat(CopyDatabase.counts(postgres, "lost_commit_salvage")).hasSize(196)
          .allSatisfy((id, n) -> assertThat(n).isOne()).allSatisfy((id, n) -> assertThat(id % 50).isNotEqualTo(7));
    }
  }

  @Test
  void idempotent_commitReplyLost_thrownSafeToRetry_theRetryTellsEveryRowAlreadyThere() throws Exception {
    CopyDatabase.table(postgres, "lost_commit_idem", ", PRIMARY KEY (id)");
    try (ReplyDroppingProxy proxy = new ReplyDroppingProxy(postgres.getPort(), COMMIT, () -> false);
         HikariDataSource pool = CopyDatabase.pool(proxy.port(), "lost-commit-idem", 2)) {
      PgCopySink<Event> sink = sink(pool, "lost_commit_idem", true);
      proxy.dropNext(1);
      RecordingBatch<Event, Integer> batch = RecordingBatch.of(events(300, "x"));
      assertThatThrownBy(() -> sink.write(batch)).isInstanceOf(OutcomeUnknownException.class)
          .satisfies(e -> assertThat(((OutcomeUnknownException) e).isSafeToRetry()).isTrue());
      assertThat(batch.completed()).isEmpty();

      proxy.dropNext(1); // through a batcher with a retry policy: the second attempt hears the answer
      RetryPolicy retry = RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ofMillis(1)).build();
      try (Batcher<Event, Integer> batcher = Batcher.of("lost-commit-idem",
          BatcherConfig.builder().retryPolicy(retry).build(), sink)) {
        List<CompletableFuture<Integer>> futures = IntStream.range(0, 600)
            .mapToObj(i -> batcher.submit(new Event(i, "p" + i))).toList();
        assertThat(futures).allSatisfy(f -> assertThat(f).succeedsWithin(Duration.ofSeconds(30)).isIn(0, 1));
        assertThat(futures.subList(0, 300)).allSatisfy(f -> assertThat(f.join()).isZero()); // the first batch's
      }
      assertThat(CopyDatabase.counts(postgres, "lost_commit_idem")).hasSize(600)
          .allSatisfy((id, n) -> assertThat(n).isOne());
    }
  }

  /**
   * CI's PgCopyChaosIT: the first attempt's COMMIT reply is lost (the rows are in), and the retry cannot get a
   * connection. The retry wrote nothing, but the first attempt did: the caller is told "outcome unknown", never a
   * plain failure for a row that is in the table.
   */
  @Test
  void idempotent_commitReplyLost_thenTheRetryFailsWithoutWriting_toldOutcomeUnknown_rowThereOnce()
      throws Exception {
    CopyDatabase.table(postgres, "lost_commit_idem_refused", ", PRIMARY KEY (id)");
    try (ReplyDroppingProxy proxy = new ReplyDroppingProxy(postgres.getPort(), COMMIT, () -> false);
         HikariDataSource pool = CopyDatabase.pool(proxy.port(), "lost-commit-idem-refused", 2)) {
      // The proxy counts the drop before it cuts the connection, so the retry always finds the database gone.
      DataSource goneAfterTheLoss = (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(),
          new Class<?>[] {DataSource.class}, (p, method, args) -> {
            if (method.getName().equals("getConnection") && proxy.dropped() > 0) {
              throw new SQLException("connection refused", "08001");
            }
            try {
              return method.invoke(pool, args);
            } catch (InvocationTargetException e) {
              throw e.getCause();
            }
          });
      PgCopySink<Event> sink = PgCopySink.<Event>into(goneAfterTheLoss, "lost_commit_idem_refused")
          .column("id", Event::id).column("payload", Event::payload).idempotentOn("id").build();
      proxy.dropNext(1);
      RetryPolicy retry = RetryPolicy.builder().maxAttempts(2).initialBackoff(Duration.ofMillis(1)).build();
      CompletableFuture<Integer> future;
      try (Batcher<Event, Integer> batcher = Batcher.of("lost-commit-idem-refused",
          BatcherConfig.builder().retryPolicy(retry).build(), sink)) {
        future = batcher.submit(new Event(7, "p7"));
        assertThat(future).failsWithin(Duration.ofSeconds(30)).withThrowableOfType(ExecutionException.class)
            .satisfies(e -> assertThat(OutcomeUnknownException.isIn(e.getCause())).as("%s", e.getCause()).isTrue());
      }
      assertThat(proxy.dropped()).isOne();
      assertThat(CopyDatabase.counts(postgres, "lost_commit_idem_refused")).containsExactly(Map.entry(7L, 1));
    }
  }

  @Test
  void backendKilledMidCopy_nothingWritten_writeThrows() throws Exception {
    CopyDatabase.table(postgres, "killed_mid_copy", "");
    CopyDatabase.exec(postgres, "CREATE OR REPLACE FUNCTION slow_row() RETURNS trigger LANGUAGE plpgsql AS $$"
            + " BEGIN IF NEW.payload = 'slow' THEN PERFORM pg_sleep(60); END IF; RETURN NEW; END $$",
        "CREATE TRIGGER slow_row BEFORE INSERT ON killed_mid_copy FOR EACH ROW EXECUTE FUNCTION slow_row()");
    try (HikariDataSource pool = CopyDatabase.pool(postgres.getPort(), "killed-mid-copy", 2)) {
      PgCopySink<Event> sink = sink(pool, "killed_mid_copy", false);
      RecordingBatch<Event, Integer> batch = RecordingBatch.of(events(400, "slow"));
      CompletableFuture<Throwable> written = CompletableFuture.supplyAsync(() -> {
        try {
          sink.write(batch);
          return null;
        } catch (Throwable e) {
          return e;
        }
      });
      // Waits (polling the server, not sleeping) until the COPY sits in the slow row, then kills it there.
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (CopyDatabase.queryLong(postgres, "SELECT count(*) FROM pg_stat_activity WHERE application_name ="
          + " 'killed-mid-copy' AND wait_event = 'PgSleep'") == 0) {
        assertThat(System.nanoTime()).as("the COPY reached the slow row").isLessThan(deadline);
        Thread.onSpinWait();
      }
      assertThat(CopyDatabase.queryLong(postgres, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
          + " WHERE application_name = 'killed-mid-copy' AND wait_event = 'PgSleep'")).isOne();

      assertThat(written).succeedsWithin(Duration.ofSeconds(30)).isInstanceOf(SQLException.class);
      assertThat(batch.completed()).isEmpty();
      assertThat(batch.failed()).isEmpty();
      assertThat(CopyDatabase.counts(postgres, "killed_mid_copy")).isEmpty();
    }
  }

  /**
   * A wrapper of the connection (tracing, metrics) whose commit() passes the COMMIT on and then throws: not the
   * server's refusal, so the rows may be committed (here they are). They are neither copied again (with the key:
   * every caller told "duplicate key" for its own row; without it, every row twice) nor told failed: unknown. 33
   * rows (the fewest copied in a transaction) and 300.
   */
  @ParameterizedTest
  @ValueSource(ints = {33, 300})
  void commitThrowingAfterTheServerCommitted_rowsAreToldUnknown_notWrittenAgain(int rows) throws Exception {
    CopyDatabase.table(postgres, "commit_hook", ", PRIMARY KEY (id)");
    try (HikariDataSource pool = CopyDatabase.pool(postgres.getPort(), "commit-hook", 2)) {
      java.util.concurrent.atomic.AtomicBoolean armed = new java.util.concurrent.atomic.AtomicBoolean(true);
      DataSource traced = (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(),
          new Class<?>[] {DataSource.class}, (p, method, args) -> {
            Object result = invoke(pool, method, args);
            if (!(result instanceof java.sql.Connection c)) {
              return result;
            }
            return Proxy.newProxyInstance(java.sql.Connection.class.getClassLoader(),
                new Class<?>[] {java.sql.Connection.class}, (p2, m2, a2) -> {
                  Object r2 = invoke(c, m2, a2);
                  if (m2.getName().equals("commit") && armed.getAndSet(false)) {
                    throw new IllegalStateException("a tracing listener failed after the commit");
                  }
                  return r2;
                });
          });
      PgCopySink<Event> sink = PgCopySink.<Event>into(traced, "commit_hook").column("id", Event::id)
          .column("payload", Event::payload).build();
      RecordingBatch<Event, Integer> batch = RecordingBatch.of(events(rows, "x"));

      sink.write(batch);

      assertThat(armed.get()).as("the wrapper threw after the commit").isFalse();
      assertThat(CopyDatabase.counts(postgres, "commit_hook")).hasSize(rows)
          .allSatisfy((id, n) -> assertThat(n).isOne());
      assertThat(batch.failed()).hasSize(rows).allSatisfy((i, e) -> assertThat(e)
          .isInstanceOf(OutcomeUnknownException.class));
    }
  }

  private static Object invoke(Object target, java.lang.reflect.Method method, Object[] args) throws Throwable {
    try {
      return method.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  @Test
  void pooledConnectionEndedWhileIdle_theNextBatchIsWrittenOnAFreshOne() throws Exception {
    CopyDatabase.table(postgres, "ended_idle", "");
    try (HikariDataSource pool = CopyDatabase.pool(postgres.getPort(), "ended-idle", 1)) {
      PgCopySink<Event> sink = sink(pool, "ended_idle", false);
      RecordingBatch<Event, Integer> first = RecordingBatch.of(new Event(1, "a"));
      sink.write(first);
      assertThat(first.completed()).containsEntry(0, 1);
      assertThat(CopyDatabase.queryLong(postgres, "SELECT count(pg_terminate_backend(pid, 10000)) FROM"
          + " pg_stat_activity WHERE application_name = 'ended-idle'")).isOne();

      RecordingBatch<Event, Integer> second = RecordingBatch.of(new Event(2, "b"), new Event(3, "c"));
      sink.write(second); // within HikariCP's 500 ms validation bypass: the pool hands out the dead connection
      assertThat(second.failed()).isEmpty();
      assertThat(second.completed()).containsEntry(0, 1).containsEntry(1, 1);
      assertThat(CopyDatabase.counts(postgres, "ended_idle")).containsOnlyKeys(1L, 2L, 3L);
    }
  }
}
