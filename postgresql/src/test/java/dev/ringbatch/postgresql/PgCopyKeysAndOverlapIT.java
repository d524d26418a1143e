package dev.ringbatch.postgresql;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.zaxxer.hikari.HikariDataSource;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.sink.RecordingBatch;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The idempotent COPY sink's answers where keys race, triggers skip or rewrite rows and key columns need quoting, and
 * the overlapping sink's completions under a dependent action that waits and a close behind a slow COPY. One focused
 * test per case; the ones marked "Defect" failed on the code a second review read.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PgCopyKeysAndOverlapIT {
  private static EmbeddedPostgres postgres;
  private static HikariDataSource pool;

  record Event(long id, String payload) {}

  record Keyed(String key, String payload) {}

  @BeforeAll
  static void start() throws Exception {
    postgres = EmbeddedPostgres.builder().start();
    pool = CopyDatabase.pool(postgres.getPort(), "ringbatch-second", 4);
  }

  @AfterAll
  static void stop() throws Exception {
    pool.close();
    postgres.close();
  }

  /**
   * Defect: the idempotent move decides "0: a row with its key is there" with {@code EXISTS (SELECT 1 FROM table
   * t ...)}, which reads the statement's snapshot. A row with the same key that another transaction (another
   * application, or another copier of an OverlappingCopySink) commits after that snapshot was taken, typically
   * while ON CONFLICT waits for it, makes ON CONFLICT skip our row but is invisible to the EXISTS: the row is
   * told SUCCESS_NO_INFO, documented as "neither inserted nor its key present (a BEFORE trigger skipped it)",
   * though its key is in the table.
   */
  @Test
  void idempotent_keyCommittedByAnotherTransactionWhileTheMoveWaits_isToldAlreadyThere() throws Exception {
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS copy_race",
        "CREATE TABLE copy_race (id BIGINT PRIMARY KEY, payload TEXT NOT NULL)");
    try (HikariDataSource own = CopyDatabase.pool(postgres.getPort(), "ringbatch-second-race", 1);
         Connection other = postgres.getPostgresDatabase().getConnection()) {
      other.setAutoCommit(false);
      try (Statement s = other.createStatement()) {
        s.execute("INSERT INTO copy_race VALUES (1, 'theirs')");
      }
      PgCopySink<Event> sink = PgCopySink.<Event>into(own, "copy_race").column("id", Event::id)
          .column("payload", Event::payload).idempotentOn("id").build();
      RecordingBatch<Event, Integer> batch = RecordingBatch.of(new Event(1, "ours"), new Event(2, "two"));
      CompletableFuture<Void> written = CompletableFuture.runAsync(() -> {
        try {
          sink.write(batch);
        } catch (Exception e) {
          throw new CompletionException(e);
        }
      });
      // The move's ON CONFLICT waits for the other transaction's uncommitted row with key 1.
      awaitCondition("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'ringbatch-second-race'"
          + " AND wait_event_type = 'Lock'");
      other.commit();
      written.get(30, TimeUnit.SECONDS);

      assertThat(payloads("copy_race")).containsEntry(1L, "theirs").containsEntry(2L, "two").hasSize(2);
      assertThat(batch.failed()).isEmpty();
      assertThat(batch.completed()).containsEntry(1, 1);
      assertThat(batch.completed().get(0))
          .as("row 0 (key 1): not inserted, and a row with its key IS in the table: result")
          .isZero();
    }
  }

  /**
   * Defect: "1 when its row was inserted". Of two rows with one key, {@code min(ringbatch_row)} over the staged
   * rows with an inserted key is told 1, assuming the first of them was the one inserted. When a BEFORE trigger
   * skips the first (by its payload) and the second is inserted, the skipped row is told 1 ("inserted": its
   * payload is nowhere in the table) and the row actually inserted is told 0 ("its key was already there").
   * Fixed by offering only the first item with a key: no item is ever told 1 for a row it did not insert.
   */
  @Test
  void idempotent_firstOfTwoSameKeyRowsSkippedByATrigger_theRowToldInsertedIsTheOneInTheTable() throws Exception {
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS copy_skip_first",
        "CREATE TABLE copy_skip_first (id BIGINT PRIMARY KEY, payload TEXT NOT NULL)",
        "CREATE OR REPLACE FUNCTION skip_drafts() RETURNS trigger LANGUAGE plpgsql AS $$"
            + " BEGIN IF NEW.payload = 'draft' THEN RETURN NULL; END IF; RETURN NEW; END $$",
        "CREATE TRIGGER skip_drafts BEFORE INSERT ON copy_skip_first FOR EACH ROW EXECUTE FUNCTION skip_drafts()");
    RecordingBatch<Event, Integer> batch = RecordingBatch.of(new Event(1, "draft"), new Event(1, "final"));
    PgCopySink.<Event>into(pool, "copy_skip_first").column("id", Event::id).column("payload", Event::payload)
        .idempotentOn("id").build().write(batch);

    // Only the first item with a key is offered to the table: here a trigger skips it, so nothing is written, and
    // neither item is told 1 (inserted) or 0 (its key is there).
    assertThat(payloads("copy_skip_first")).isEmpty();
    assertThat(batch.failed()).isEmpty();
    assertThat(batch.completed()).containsOnly(Map.entry(0, java.sql.Statement.SUCCESS_NO_INFO),
        Map.entry(1, java.sql.Statement.SUCCESS_NO_INFO));
  }

  /**
   * Defect: a BEFORE trigger that normalises the key (lower-case, trim: common for e-mail addresses or codes)
   * makes RETURNING give back the stored key, which matches no staged key: a row that was inserted is told
   * SUCCESS_NO_INFO ("neither inserted nor its key present"), and a row whose normalised key was already there is
   * told the same instead of 0. Kept as documented: such a row is told SUCCESS_NO_INFO, never 0 nor failed.
   */
  @Test
  void idempotent_triggerNormalisesTheKey_anInsertedRowIsToldInserted() throws Exception {
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS copy_normalised",
        "CREATE TABLE copy_normalised (k TEXT PRIMARY KEY, payload TEXT NOT NULL)",
        "CREATE OR REPLACE FUNCTION lower_key() RETURNS trigger LANGUAGE plpgsql AS $$"
            + " BEGIN NEW.k := lower(NEW.k); RETURN NEW; END $$",
        "CREATE TRIGGER lower_key BEFORE INSERT ON copy_normalised FOR EACH ROW EXECUTE FUNCTION lower_key()");
    RecordingBatch<Keyed, Integer> batch = RecordingBatch.of(new Keyed("Alice@Example.com", "a"));
    PgCopySink.<Keyed>into(pool, "copy_normalised").column("k", Keyed::key).column("payload", Keyed::payload)
        .idempotentOn("k").build().write(batch);

    assertThat(CopyDatabase.queryLong(postgres, "SELECT count(*) FROM copy_normalised")).isOne();
    assertThat(batch.failed()).isEmpty();
    // Documented: a trigger that changes the key hides which row was inserted, so the row is told SUCCESS_NO_INFO
    // (written, no count), never 0 ("its key was there") nor a failure.
    assertThat(batch.completed().get(0)).as("the row was inserted (as alice@example.com): result")
        .isEqualTo(java.sql.Statement.SUCCESS_NO_INFO);
  }

  /**
   * Defect: the idempotent move's key comparison is built with {@code String.format}, the key column's name
   * pasted into the format string. A legal quoted identifier containing {@code %} is read as a conversion:
   * {@code "a%b"} is a {@code %b} conversion with no argument left, so build() throws
   * MissingFormatArgumentException (another name may instead be silently rewritten: {@code "x%sy"} becomes
   * {@code "xiy"}, and every batch fails with "column does not exist").
   */
  @Test
  void idempotent_quotedKeyColumnWithAPercentSign_isWritten() throws Exception {
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS copy_percent",
        "CREATE TABLE copy_percent (\"a%b\" BIGINT PRIMARY KEY, payload TEXT NOT NULL)");
    RecordingBatch<Event, Integer> batch = RecordingBatch.of(new Event(1, "x"), new Event(2, "y"));
    Throwable thrown = catchThrowable(() -> PgCopySink.<Event>into(pool, "copy_percent")
        .column("\"a%b\"", Event::id).column("payload", Event::payload).idempotentOn("\"a%b\"").build()
        .write(batch));

    assertThat(thrown).as("write of two good rows into a table whose key is \"a%%b\"").isNull();
    assertThat(batch.completed()).containsEntry(0, 1).containsEntry(1, 1);
  }

  /**
   * Defect: AsyncBatchSink promises that callers' dependent actions run on the thread completing the stage with
   * the in-flight slot already given back, "so a dependent action may submit, and even submitAndWait". An
   * OverlappingCopySink completes its stage on its own copier thread, and runs the next batch on the same copier
   * pool: with one connection (or N dependent actions at once) the dependent action's submitAndWait waits for a
   * batch queued behind itself, and times out (an untimed submitAndWait hangs for ever).
   */
  @Test
  void overlapping_dependentActionSubmitAndWait_onTheCompletingThread_isWritten() throws Exception {
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS copy_dependent",
        "CREATE TABLE copy_dependent (id BIGINT PRIMARY KEY, payload TEXT NOT NULL)");
    try (HikariDataSource own = CopyDatabase.pool(postgres.getPort(), "ringbatch-second-dependent", 2);
         Connection locker = postgres.getPostgresDatabase().getConnection();
         OverlappingCopySink<Event> sink = PgCopySink.<Event>into(own, "copy_dependent").column("id", Event::id)
             .column("payload", Event::payload).buildOverlapping(1);
         Batcher<Event, Integer> batcher = Batcher.ofAsync("copy-second-dependent",
             BatcherConfig.builder().maxInFlightBatches(1).build(), sink)) {
      locker.setAutoCommit(false);
      try (Statement s = locker.createStatement()) {
        s.execute("LOCK TABLE copy_dependent IN ACCESS EXCLUSIVE MODE"); // holds the first batch in the sink
      }
      CompletableFuture<String> thread = new CompletableFuture<>();
      CompletableFuture<Integer> nested = batcher.submit(new Event(1, "first")).thenApply(r -> {
        thread.complete(Thread.currentThread().getName());
        try {
          return batcher.submitAndWait(new Event(2, "second"), Duration.ofSeconds(5));
        } catch (Exception e) {
          throw new CompletionException(e);
        }
      });
      awaitCondition("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'ringbatch-second-dependent'"
          + " AND wait_event_type = 'Lock'");
      locker.rollback(); // the first batch is written now; its dependent action was registered before

      Throwable failure = catchThrowable(() -> nested.get(30, TimeUnit.SECONDS));
      assertThat(thread.getNow("?")).as("the dependent action ran on a copier thread").startsWith("ringbatch-copy-");
      assertThat(failure).as("submitAndWait from a dependent action on the completing thread").isNull();
      assertThat(nested.join()).isEqualTo(1);
    }
  }

  /**
   * Defect: close() waits 10 s, then {@code shutdownNow()}, which drops the copy tasks still queued (more batches
   * written than copier threads: the batcher's maxInFlightBatches above the connections, or a close while a copy
   * is slow) and throws the list away. The stage write() returned for such a batch never completes: its items'
   * futures never complete, and the batcher's in-flight slot is never given back (every later batch waits for it).
   */
  @Test
  void overlapping_closeWithABatchQueuedBehindASlowCopy_theQueuedBatchStageCompletes() throws Exception {
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS copy_queued",
        "CREATE TABLE copy_queued (id BIGINT PRIMARY KEY, payload TEXT NOT NULL)");
    try (HikariDataSource own = CopyDatabase.pool(postgres.getPort(), "ringbatch-second-queued", 2);
         Connection locker = postgres.getPostgresDatabase().getConnection()) {
      locker.setAutoCommit(false);
      try (Statement s = locker.createStatement()) {
        s.execute("LOCK TABLE copy_queued IN ACCESS EXCLUSIVE MODE");
      }
      OverlappingCopySink<Event> sink = PgCopySink.<Event>into(own, "copy_queued").column("id", Event::id)
          .column("payload", Event::payload).buildOverlapping(1);
      RecordingBatch<Event, Integer> first = RecordingBatch.of(new Event(1, "a"));
      RecordingBatch<Event, Integer> queued = RecordingBatch.of(new Event(2, "b"));
      CompletableFuture<?> firstCopied = sink.write(first).toCompletableFuture();
      CompletableFuture<?> queuedCopied = sink.write(queued).toCompletableFuture();
      awaitCondition("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'ringbatch-second-queued'"
          + " AND wait_event_type = 'Lock'");

      CompletableFuture<Void> closed = CompletableFuture.runAsync(sink::close);
      closed.get(30, TimeUnit.SECONDS); // 10 s, then shutdownNow()
      locker.rollback();
      firstCopied.handle((r, e) -> null).get(30, TimeUnit.SECONDS);

      Throwable stage = catchThrowable(() -> queuedCopied.get(15, TimeUnit.SECONDS));
      assertThat(stage).as("the queued batch's stage, 15 s after the copy before it ended")
          .isNotInstanceOf(java.util.concurrent.TimeoutException.class);
      assertThat(queuedCopied).isDone();
    }
  }

  /**
   * Passes (holds): a server timeout while the COPY waits for a lock (statement_timeout 57014, lock_timeout 55P03
   * after the empty-COPY probe, transaction_timeout FATAL 25P04 ending the session) fails the whole batch by a throw
   * (a retry policy may write it again), nothing written, and the next batch is written on a working connection.
   */
  @org.junit.jupiter.params.ParameterizedTest(name = "{0}, idempotent={1}")
  @org.junit.jupiter.params.provider.CsvSource({"statement_timeout,false", "lock_timeout,false",
      "transaction_timeout,false", "statement_timeout,true", "lock_timeout,true", "transaction_timeout,true"})
  void serverTimeoutWhileTheCopyWaitsForALock_wholeBatchThrown_nothingWritten(String setting, boolean idempotent)
      throws Exception {
    String table = "copy_timeout_" + setting + (idempotent ? "_idem" : "");
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS " + table,
        "CREATE TABLE " + table + " (id BIGINT PRIMARY KEY, payload TEXT NOT NULL)");
    com.zaxxer.hikari.HikariConfig config = new com.zaxxer.hikari.HikariConfig();
    config.setJdbcUrl("jdbc:postgresql://localhost:" + postgres.getPort() + "/postgres?user=postgres"
        + "&ApplicationName=ringbatch-second-timeout&options=-c%20" + setting + "%3D500");
    config.setMaximumPoolSize(1);
    try (HikariDataSource own = new HikariDataSource(config);
         Connection locker = postgres.getPostgresDatabase().getConnection()) {
      PgCopySink.Builder<Event> builder = PgCopySink.<Event>into(own, table).column("id", Event::id)
          .column("payload", Event::payload);
      if (idempotent) {
        builder.idempotentOn("id");
      }
      PgCopySink<Event> sink = builder.build();
      locker.setAutoCommit(false);
      try (Statement s = locker.createStatement()) {
        s.execute("LOCK TABLE " + table + " IN ACCESS EXCLUSIVE MODE");
      }
      RecordingBatch<Event, Integer> batch = RecordingBatch.of(new Event(1, "a"), new Event(2, "b"));
      Throwable thrown = catchThrowable(() -> sink.write(batch));
      locker.rollback();
      System.out.printf("%s idempotent=%s: thrown %s, failed %s%n", setting, idempotent, thrown, batch.failed());

      assertThat(thrown).isInstanceOf(java.sql.SQLException.class);
      assertThat(batch.completed()).isEmpty();
      assertThat(CopyDatabase.queryLong(postgres, "SELECT count(*) FROM " + table)).isZero();
      RecordingBatch<Event, Integer> next = RecordingBatch.of(new Event(3, "c"));
      sink.write(next);
      assertThat(next.completed()).containsEntry(0, 1);
    }
  }

  private static Map<Long, String> payloads(String table) throws Exception {
    Map<Long, String> rows = new HashMap<>();
    try (Connection c = postgres.getPostgresDatabase().getConnection(); Statement s = c.createStatement();
         ResultSet rs = s.executeQuery("SELECT * FROM " + table)) {
      while (rs.next()) {
        rows.put(rs.getLong(1), rs.getString(2));
      }
    }
    return rows;
  }

  private static void awaitCondition(String countSql) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (CopyDatabase.queryLong(postgres, countSql) == 0) {
      assertThat(System.nanoTime()).as("waiting for: %s", countSql).isLessThan(deadline);
      Thread.onSpinWait();
    }
  }
}
