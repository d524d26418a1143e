package dev.ringbatch.postgresql;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.zaxxer.hikari.HikariDataSource;
import dev.ringbatch.OutcomeUnknownException;
import dev.ringbatch.sink.RecordingBatch;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Each row's answer from PgCopySink and OverlappingCopySink matches the table: a refused row fails alone in a large
 * batch, a row skipped by a trigger or a widened column is told what happened to it, odd value types are stored as
 * PostgreSQL reads them, and an answer lost with a commit reply is outcome unknown only where it is unknown. One
 * focused test per case a review found; each failed on the code it reviewed.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PgCopyRowAnswersIT {
  private static EmbeddedPostgres postgres;
  private static HikariDataSource pool;

  record Event(long id, String payload) {}

  @BeforeAll
  static void start() throws Exception {
    postgres = EmbeddedPostgres.builder().start();
    pool = CopyDatabase.pool(postgres.getPort(), "ringbatch-review", 4);
  }

  @AfterAll
  static void stop() throws Exception {
    pool.close();
    postgres.close();
  }

  static List<Event> events(int n) {
    return IntStream.range(0, n).mapToObj(i -> new Event(i, "p" + i)).toList();
  }

  /**
   * Defect: the server's "line N" is trusted even for an error raised while COPY flushes its multi-insert
   * buffer (heap_multi_insert: "row is too big", SQLState 54000). PostgreSQL then reports the line last
   * <em>read</em> (the 1000th buffered line, context "COPY t, line 1000" without the row's text), not the row at
   * fault. The sink fails that innocent row with the error, copies the rest again, and the next innocent row at
   * line 1000 fails, and so on: hundreds of good rows fail with "row is too big", one COPY each. (With fewer than
   * 1000 rows the server names line n + 1, out of range, and halving finds the right row.)
   */
  @Test
  void rowTooBigForAPage_inABatchOver1000Rows_onlyThatRowFails() throws Exception {
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS copy_too_big",
        "CREATE TABLE copy_too_big (id BIGINT NOT NULL, payload TEXT NOT NULL)",
        "ALTER TABLE copy_too_big ALTER COLUMN payload SET STORAGE PLAIN"); // never toasted: 9 kB does not fit
    List<Event> items = new ArrayList<>(events(1_200));
    items.set(3, new Event(3, "x".repeat(9_000)));
    RecordingBatch<Event, Integer> batch = RecordingBatch.of(items);
    PgCopySink.<Event>into(pool, "copy_too_big").column("id", Event::id).column("payload", Event::payload).build()
        .write(batch);

    assertThat(batch.failed()).as("rows told failed (only row 3 is too big): %s rows", batch.failed().size())
        .containsOnlyKeys(3);
    assertThat(batch.completed()).hasSize(1_199);
    assertThat(CopyDatabase.counts(postgres, "copy_too_big")).hasSize(1_199);
  }

  /**
   * Passes: a unique violation found while COPY flushes its multi-insert buffer (index insertion) is named by the
   * right line, unlike a heap error in the same flush (see above): only the duplicates fail, in k + 1 COPYs.
   */
  @Test
  void uniqueViolationsInABatchOver1000Rows_onlyTheDuplicatesFail() throws Exception {
    CopyDatabase.table(postgres, "copy_unique_big", ", UNIQUE (id)");
    CopyDatabase.exec(postgres, "INSERT INTO copy_unique_big VALUES (1500, 'already')");
    List<Event> items = new ArrayList<>(events(2_000));
    items.set(1_800, new Event(5, "again")); // the same id as row 5
    long before = CopyDatabase.copies(postgres);
    RecordingBatch<Event, Integer> batch = RecordingBatch.of(items);
    PgCopySink.<Event>into(pool, "copy_unique_big").column("id", Event::id).column("payload", Event::payload).build()
        .write(batch);
    assertThat(batch.failed()).containsOnlyKeys(1_500, 1_800);
    assertThat(CopyDatabase.counts(postgres, "copy_unique_big")).hasSize(1_999)
        .allSatisfy((id, n) -> assertThat(n).isOne());
    assertThat(CopyDatabase.copies(postgres) - before).isBetween(2L, 5L); // at most 2k + 1
  }

  /**
   * Defect: the idempotent staging table is created once per session ({@code CREATE TEMP TABLE IF NOT EXISTS ...
   * AS SELECT ... FROM table WITH NO DATA}) and kept, with the target's column types of that moment, for the life
   * of the pooled connection. After {@code ALTER TABLE} widens a column, a row the table accepts is refused by the
   * stale staging table and told failed ("value too long for type character varying(5)"); a narrowed numeric
   * scale would silently round the values written instead.
   */
  @Test
  void idempotent_targetColumnWidenedAfterFirstBatch_aRowTheTableAcceptsIsWritten() throws Exception {
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS copy_altered",
        "CREATE TABLE copy_altered (id BIGINT PRIMARY KEY, payload VARCHAR(5) NOT NULL)");
    try (HikariDataSource single = CopyDatabase.pool(postgres.getPort(), "ringbatch-review-altered", 1)) {
      PgCopySink<Event> sink = PgCopySink.<Event>into(single, "copy_altered").column("id", Event::id)
          .column("payload", Event::payload).idempotentOn("id").build();
      RecordingBatch<Event, Integer> first = RecordingBatch.of(new Event(1, "short"));
      sink.write(first);
      assertThat(first.completed()).containsEntry(0, 1);

      CopyDatabase.exec(postgres, "ALTER TABLE copy_altered ALTER COLUMN payload TYPE TEXT");
      RecordingBatch<Event, Integer> second = RecordingBatch.of(new Event(2, "longer than five"));
      sink.write(second);

      assertThat(second.failed()).as("failures after the table was widened").isEmpty();
      assertThat(second.completed()).containsEntry(0, 1);
      assertThat(CopyDatabase.counts(postgres, "copy_altered")).containsOnlyKeys(1L, 2L);
    }
  }

  /**
   * Defect: in idempotent mode a row is told 0, documented as "a row with its key was already there", whenever
   * the move did not return its key, so a row a {@code BEFORE} trigger skipped (returned NULL) is told 0 though
   * no row with its key is in the table: told written, missing. (Plain mode says SUCCESS_NO_INFO instead.)
   */
  @Test
  void idempotent_rowSkippedByABeforeTrigger_isNotToldAlreadyThere() throws Exception {
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS copy_skipping",
        "CREATE TABLE copy_skipping (id BIGINT PRIMARY KEY, payload TEXT NOT NULL)",
        "CREATE OR REPLACE FUNCTION skip_some() RETURNS trigger LANGUAGE plpgsql AS $$"
            + " BEGIN IF NEW.payload = 'skip' THEN RETURN NULL; END IF; RETURN NEW; END $$",
        "CREATE TRIGGER skip_some BEFORE INSERT ON copy_skipping FOR EACH ROW EXECUTE FUNCTION skip_some()");
    PgCopySink<Event> sink = PgCopySink.<Event>into(pool, "copy_skipping").column("id", Event::id)
        .column("payload", Event::payload).idempotentOn("id").build();
    RecordingBatch<Event, Integer> batch = RecordingBatch.of(new Event(1, "a"), new Event(2, "skip"),
        new Event(3, "c"));
    sink.write(batch);

    Map<Long, Integer> present = CopyDatabase.counts(postgres, "copy_skipping");
    assertThat(present).containsOnlyKeys(1L, 3L);
    assertThat(batch.completed()).containsEntry(0, 1).containsEntry(2, 1);
    batch.completed().forEach((index, result) -> {
      if (result == 0) {
        assertThat(present).as("row %s told 0, 'a row with its key was already there'", index)
            .containsKey(batch.item(index).id());
      }
    });
  }

  /**
   * Defect: when the server refuses a row (23514) and the connection is lost before its ReadyForQuery, pgjdbc
   * throws the row's refusal with the I/O error chained as its next exception. connectionLost() sees the chain,
   * and lostBeforeCommit() then throws that exception, the <em>row's</em> refusal, for the whole batch: every
   * good row of it fails (in an async sink, or when the retry policy does not retry a 23514, as it should not)
   * with "violates check constraint", an error of another row that says "do not retry". The exception thrown for
   * a lost connection should be the connection failure (08xxx), the row's refusal at most a cause or suppressed.
   */
  @ParameterizedTest(name = "idempotent={0}")
  @ValueSource(booleans = {true, false})
  void connectionLostJustAfterARowIsRefused_theBatchIsNotFailedWithThatRowsError(boolean idempotent)
      throws Exception {
    String table = "copy_blame" + (idempotent ? "_idem" : "");
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS " + table,
        "CREATE TABLE " + table + " (id BIGINT PRIMARY KEY, payload TEXT NOT NULL, CHECK (payload <> 'bad'))");
    // The idempotent move refuses the row (the staging table has no CHECK); plain COPY refuses its line.
    String trigger = idempotent ? "ON CONFLICT" : "\tbad\n";
    try (CutAfterErrorProxy proxy = new CutAfterErrorProxy(postgres.getPort(), trigger);
         HikariDataSource viaProxy = CopyDatabase.pool(proxy.port(), "ringbatch-review-blame", 1)) {
      PgCopySink.Builder<Event> builder = PgCopySink.<Event>into(viaProxy, table).column("id", Event::id)
          .column("payload", Event::payload);
      if (idempotent) {
        builder.idempotentOn("id");
      }
      // Past a small batch, which is copied in auto-commit (the test below): copied in a transaction
      List<Event> items = new ArrayList<>(events(PgCopySink.AUTOCOMMIT_ROWS + 8));
      items.set(4, new Event(4, "bad"));
      RecordingBatch<Event, Integer> batch = RecordingBatch.of(items);
      Throwable thrown = catchThrowable(() -> builder.build().write(batch));

      assertThat(proxy.cuts()).as("the proxy cut the connection after the server's error").isOne();
      assertThat(CopyDatabase.counts(postgres, table)).isEmpty();
      assertThat(thrown).as("nothing committed: the whole batch fails, for a retry").isInstanceOf(SQLException.class);
      assertThat(((SQLException) thrown).getSQLState())
          .as("SQLState of the exception every row of the batch fails with: %s", thrown)
          .startsWith("08");
    }
  }

  /**
   * A small batch's COPY commits on its own, and the server sends its CommandComplete after the commit: an error that
   * follows it (a cancel the server catches on its way out, after logging the statement's duration, say) must not
   * make the committed rows failed, thrown for a retry that would write them twice. They are told written, once.
   */
  @Test
  void errorAfterASmallBatchsCopyCompleted_theRowsAreToldWritten_andThereOnce() throws Exception {
    String table = "copy_error_after";
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS " + table,
        "CREATE TABLE " + table + " (id BIGINT PRIMARY KEY, payload TEXT NOT NULL)");
    try (CutAfterErrorProxy proxy = new CutAfterErrorProxy(postgres.getPort(), "\tmark\n", true);
         HikariDataSource viaProxy = CopyDatabase.pool(proxy.port(), "ringbatch-review-error-after", 1)) {
      List<Event> items = new ArrayList<>(events(10));
      items.set(3, new Event(3, "mark"));
      RecordingBatch<Event, Integer> batch = RecordingBatch.of(items);
      Throwable thrown = catchThrowable(() -> PgCopySink.<Event>into(viaProxy, table).column("id", Event::id)
          .column("payload", Event::payload).build().write(batch));

      assertThat(proxy.cuts()).as("the proxy added its error after the COPY's CommandComplete").isOne();
      assertThat(thrown).isNull();
      assertThat(batch.failed()).isEmpty();
      assertThat(batch.completed()).hasSize(10).allSatisfy((i, result) -> assertThat(result).isOne());
      assertThat(CopyDatabase.counts(postgres, table)).hasSize(10).allSatisfy((id, n) -> assertThat(n).isOne());
    }
  }

  /**
   * The same cut after a small batch's row is refused: its COPY, in auto-commit, was ended, and pgjdbc reports the
   * end's failure as the lost connection alone, without the server's refusal, so the sink cannot tell that nothing
   * was committed. No row is told written or failed with the refused row's error: each is told outcome unknown, or
   * the batch fails whole with the connection's error; nothing is in the table.
   */
  @Test
  void connectionLostJustAfterASmallBatchsRowIsRefused_noRowToldWrittenOrFailedWithThatRowsError() throws Exception {
    String table = "copy_blame_small";
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS " + table,
        "CREATE TABLE " + table + " (id BIGINT PRIMARY KEY, payload TEXT NOT NULL, CHECK (payload <> 'bad'))");
    try (CutAfterErrorProxy proxy = new CutAfterErrorProxy(postgres.getPort(), "\tbad\n");
         HikariDataSource viaProxy = CopyDatabase.pool(proxy.port(), "ringbatch-review-blame-small", 1)) {
      List<Event> items = new ArrayList<>(events(10));
      items.set(4, new Event(4, "bad"));
      RecordingBatch<Event, Integer> batch = RecordingBatch.of(items);
      Throwable thrown = catchThrowable(() -> PgCopySink.<Event>into(viaProxy, table).column("id", Event::id)
          .column("payload", Event::payload).build().write(batch));

      assertThat(proxy.cuts()).as("the proxy cut the connection after the server's error").isOne();
      assertThat(CopyDatabase.counts(postgres, table)).isEmpty();
      assertThat(batch.completed()).isEmpty();
      if (thrown != null) {
        assertThat(((SQLException) thrown).getSQLState()).as("the whole batch's error: %s", thrown).startsWith("08");
        assertThat(batch.failed()).isEmpty();
      } else {
        assertThat(batch.failed()).hasSize(10)
            .allSatisfy((i, e) -> assertThat(e).isInstanceOf(OutcomeUnknownException.class));
      }
    }
  }

  /**
   * Defect: OverlappingCopySink.close() promises to wait "up to 10 seconds" for copies in progress, but then
   * closes every PgCopySink, and BatchConnection (not thread-safe) gives the pooled connection back from the
   * closing thread while the copier thread is still using it. In plain mode (as far as can be seen from outside)
   * HikariCP does not know that the COPY, sent through unwrap(PGConnection), dirtied the transaction, so on return
   * it only resets auto-commit, and pgjdbc's setAutoCommit(true) issues a COMMIT that waits on the driver lock
   * the copy holds. So close() hangs for as long as the copy does, and the pool's reset may commit the copy's
   * transaction from the closing thread, racing the copier's own COMMIT. (In idempotent mode the pool cancels
   * the running statement instead, and close() returns.)
   */
  @ParameterizedTest(name = "idempotent={0}")
  @ValueSource(booleans = {false, true})
  void overlappingSinkClose_whileACopyIsBlocked_returnsWithinItsTimeout(boolean idempotent) throws Exception {
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS copy_closing",
        "CREATE TABLE copy_closing (id BIGINT PRIMARY KEY, payload TEXT NOT NULL)");
    try (HikariDataSource own = CopyDatabase.pool(postgres.getPort(), "ringbatch-review-closing", 2);
         Connection locker = postgres.getPostgresDatabase().getConnection()) {
      locker.setAutoCommit(false);
      try (Statement s = locker.createStatement()) {
        s.execute("LOCK TABLE copy_closing IN ACCESS EXCLUSIVE MODE"); // the COPY waits for this transaction
      }
      PgCopySink.Builder<Event> builder = PgCopySink.<Event>into(own, "copy_closing").column("id", Event::id)
          .column("payload", Event::payload);
      if (idempotent) {
        builder.idempotentOn("id");
      }
      OverlappingCopySink<Event> sink = builder.buildOverlapping(1);
      RecordingBatch<Event, Integer> batch = RecordingBatch.of(events(5));
      CompletableFuture<?> copied = sink.write(batch).toCompletableFuture();
      awaitCondition("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'ringbatch-review-closing'"
          + " AND wait_event_type = 'Lock'");

      CompletableFuture<Void> closed = CompletableFuture.runAsync(sink::close);
      Throwable timedOut = catchThrowable(() -> closed.get(20, TimeUnit.SECONDS));
      locker.rollback(); // the COPY goes on: whatever close() did, the copy ends now
      copied.handle((r, e) -> null).get(30, TimeUnit.SECONDS);
      closed.get(30, TimeUnit.SECONDS);

      // Whatever the copier told its rows, the table must agree (told written => there; told failed => absent).
      Map<Long, Integer> present = CopyDatabase.counts(postgres, "copy_closing");
      batch.completed().keySet().forEach(i -> assertThat(present).as("row %s told written", i).containsKey((long) i));
      batch.failed().forEach((i, e) -> {
        if (!dev.ringbatch.OutcomeUnknownException.isIn(e)) {
          assertThat(present).as("row %s told failed (%s)", i, e).doesNotContainKey((long) i);
        }
      });
      System.out.printf("close while copying, idempotent=" + idempotent + ": close timed out=%s, copy %s, told written %s, failed %s, present %s%n",
          timedOut != null, copied.isCompletedExceptionally() ? "threw " + catchThrowable(copied::join) : "returned", batch.completed().keySet(),
          batch.failed().keySet(), present.keySet());
      assertThat(timedOut).as("close() returned within 20 s (it promises to wait up to 10 s)").isNull();
    }
  }

  /**
   * Imprecision (async only): an idempotent PgCopySink throws a lost COMMIT reply for the whole batch as a
   * safe-to-retry OutcomeUnknownException, trusting a RetryPolicy to write it again; OverlappingCopySink has no
   * retry, so every row of the batch without an outcome is told "outcome unknown", including rows never in the
   * COPY whose reply was lost. Here the move refuses row 7 (no line: halving), the first half's COMMIT reply is
   * lost, and row 7, refused by the server and never committable, is told "may or may not be in the table".
   */
  @Test
  void idempotentOverlapping_lostCommitReplyWhileHalving_aRefusedRowIsNotToldOutcomeUnknown() throws Exception {
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS copy_unknown_bad",
        "CREATE TABLE copy_unknown_bad (id BIGINT PRIMARY KEY, payload TEXT NOT NULL, CHECK (payload <> 'bad'))");
    try (dev.ringbatch.sink.ReplyDroppingProxy proxy = new dev.ringbatch.sink.ReplyDroppingProxy(
            postgres.getPort(), "COMMIT\0", () -> false);
         HikariDataSource viaProxy = CopyDatabase.pool(proxy.port(), "ringbatch-review-unknown", 2)) {
      proxy.dropNext(1);
      List<Event> items = new ArrayList<>(events(8));
      items.set(7, new Event(7, "bad"));
      RecordingBatch<Event, Integer> batch = RecordingBatch.of(items);
      Throwable stageFailure;
      try (OverlappingCopySink<Event> sink = PgCopySink.<Event>into(viaProxy, "copy_unknown_bad")
          .column("id", Event::id).column("payload", Event::payload).idempotentOn("id").buildOverlapping(1)) {
        stageFailure = catchThrowable(() -> sink.write(batch).toCompletableFuture().get(30, TimeUnit.SECONDS));
      }
      assertThat(proxy.dropped()).isOne();
      assertThat(CopyDatabase.counts(postgres, "copy_unknown_bad")).doesNotContainKey(7L);
      // What Batcher.ofAsync tells a row: its recorded outcome, else the stage's failure.
      Throwable toldRow7 = batch.failed().containsKey(7) ? batch.failed().get(7) : stageFailure;
      assertThat(dev.ringbatch.OutcomeUnknownException.isIn(toldRow7))
          .as("refused row 7 told outcome unknown: %s", toldRow7).isFalse();
    }
  }

  /** Passes: text with every character COPY's text format escapes, and beyond the BMP, is stored exactly. */
  @ParameterizedTest(name = "idempotent={0}")
  @ValueSource(booleans = {false, true})
  void awkwardText_isStoredExactly(boolean idempotent) throws Exception {
    String table = "copy_awkward" + (idempotent ? "_idem" : "");
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS " + table,
        "CREATE TABLE " + table + " (id BIGINT PRIMARY KEY, payload TEXT NOT NULL)");
    List<String> texts = List.of("\\.", "\\.\n", "a\r\nb", "\r", "\\N", "\\", "tab\there", "", " ",
        "\u00fc\u20ac\ud83d\ude00", "\u2028\u0085\u00a0", "\\x41", "end\\", "\n\\.\n", "\u007f\u0001");
    List<Event> items = IntStream.range(0, texts.size()).mapToObj(i -> new Event(i, texts.get(i))).toList();
    PgCopySink.Builder<Event> builder = PgCopySink.<Event>into(pool, table).column("id", Event::id)
        .column("payload", Event::payload);
    if (idempotent) {
      builder.idempotentOn("id");
    }
    RecordingBatch<Event, Integer> batch = RecordingBatch.of(items);
    builder.build().write(batch);
    assertThat(batch.failed()).isEmpty();
    try (Connection c = postgres.getPostgresDatabase().getConnection(); Statement s = c.createStatement();
         java.sql.ResultSet rs = s.executeQuery("SELECT id, payload FROM " + table + " ORDER BY id")) {
      int n = 0;
      while (rs.next()) {
        assertThat(rs.getString(2)).as("row %s", rs.getLong(1)).isEqualTo(texts.get((int) rs.getLong(1)));
        n++;
      }
      assertThat(n).isEqualTo(texts.size());
    }
  }

  enum Mood {
    HAPPY;

    @Override
    public String toString() {
      return "happy"; // as a PostgreSQL enum's label usually is
    }
  }

  record Odd(long id, java.time.ZonedDateTime zoned, double dbl, byte[] bytes, Character ch, java.math.BigDecimal dec,
      Float flt, java.time.LocalDateTime local) {}

  /** Passes: odd column values are stored as the column documentation says. */
  @Test
  void oddValueTypes_areStoredAsPostgresReadsThem() throws Exception {
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS copy_odd",
        "CREATE TABLE copy_odd (id BIGINT PRIMARY KEY, zoned TIMESTAMPTZ, dbl FLOAT8, bytes BYTEA, ch TEXT,"
            + " dec NUMERIC, flt REAL, local TIMESTAMP)");
    java.time.ZonedDateTime zoned = java.time.ZonedDateTime.of(2024, 10, 27, 2, 30, 0, 0,
        java.time.ZoneId.of("Europe/Amsterdam")).withLaterOffsetAtOverlap(); // the repeated hour: +01:00
    byte[] bytes = {0, 1, (byte) 0xff, '\\', '\n', '\t'};
    List<Odd> items = List.of(
        new Odd(0, zoned, Double.NaN, bytes, '\\', new java.math.BigDecimal("1E+3"), Float.MIN_VALUE,
            java.time.LocalDateTime.of(2024, 1, 1, 10, 0, 0, 123_456_000)),
        new Odd(1, zoned.withEarlierOffsetAtOverlap(), Double.NEGATIVE_INFINITY, new byte[0], '\t',
            new java.math.BigDecimal("-0.000001"), -0.0f, java.time.LocalDateTime.of(2024, 1, 1, 0, 0)));
    RecordingBatch<Odd, Integer> batch = RecordingBatch.of(items);
    PgCopySink.<Odd>into(pool, "copy_odd").column("id", Odd::id).column("zoned", Odd::zoned).column("dbl", Odd::dbl)
        .column("bytes", Odd::bytes).column("ch", Odd::ch).column("dec", Odd::dec).column("flt", Odd::flt)
        .column("local", Odd::local).build().write(batch);
    assertThat(batch.failed()).isEmpty();
    try (Connection c = postgres.getPostgresDatabase().getConnection(); Statement s = c.createStatement();
         java.sql.ResultSet rs = s.executeQuery("SELECT * FROM copy_odd ORDER BY id")) {
      for (Odd odd : items) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getObject("zoned", java.time.OffsetDateTime.class).toInstant())
            .isEqualTo(odd.zoned().toInstant());
        assertThat(Double.valueOf(rs.getDouble("dbl"))).isEqualTo(Double.valueOf(odd.dbl())); // NaN equals NaN
        assertThat(rs.getBytes("bytes")).isEqualTo(odd.bytes());
        assertThat(rs.getString("ch")).isEqualTo(odd.ch().toString());
        assertThat(rs.getBigDecimal("dec")).isEqualByComparingTo(odd.dec());
        assertThat(Float.valueOf(rs.getFloat("flt"))).isEqualTo(odd.flt()); // -0.0 is not 0.0
        assertThat(rs.getObject("local", java.time.LocalDateTime.class)).isEqualTo(odd.local());
      }
    }
  }

  /**
   * Defect (documentation vs behaviour): Builder.column says any value other than numbers, Booleans, byte[],
   * UUIDs and java.time values is written "by its toString()", but CopyText writes an enum by name(). An enum
   * whose toString() gives the label of a PostgreSQL enum (or the text the application stores) is written
   * as its constant name: refused by the enum type, or the wrong text stored.
   */
  @Test
  void enumValue_isWrittenByItsToString_asDocumented() throws Exception {
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS copy_enum",
        "CREATE TABLE copy_enum (id BIGINT PRIMARY KEY, mood TEXT NOT NULL)");
    RecordingBatch<Long, Integer> batch = RecordingBatch.of(1L);
    PgCopySink.<Long>into(pool, "copy_enum").column("id", id -> id).column("mood", id -> Mood.HAPPY).build()
        .write(batch);
    assertThat(batch.completed()).containsEntry(0, 1);
    try (Connection c = postgres.getPostgresDatabase().getConnection(); Statement s = c.createStatement();
         java.sql.ResultSet rs = s.executeQuery("SELECT mood FROM copy_enum")) {
      assertThat(rs.next()).isTrue();
      assertThat(rs.getString(1)).as("stored text of Mood.HAPPY").isEqualTo(Mood.HAPPY.toString());
    }
  }

  /** Passes: a batch in which no item encodes fails each item with its own error and sends nothing. */
  @Test
  void everyItemFailsToEncode_eachFailsWithItsOwnError_nothingSent() throws Exception {
    CopyDatabase.table(postgres, "copy_no_encode", "");
    long before = CopyDatabase.copies(postgres);
    RecordingBatch<Event, Integer> batch = RecordingBatch.of(events(5));
    PgCopySink.<Event>into(pool, "copy_no_encode").column("id", Event::id).column("payload", e -> {
      throw new IllegalStateException("no payload for " + e.id());
    }).build().write(batch);
    assertThat(batch.completed()).isEmpty();
    assertThat(batch.failed()).hasSize(5)
        .allSatisfy((i, e) -> assertThat(e).hasMessage("no payload for " + i));
    assertThat(CopyDatabase.copies(postgres)).isEqualTo(before);
  }

  /**
   * Passes: duplicate keys in one idempotent batch together with refused rows (one refused row shares its key
   * with a good one) and a deferred foreign key refused at COMMIT: told 1 => that very row is there; told 0 => a
   * row with its key is there; told failed => that row is not there.
   */
  @Test
  void idempotent_duplicateKeysRefusedRowsAndADeferredForeignKey_everyAnswerMatchesTheTable() throws Exception {
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS copy_dups", "DROP TABLE IF EXISTS copy_dups_parent",
        "CREATE TABLE copy_dups_parent (name TEXT PRIMARY KEY)",
        "INSERT INTO copy_dups_parent SELECT 'p' || i FROM generate_series(0, 20) i",
        "INSERT INTO copy_dups_parent VALUES ('a'), ('b'), ('c'), ('bad')",
        "CREATE TABLE copy_dups (id BIGINT PRIMARY KEY, payload TEXT NOT NULL CHECK (payload <> 'bad'),"
            + " FOREIGN KEY (payload) REFERENCES copy_dups_parent (name) DEFERRABLE INITIALLY DEFERRED)",
        "INSERT INTO copy_dups VALUES (9, 'p9')");
    List<Event> items = List.of(new Event(1, "a"), new Event(1, "bad"), new Event(2, "bad"), new Event(2, "b"),
        new Event(3, "c"), new Event(3, "c"), new Event(4, "orphan"), new Event(5, "p5"), new Event(9, "p9"),
        new Event(6, "bad"));
    RecordingBatch<Event, Integer> batch = RecordingBatch.of(items);
    PgCopySink.<Event>into(pool, "copy_dups").column("id", Event::id).column("payload", Event::payload)
        .idempotentOn("id").build().write(batch);

    Map<Long, String> rows = new java.util.HashMap<>();
    try (Connection c = postgres.getPostgresDatabase().getConnection(); Statement s = c.createStatement();
         java.sql.ResultSet rs = s.executeQuery("SELECT id, payload FROM copy_dups")) {
      while (rs.next()) {
        assertThat(rows.put(rs.getLong(1), rs.getString(2))).as("row %s twice", rs.getLong(1)).isNull();
      }
    }
    assertThat(batch.completed().size() + batch.failed().size()).isEqualTo(items.size());
    for (int i = 0; i < items.size(); i++) {
      Event e = items.get(i);
      if (batch.completed().containsKey(i)) {
        int result = batch.completed().get(i);
        if (result == 1) {
          assertThat(rows.get(e.id())).as("row %s told inserted", i).isEqualTo(e.payload());
        } else {
          assertThat(result).isZero();
          assertThat(rows).as("row %s told already there", i).containsKey(e.id());
        }
      } else {
        assertThat(rows.get(e.id())).as("row %s told failed (%s)", i, batch.failed().get(i)).isNotEqualTo(e.payload());
      }
    }
    // Only the first item with a key is offered: row 1 (key 1, after row 0) is told 0, its key being there; the
    // refused rows are the CHECK rows offered and the orphan.
    assertThat(batch.failed()).containsOnlyKeys(2, 6, 9);
    assertThat(batch.completed()).containsEntry(0, 1).containsEntry(1, 0).containsEntry(3, 1).containsEntry(4, 1).containsEntry(5, 0)
        .containsEntry(7, 1).containsEntry(8, 0);
  }

  private static void awaitCondition(String countSql) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (CopyDatabase.queryLong(postgres, countSql) == 0) {
      assertThat(System.nanoTime()).as("waiting for: %s", countSql).isLessThan(deadline);
      Thread.onSpinWait();
    }
  }

  /**
   * A TCP proxy that, once a client message contains {@code trigger}, passes the server's messages on until the
   * first ErrorResponse ('E') inclusive, then cuts both connections: the client hears the server's error, and
   * then loses the connection before the ReadyForQuery that would follow it.
   */
  static final class CutAfterErrorProxy implements AutoCloseable {
    private final ServerSocket listener;
    private final int targetPort;
    private final byte[] trigger;
    private final AtomicInteger armable = new AtomicInteger(1);
    private final AtomicInteger cuts = new AtomicInteger();
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    /** Instead of cutting after the server's error: adds an error of its own after a COPY's CommandComplete. */
    private final boolean errorAfterCopy;
    private volatile boolean closed;

    CutAfterErrorProxy(int targetPort, String trigger) throws IOException {
      this(targetPort, trigger, false);
    }

    CutAfterErrorProxy(int targetPort, String trigger, boolean errorAfterCopy) throws IOException {
      this.errorAfterCopy = errorAfterCopy;
      this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
      this.targetPort = targetPort;
      this.trigger = trigger.getBytes(StandardCharsets.UTF_8);
      Thread acceptor = new Thread(this::accept, "cut-proxy-accept");
      acceptor.setDaemon(true);
      acceptor.start();
    }

    int port() {
      return listener.getLocalPort();
    }

    int cuts() {
      return cuts.get();
    }

    private void accept() {
      while (!closed) {
        try {
          Socket client = listener.accept();
          Socket server = new Socket(InetAddress.getLoopbackAddress(), targetPort);
          client.setTcpNoDelay(true);
          server.setTcpNoDelay(true);
          sockets.add(client);
          sockets.add(server);
          Link link = new Link(client, server);
          daemon(link::up);
          daemon(link::down);
        } catch (IOException e) {
          if (!closed) {
            System.err.println("cut proxy: accept failed: " + e);
          }
        }
      }
    }

    private static void daemon(Runnable r) {
      Thread t = new Thread(r, "cut-proxy-pump");
      t.setDaemon(true);
      t.start();
    }

    private final class Link {
      private final Socket client;
      private final Socket server;
      private volatile boolean armed;

      Link(Socket client, Socket server) {
        this.client = client;
        this.server = server;
      }

      void up() {
        byte[] buffer = new byte[64 * 1024];
        try (InputStream in = client.getInputStream(); OutputStream out = server.getOutputStream()) {
          int n;
          while ((n = in.read(buffer)) > 0) {
            if (!armed && contains(buffer, n) && armable.getAndDecrement() > 0) {
              armed = true;
            }
            out.write(buffer, 0, n);
            out.flush();
          }
        } catch (IOException e) {
          // cut
        } finally {
          cut();
        }
      }

      /** Server to client, message by message (after the startup, every message is type, length, body). */
      void down() {
        try (InputStream in = server.getInputStream(); OutputStream out = client.getOutputStream()) {
          byte[] header = new byte[5];
          boolean startup = true;
          while (true) {
            if (!readFully(in, header, 0, 1)) {
              return;
            }
            if (startup && (header[0] == 'N' || header[0] == 'S' || header[0] == 'G')) {
              out.write(header, 0, 1); // a one-byte answer to an SSL or GSS encryption request
              out.flush();
              continue;
            }
            startup = false;
            if (!readFully(in, header, 1, 5)) {
              return;
            }
            int length = ((header[1] & 0xff) << 24) | ((header[2] & 0xff) << 16) | ((header[3] & 0xff) << 8)
                | (header[4] & 0xff);
            byte[] body = new byte[length - 4];
            if (!readFully(in, body, 0, body.length)) {
              return;
            }
            out.write(header);
            out.write(body);
            out.flush();
            if (armed && errorAfterCopy && header[0] == 'C' && new String(body, StandardCharsets.UTF_8).startsWith("COPY ")) {
              armed = false;
              cuts.incrementAndGet();
              out.write(cancelError()); // as a cancel the server caught after its commit, on the way out, would
              out.flush();
              continue; // the ReadyForQuery follows
            }
            if (armed && !errorAfterCopy && header[0] == 'E') {
              cuts.incrementAndGet();
              return; // the error reached the client; what follows it (ReadyForQuery) never does
            }
          }
        } catch (IOException e) {
          // cut
        } finally {
          cut();
        }
      }

      /** An ErrorResponse: ERROR 57014, "canceling statement due to user request". */
      private byte[] cancelError() {
        java.io.ByteArrayOutputStream fields = new java.io.ByteArrayOutputStream();
        for (String field : new String[] {"SERROR", "VERROR", "C57014", "Mcanceling statement due to user request"}) {
          fields.writeBytes(field.getBytes(StandardCharsets.UTF_8));
          fields.write(0);
        }
        fields.write(0);
        byte[] body = fields.toByteArray();
        int length = body.length + 4;
        java.io.ByteArrayOutputStream message = new java.io.ByteArrayOutputStream();
        message.write('E');
        message.write(length >>> 24);
        message.write(length >>> 16);
        message.write(length >>> 8);
        message.write(length);
        message.writeBytes(body);
        return message.toByteArray();
      }

      private boolean readFully(InputStream in, byte[] into, int from, int length) throws IOException {
        int off = from;
        while (off < length) {
          int n = in.read(into, off, length - off);
          if (n < 0) {
            return false;
          }
          off += n;
        }
        return true;
      }

      private void cut() {
        try {
          client.close();
        } catch (IOException e) {
          // closed
        }
        try {
          server.close();
        } catch (IOException e) {
          // closed
        }
      }
    }

    private boolean contains(byte[] data, int length) {
      outer:
      for (int i = 0; i + trigger.length <= length; i++) {
        for (int j = 0; j < trigger.length; j++) {
          if (data[i + j] != trigger[j]) {
            continue outer;
          }
        }
        return true;
      }
      return false;
    }

    @Override
    public void close() throws IOException {
      closed = true;
      listener.close();
      for (Socket s : sockets) {
        s.close();
      }
    }
  }
}
