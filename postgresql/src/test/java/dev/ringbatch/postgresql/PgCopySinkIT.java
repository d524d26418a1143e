package dev.ringbatch.postgresql;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.sink.RecordingBatch;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.postgresql.util.PSQLException;

/**
 * PgCopySink on PostgreSQL 18: every row gets its own outcome, a refused row fails alone at the cost of one more
 * COPY, a row without a line is found by halving, an error no row causes fails the whole batch at once.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PgCopySinkIT {
  private static EmbeddedPostgres postgres;
  private static HikariDataSource pool;

  record Event(long id, String payload) {}

  @BeforeAll
  static void start() throws Exception {
    postgres = EmbeddedPostgres.builder().start();
    pool = CopyDatabase.pool(postgres.getPort(), "ringbatch-copy", 4);
  }

  @AfterAll
  static void stop() throws Exception {
    pool.close();
    postgres.close();
  }

  static List<Event> events(int n, Set<Integer> bad) {
    return IntStream.range(0, n).mapToObj(i -> new Event(i, bad.contains(i) ? "bad" : "p" + i)).toList();
  }

  static PgCopySink<Event> sink(String table) {
    return PgCopySink.<Event>into(pool, table).column("id", Event::id).column("payload", Event::payload).build();
  }

  @Test
  void cleanBatch_everyRowWrittenOnce_eachToldOne_inOneCopy() throws Exception {
    CopyDatabase.table(postgres, "copy_clean", "");
    long before = CopyDatabase.copies(postgres);
    RecordingBatch<Event, Integer> batch = RecordingBatch.of(events(1_000, Set.of()));
    sink("copy_clean").write(batch);

    assertThat(batch.failed()).isEmpty();
    assertThat(batch.completed()).hasSize(1_000).allSatisfy((i, result) -> assertThat(result).isEqualTo(1));
    assertThat(CopyDatabase.counts(postgres, "copy_clean")).hasSize(1_000).allSatisfy((id, n) -> assertThat(n).isOne());
    assertThat(CopyDatabase.copies(postgres) - before).isOne();
  }

  /**
   * 1,000 rows are one COPY in a transaction; 24 one COPY in auto-commit, whose error names the line too. Either
   * way each bad row fails alone with the server's error and the rest are written once.
   */
  @ParameterizedTest(name = "{0} rows, bad rows at [{1}]")
  @CsvSource({"1000, 0", "1000, 500", "1000, 999", "1000, 0 500 999", "1000, 3 4 5 6", "24, ''", "24, 0", "24, 23",
      "24, 3 11 20"})
  void refusedRows_failAlone_withTheServersError_inAtMostTwoKPlusOneCopies(int rows, String positions)
      throws Exception {
    Set<Integer> bad = positions.isEmpty() ? Set.of()
        : Arrays.stream(positions.split(" ")).map(Integer::valueOf).collect(Collectors.toSet());
    CopyDatabase.table(postgres, "copy_bad", ", CHECK (payload <> 'bad')");
    long before = CopyDatabase.copies(postgres);
    RecordingBatch<Event, Integer> batch = RecordingBatch.of(events(rows, bad));
    sink("copy_bad").write(batch);

    assertThat(batch.failed().keySet()).isEqualTo(bad);
    assertThat(batch.failed().values()).allSatisfy(e ->
        assertThat(e).isInstanceOf(PSQLException.class).hasMessageContaining("copy_bad_payload_check"));
    assertThat(batch.completed()).hasSize(rows - bad.size()).allSatisfy((i, result) -> assertThat(result).isEqualTo(1));
    Map<Long, Integer> present = CopyDatabase.counts(postgres, "copy_bad");
    assertThat(present).hasSize(rows - bad.size()).allSatisfy((id, n) -> assertThat(n).isOne());
    assertThat(present.keySet()).noneMatch(id -> bad.contains(id.intValue()));
    // The first COPY (in auto-commit for a small batch) stops at the first bad row; then, in one transaction, the
    // rows before each bad row are copied again and the rows after it after a savepoint.
    assertThat(CopyDatabase.copies(postgres) - before)
        .isBetween(bad.isEmpty() ? 1L : 2L, bad.isEmpty() ? 1L : 2L * bad.size() + 1);
  }

  /**
   * Every batch is a COPY, small (in auto-commit) or large (in a transaction): a table's rules, which COPY ignores,
   * apply to none, and each row is there once, told 1.
   */
  @Test
  void smallAndLargeBatches_bothCopies_aTablesRulesApplyToNeither() throws Exception {
    CopyDatabase.table(postgres, "small_rule", "");
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS small_rule_log", "CREATE TABLE small_rule_log (id bigint)",
        "CREATE RULE small_rule_logged AS ON INSERT TO small_rule DO ALSO INSERT INTO small_rule_log VALUES (NEW.id)");
    PgCopySink<Event> sink = sink("small_rule");
    for (int rows : new int[] {1, PgCopySink.AUTOCOMMIT_ROWS, PgCopySink.AUTOCOMMIT_ROWS + 1}) {
      CopyDatabase.exec(postgres, "TRUNCATE small_rule, small_rule_log");
      RecordingBatch<Event, Integer> batch = RecordingBatch.of(events(rows, Set.of()));
      sink.write(batch);
      assertThat(batch.completed()).as("%s rows", rows).hasSize(rows).allSatisfy((i, r) -> assertThat(r).isOne());
      assertThat(CopyDatabase.counts(postgres, "small_rule")).hasSize(rows).allSatisfy((id, n) -> assertThat(n).isOne());
      assertThat(CopyDatabase.counts(postgres, "small_rule_log")).as("%s rows", rows).isEmpty();
    }
  }

  @Test
  void everyRowBad_everyRowFailsWithItsError_nothingWritten() throws Exception {
    CopyDatabase.table(postgres, "copy_all_bad", ", CHECK (payload <> 'bad')");
    Set<Integer> all = IntStream.range(0, 40).boxed().collect(Collectors.toSet());
    RecordingBatch<Event, Integer> batch = RecordingBatch.of(events(40, all));
    sink("copy_all_bad").write(batch);

    assertThat(batch.completed()).isEmpty();
    assertThat(batch.failed()).hasSize(40).allSatisfy((i, e) -> assertThat(e).hasMessageContaining("check"));
    assertThat(CopyDatabase.counts(postgres, "copy_all_bad")).isEmpty();
  }

  @Test
  void refusedRowsWithoutALine_aForeignKey_areFoundByHalving() throws Exception {
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS copy_fk", "DROP TABLE IF EXISTS copy_parent",
        "CREATE TABLE copy_parent (name TEXT PRIMARY KEY)",
        "INSERT INTO copy_parent SELECT 'p' || i FROM generate_series(0, 255) i");
    CopyDatabase.table(postgres, "copy_fk", ", FOREIGN KEY (payload) REFERENCES copy_parent (name)");
    long before = CopyDatabase.copies(postgres);
    RecordingBatch<Event, Integer> batch = RecordingBatch.of(events(256, Set.of(17, 200)));
    sink("copy_fk").write(batch);

    assertThat(batch.failed().keySet()).containsExactlyInAnyOrder(17, 200);
    assertThat(batch.failed().values()).allSatisfy(e -> assertThat(((SQLException) e).getSQLState()).isEqualTo("23503"));
    assertThat(CopyDatabase.counts(postgres, "copy_fk")).hasSize(254);
    assertThat(CopyDatabase.copies(postgres) - before).as("about 2·k·log2(n) copies").isLessThanOrEqualTo(33);
  }

  @Test
  void deferredConstraintRefusedAtCommit_onlyTheDuplicatesFail() throws Exception {
    CopyDatabase.table(postgres, "copy_deferred", ", UNIQUE (id) DEFERRABLE INITIALLY DEFERRED");
    CopyDatabase.exec(postgres, "INSERT INTO copy_deferred VALUES (7, 'already')");
    RecordingBatch<Event, Integer> batch = RecordingBatch.of(events(100, Set.of()));
    sink("copy_deferred").write(batch);

    assertThat(batch.failed().keySet()).containsExactly(7);
    assertThat(((SQLException) batch.failed().get(7)).getSQLState()).isEqualTo("23505");
    assertThat(batch.completed()).hasSize(99);
    assertThat(CopyDatabase.counts(postgres, "copy_deferred")).hasSize(100).allSatisfy((id, n) -> assertThat(n).isOne());
  }

  @Test
  void columnFunctionThrows_orTextHoldsANul_thatItemFailsAlone_beforeAnythingIsSent() throws Exception {
    CopyDatabase.table(postgres, "copy_encode", "");
    long before = CopyDatabase.copies(postgres);
    List<Event> items = new ArrayList<>(events(10, Set.of()));
    items.set(3, new Event(3, "nul\u0000inside"));
    items.set(6, new Event(6, "boom"));
    RuntimeException boom = new IllegalStateException("boom");
    PgCopySink<Event> sink = PgCopySink.<Event>into(pool, "copy_encode").column("id", Event::id)
        .column("payload", e -> {
          if (e.payload().equals("boom")) {
            throw boom;
          }
          return e.payload();
        }).build();
    RecordingBatch<Event, Integer> batch = RecordingBatch.of(items);
    sink.write(batch);

    assertThat(batch.failed().get(6)).isSameAs(boom);
    assertThat(batch.failed().get(3)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("column 'payload'").hasMessageContaining("NUL");
    assertThat(batch.completed()).hasSize(8);
    assertThat(CopyDatabase.counts(postgres, "copy_encode")).hasSize(8);
    assertThat(CopyDatabase.copies(postgres) - before).isOne();
  }

  @Test
  void missingTable_theWholeBatchFailsAtOnce_writeThrowsTheServersError() {
    RecordingBatch<Event, Integer> batch = RecordingBatch.of(events(100, Set.of()));
    assertThatThrownBy(() -> sink("copy_no_such_table").write(batch)).isInstanceOf(SQLException.class)
        .satisfies(e -> assertThat(((SQLException) e).getSQLState()).isEqualTo("42P01"));
    assertThat(batch.completed()).isEmpty();
    assertThat(batch.failed()).isEmpty();
  }

  @Test
  void aTriggerRefusingOneRowWithAStatementLevelState_failsOnlyThatRow() throws Exception {
    CopyDatabase.table(postgres, "copy_routed", "");
    CopyDatabase.exec(postgres, "CREATE OR REPLACE FUNCTION route_one() RETURNS trigger LANGUAGE plpgsql AS $$"
            + " BEGIN IF NEW.payload = 'bad' THEN RAISE EXCEPTION 'no partition for %', NEW.id"
            + " USING ERRCODE = '42P01'; END IF; RETURN NEW; END $$",
        "CREATE TRIGGER route_one BEFORE INSERT ON copy_routed FOR EACH ROW EXECUTE FUNCTION route_one()");
    RecordingBatch<Event, Integer> batch = RecordingBatch.of(events(50, Set.of(20)));
    sink("copy_routed").write(batch);

    assertThat(batch.failed().keySet()).containsExactly(20);
    assertThat(batch.completed()).hasSize(49);
    assertThat(CopyDatabase.counts(postgres, "copy_routed")).hasSize(49);
  }

  @Test
  void idempotent_newRowsToldOne_rowsAlreadyThereToldZero_aKeyTwiceInOneBatchWrittenOnce() throws Exception {
    CopyDatabase.table(postgres, "copy_idem", ", PRIMARY KEY (id)");
    CopyDatabase.exec(postgres, "INSERT INTO copy_idem VALUES (2, 'old'), (5, 'old')");
    PgCopySink<Event> sink = PgCopySink.<Event>into(pool, "copy_idem").column("id", Event::id)
        .column("payload", Event::payload).idempotentOn("id").build();
    List<Event> items = new ArrayList<>(events(8, Set.of()));
    items.add(new Event(6, "second 6")); // index 8: the same key as index 6
    RecordingBatch<Event, Integer> batch = RecordingBatch.of(items);
    sink.write(batch);

    assertThat(batch.failed()).isEmpty();
    assertThat(batch.completed()).containsEntry(0, 1).containsEntry(2, 0).containsEntry(5, 0)
        .containsEntry(6, 1).containsEntry(8, 0).hasSize(9);
    assertThat(CopyDatabase.counts(postgres, "copy_idem")).hasSize(8).allSatisfy((id, n) -> assertThat(n).isOne());
    assertThat(CopyDatabase.queryLong(postgres, "SELECT count(*) FROM copy_idem WHERE payload = 'p6'")).isEqualTo(1L);

    RecordingBatch<Event, Integer> again = RecordingBatch.of(events(8, Set.of())); // a retry of a written batch
    sink.write(again);
    assertThat(again.completed()).hasSize(8).allSatisfy((i, result) -> assertThat(result).isZero());
  }

  @Test
  void idempotent_refusedRowAndNullKey_failAlone() throws Exception {
    CopyDatabase.table(postgres, "copy_idem_bad", ", PRIMARY KEY (id), CHECK (payload <> 'bad')");
    record Keyed(Long id, String payload) {}
    PgCopySink<Keyed> sink = PgCopySink.<Keyed>into(pool, "copy_idem_bad").column("id", Keyed::id)
        .column("payload", Keyed::payload).idempotentOn("id").build();
    RecordingBatch<Keyed, Integer> batch = RecordingBatch.of(new Keyed(1L, "a"), new Keyed(null, "b"),
        new Keyed(3L, "bad"), new Keyed(4L, "d"));
    sink.write(batch);

    assertThat(batch.failed().get(1)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'id'");
    assertThat(((SQLException) batch.failed().get(2)).getSQLState()).isEqualTo("23514");
    assertThat(batch.completed()).containsOnly(Map.entry(0, 1), Map.entry(3, 1));
    assertThat(CopyDatabase.counts(postgres, "copy_idem_bad")).containsOnlyKeys(1L, 4L);
  }

  @Test
  void overlappingSink_twoConnections_manyCallers_everyRowWrittenOnce() throws Exception {
    CopyDatabase.table(postgres, "copy_overlap", ", PRIMARY KEY (id)");
    int rows = 20_000;
    int callers = 16;
    List<CompletableFuture<Integer>> futures = java.util.Collections.synchronizedList(new ArrayList<>());
    try (OverlappingCopySink<Event> sink = PgCopySink.<Event>into(pool, "copy_overlap").column("id", Event::id)
            .column("payload", Event::payload).buildOverlapping(2);
         Batcher<Event, Integer> batcher = Batcher.ofAsync("overlap",
             BatcherConfig.builder().maxInFlightBatches(2).build(), sink)) {
      ExecutorService threads = Executors.newFixedThreadPool(callers);
      List<Future<?>> done = new ArrayList<>();
      for (int c = 0; c < callers; c++) {
        int caller = c;
        done.add(threads.submit(() -> {
          for (long id = caller; id < rows; id += callers) {
            CompletableFuture<Integer> f = batcher.submit(new Event(id, "p" + id));
            futures.add(f);
            f.join();
          }
        }));
      }
      for (Future<?> f : done) {
        f.get(60, TimeUnit.SECONDS);
      }
      threads.shutdown();
    }
    assertThat(futures).hasSize(rows).allSatisfy(f -> assertThat(f).isCompletedWithValue(1));
    assertThat(CopyDatabase.counts(postgres, "copy_overlap")).hasSize(rows).allSatisfy((id, n) -> assertThat(n).isOne());
  }

  @Test
  void everyCommonType_andNulls_roundTrip() throws Exception {
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS copy_types", "CREATE TABLE copy_types (id BIGINT, u UUID,"
        + " j JSONB, ts TIMESTAMPTZ, n NUMERIC, b BYTEA, flag BOOLEAN, t TEXT, d DATE, x DOUBLE PRECISION,"
        + " state TEXT)");
    record Row(long id, Object u, Object j, Object ts, Object n, Object b, Object flag, Object t, Object d, Object x,
        Object state) {}
    java.util.UUID uuid = java.util.UUID.fromString("0b4c9a1e-1f0a-4c55-9d6e-2f1c4c7b8a01");
    List<Row> rows = List.of(
        new Row(1, uuid, "{\"a\": [1, \"x\\ty\"]}", java.time.Instant.parse("2026-11-25T10:15:30.123456Z"),
            new java.math.BigDecimal("1E+3"), new byte[] {0, 9, 10, 92, (byte) 0xff}, true,
            "tab\tnewline\ncr\rbackslash\\ quote\" comma, é €𝄞", java.time.LocalDate.of(2026, 2, 28), Double.NaN,
            Thread.State.RUNNABLE),
        new Row(2, null, null, null, null, null, null, null, null, null, null),
        new Row(3, uuid, "\"\\\\N\"", java.time.OffsetDateTime.parse("2026-11-25T10:15:30+02:00"),
            -0.5, new byte[0], false, "\\N", java.time.LocalDate.of(1999, 12, 31), Double.NEGATIVE_INFINITY, "\\."));
    PgCopySink.Builder<Row> b = PgCopySink.<Row>into(pool, "copy_types").column("id", Row::id).column("u", Row::u)
        .column("j", Row::j).column("ts", Row::ts).column("n", Row::n).column("b", Row::b)
        .column("flag", Row::flag).column("t", Row::t).column("d", Row::d).column("x", Row::x)
        .column("state", Row::state);
    RecordingBatch<Row, Integer> batch = RecordingBatch.of(rows);
    b.build().write(batch);
    assertThat(batch.failed()).isEmpty();

    try (java.sql.Connection c = pool.getConnection(); java.sql.Statement st = c.createStatement();
         java.sql.ResultSet rs = st.executeQuery("SELECT u, j::text, ts, n::text, b, flag, t, d, x, state FROM"
             + " copy_types ORDER BY id")) {
      assertThat(rs.next()).isTrue();
      assertThat(rs.getObject(1)).isEqualTo(uuid);
      assertThat(rs.getString(2)).isEqualTo("{\"a\": [1, \"x\\ty\"]}");
      assertThat(rs.getObject(3, java.time.OffsetDateTime.class).toInstant())
          .isEqualTo(java.time.Instant.parse("2026-11-25T10:15:30.123456Z"));
      assertThat(rs.getString(4)).isEqualTo("1000");
      assertThat(rs.getBytes(5)).containsExactly(0, 9, 10, 92, 0xff);
      assertThat(rs.getBoolean(6)).isTrue();
      assertThat(rs.getString(7)).isEqualTo("tab\tnewline\ncr\rbackslash\\ quote\" comma, é €𝄞");
      assertThat(rs.getObject(8, java.time.LocalDate.class)).isEqualTo(java.time.LocalDate.of(2026, 2, 28));
      assertThat(rs.getDouble(9)).isNaN();
      assertThat(rs.getString(10)).isEqualTo("RUNNABLE");
      assertThat(rs.next()).isTrue();
      for (int col = 1; col <= 10; col++) {
        assertThat(rs.getObject(col)).as("column %s of the row of nulls", col).isNull();
      }
      assertThat(rs.next()).isTrue();
      assertThat(rs.getString(2)).isEqualTo("\"\\\\N\"");
      assertThat(rs.getObject(3, java.time.OffsetDateTime.class).toInstant())
          .isEqualTo(java.time.Instant.parse("2026-11-25T08:15:30Z"));
      assertThat(rs.getString(4)).isEqualTo("-0.5");
      assertThat(rs.getBytes(5)).isEmpty();
      assertThat(rs.getBoolean(6)).isFalse();
      assertThat(rs.getString(7)).isEqualTo("\\N");
      assertThat(rs.getDouble(9)).isEqualTo(Double.NEGATIVE_INFINITY);
      assertThat(rs.getString(10)).isEqualTo("\\.");
    }
  }
}
