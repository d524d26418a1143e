package dev.ringbatch.postgresql;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.ringbatch.sink.RecordingBatch;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * PgCopySink's small batches, sent as one multi-row INSERT ({@link ValuesInsert}) rather than a COPY: the value
 * stored must be the one a COPY of the same text stores, whatever the batch's size and however often the
 * connection has run that INSERT before.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PgCopyInsertPathIT {
  private static EmbeddedPostgres postgres;

  record Row(long id, Object a, Object b) {}

  @BeforeAll
  static void start() throws Exception {
    postgres = EmbeddedPostgres.builder().start();
  }

  @AfterAll
  static void stop() throws Exception {
    postgres.close();
  }

  private static PgCopySink<Row> sink(DataSource ds, String table) {
    return PgCopySink.<Row>into(ds, table).column("id", Row::id).column("a", Row::a).column("b", Row::b).build();
  }

  private static List<Row> rows(long from, int n, Object a, Object b) {
    return LongStream.range(from, from + n).mapToObj(id -> new Row(id, a, b)).toList();
  }

  /** Each id's columns a and b as text. */
  private static Map<Long, String> stored(String table) throws Exception {
    return stored(table, "a::text || ' | ' || b::text");
  }

  /** Each id's {@code expression}, read in a session at UTC. */
  private static Map<Long, String> stored(String table, String expression) throws Exception {
    Map<Long, String> stored = new HashMap<>();
    try (Connection c = postgres.getPostgresDatabase().getConnection(); Statement s = c.createStatement()) {
      s.execute("SET TimeZone = 'UTC'");
      try (ResultSet rs = s.executeQuery("SELECT id, " + expression + " FROM " + table)) {
        while (rs.next()) {
          stored.put(rs.getLong(1), rs.getString(2));
        }
      }
    }
    return stored;
  }

  /**
   * An interval column with fields ({@code interval year}, {@code interval minute to second}) reads its text by
   * them: COPY hands the input function the column's type modifier, and '3' is 3 years, '1:30' one minute thirty.
   * An INSERT's parameter is read without it ('3' is 3 seconds, '1:30' an hour and a half) and then cut to the
   * fields: 0 years, 01:30:00. The same item would be stored differently by a batch of 32 rows and one of 33.
   */
  @Test
  void intervalColumnsWithFields_smallBatch_storedAsTheCopyOfALargeBatchStoresThem() throws Exception {
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS ip_interval",
        "CREATE TABLE ip_interval (id bigint PRIMARY KEY, a interval year, b interval minute to second)");
    try (HikariDataSource pool = CopyDatabase.pool(postgres.getPort(), "ip-interval", 1)) {
      PgCopySink<Row> sink = sink(pool, "ip_interval");
      RecordingBatch<Row, Integer> small = RecordingBatch.of(rows(0, 2, "3", "1:30"));
      sink.write(small);
      RecordingBatch<Row, Integer> large = RecordingBatch.of(rows(100, ValuesInsert.MAX_ROWS + 1, "3", "1:30"));
      sink.write(large);

      assertThat(small.completed()).hasSize(2);
      assertThat(large.completed()).hasSize(ValuesInsert.MAX_ROWS + 1);
      assertThat(stored("ip_interval")).hasSize(ValuesInsert.MAX_ROWS + 3)
          .allSatisfy((id, v) -> assertThat(v).as("id %s", id).isEqualTo("3 years | 00:01:30"));
    }
  }

  /**
   * pgjdbc prepares a statement on the server after its fifth use on a connection (prepareThreshold, 5 by
   * default), and the server keeps the parameter types it inferred then: after {@code ALTER TABLE ... TYPE
   * numeric}, the INSERT's parameter is still read as a float8 and then cast, so 12345678901234567.89 would be
   * stored as 12345678901234568, told written; a COPY reads it as the column's type is now.
   */
  @Test
  void columnTypeChangedAfterTheInsertWasPreparedOnTheServer_smallBatch_storesTheValueAsTheNewTypeReadsIt()
      throws Exception {
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS ip_altered",
        "CREATE TABLE ip_altered (id bigint PRIMARY KEY, a double precision, b int)");
    HikariConfig config = new HikariConfig();
    // pgjdbc's default prepareThreshold, as an application's pool has it; one connection, so it is reused
    config.setJdbcUrl("jdbc:postgresql://localhost:" + postgres.getPort() + "/postgres?user=postgres");
    config.setMaximumPoolSize(1);
    try (HikariDataSource pool = new HikariDataSource(config)) {
      PgCopySink<Row> sink = sink(pool, "ip_altered");
      for (int i = 0; i < 6; i++) {
        RecordingBatch<Row, Integer> batch = RecordingBatch.of(rows(2L * i, 2, 1.5, 7));
        sink.write(batch);
        assertThat(batch.completed()).hasSize(2);
      }
      CopyDatabase.exec(postgres, "ALTER TABLE ip_altered ALTER COLUMN a TYPE numeric",
          "ALTER TABLE ip_altered ALTER COLUMN b TYPE text");

      RecordingBatch<Row, Integer> after = RecordingBatch.of(rows(100, 2, new BigDecimal("12345678901234567.89"),
          "007"));
      sink.write(after);

      assertThat(after.failed()).isEmpty();
      assertThat(after.completed()).containsOnlyKeys(0, 1);
      assertThat(stored("ip_altered")).containsEntry(100L, "12345678901234567.89 | 007")
          .containsEntry(101L, "12345678901234567.89 | 007");
    }
  }

  /**
   * Rows that fail to encode leave the INSERT a subset of the batch: each row sent must carry its own values (an
   * INSERT bound by position in the attempt, not in the batch, would store row 2's payload under row 1's id).
   */
  @Test
  void rowsFailingToEncode_theInsertOfTheRestStoresEachRowsOwnValues() throws Exception {
    CopyDatabase.table(postgres, "ip_subset", "");
    try (HikariDataSource pool = CopyDatabase.pool(postgres.getPort(), "ip-subset", 1)) {
      long before = CopyDatabase.copies(postgres);
      List<Row> items = LongStream.range(0, 12).mapToObj(id -> new Row(id, "p" + id, null)).toList();
      RecordingBatch<Row, Integer> batch = RecordingBatch.of(items);
      PgCopySink.<Row>into(pool, "ip_subset").column("id", Row::id).column("payload", row -> {
        if (row.id() == 0 || row.id() == 5 || row.id() == 6) {
          throw new IllegalStateException("no payload for " + row.id());
        }
        return row.a();
      }).build().write(batch);

      assertThat(batch.failed()).containsOnlyKeys(0, 5, 6);
      assertThat(batch.completed()).hasSize(9).allSatisfy((i, result) -> assertThat(result).isOne());
      assertThat(stored("ip_subset", "payload")).hasSize(9).allSatisfy((id, payload) -> assertThat(payload).isEqualTo("p" + id));
      assertThat(CopyDatabase.copies(postgres) - before).as("one INSERT").isOne();
    }
  }

  /**
   * COPY stores the value it is given in a {@code GENERATED ALWAYS} identity column; an INSERT does so only with
   * {@code OVERRIDING SYSTEM VALUE}, and without it is refused on every small batch (each then copied, after an
   * error in the server's log). A rule, which only an INSERT runs, shows which statement wrote the rows.
   */
  @Test
  void identityAlwaysColumn_smallBatch_oneInsertStoresTheIdsGiven_asALargeBatchsCopyDoes() throws Exception {
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS ip_identity", "DROP TABLE IF EXISTS ip_identity_log",
        "CREATE TABLE ip_identity (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, a text, b text)",
        "CREATE TABLE ip_identity_log (id bigint)",
        "CREATE RULE ip_identity_logged AS ON INSERT TO ip_identity DO ALSO INSERT INTO ip_identity_log VALUES (NEW.id)");
    try (HikariDataSource pool = CopyDatabase.pool(postgres.getPort(), "ip-identity", 1)) {
      RecordingBatch<Row, Integer> small = RecordingBatch.of(rows(100, 10, "x", "y"));
      RecordingBatch<Row, Integer> large = RecordingBatch.of(rows(1_000, ValuesInsert.MAX_ROWS + 1, "x", "y"));
      PgCopySink<Row> sink = sink(pool, "ip_identity");
      sink.write(small);
      sink.write(large);

      assertThat(small.failed()).isEmpty();
      assertThat(small.completed()).hasSize(10).allSatisfy((i, result) -> assertThat(result).isOne());
      assertThat(large.failed()).isEmpty();
      assertThat(stored("ip_identity").keySet()).hasSize(10 + ValuesInsert.MAX_ROWS + 1)
          .containsAll(LongStream.range(100, 110).boxed().toList())
          .containsAll(LongStream.range(1_000, 1_000 + ValuesInsert.MAX_ROWS + 1).boxed().toList());
      assertThat(stored("ip_identity_log", "id").keySet()).as("written by one INSERT, not copied after a refusal")
          .containsExactlyInAnyOrderElementsOf(LongStream.range(100, 110).boxed().toList());
    }
  }

  /**
   * A deferred unique constraint refuses the COMMIT of a clean INSERT, naming no row: the rows are halved, each
   * half inserted on its own, until the duplicate fails alone; every other row is written once and told 1.
   */
  @Test
  void deferredConstraintRefusesTheInsertsCommit_onlyTheDuplicateFails_theRestWrittenOnce() throws Exception {
    CopyDatabase.table(postgres, "ip_deferred", ", UNIQUE (id) DEFERRABLE INITIALLY DEFERRED");
    CopyDatabase.exec(postgres, "INSERT INTO ip_deferred VALUES (7, 'already')");
    try (HikariDataSource pool = CopyDatabase.pool(postgres.getPort(), "ip-deferred", 1)) {
      List<Row> items = LongStream.range(0, 24).mapToObj(id -> new Row(id, "p" + id, null)).toList();
      RecordingBatch<Row, Integer> batch = RecordingBatch.of(items);
      PgCopySink.<Row>into(pool, "ip_deferred").column("id", Row::id).column("payload", Row::a).build().write(batch);

      assertThat(batch.failed()).containsOnlyKeys(7);
      assertThat(((java.sql.SQLException) batch.failed().get(7)).getSQLState()).isEqualTo("23505");
      assertThat(batch.completed()).hasSize(23).allSatisfy((i, result) -> assertThat(result).isOne());
      assertThat(CopyDatabase.counts(postgres, "ip_deferred")).hasSize(24).allSatisfy((id, n) -> assertThat(n).isOne());
    }
  }

  /**
   * A statement_timeout ends the INSERT: the rows are copied, the COPY times out as well, and the error no row
   * causes fails the whole batch at once (write throws it for a retry policy), nothing of it written.
   */
  @Test
  void statementTimeoutEndsTheInsert_theCopyTimesOutToo_writeThrowsIt_nothingWritten() throws Exception {
    CopyDatabase.table(postgres, "ip_timeout", "");
    CopyDatabase.exec(postgres, "CREATE OR REPLACE FUNCTION ip_slow_row() RETURNS trigger LANGUAGE plpgsql AS $$"
            + " BEGIN IF NEW.payload = 'slow' THEN PERFORM pg_sleep(30); END IF; RETURN NEW; END $$",
        "CREATE TRIGGER ip_slow_row BEFORE INSERT ON ip_timeout FOR EACH ROW EXECUTE FUNCTION ip_slow_row()");
    try (HikariDataSource pool = CopyDatabase.pool(postgres.getPort(), "ip-timeout", 1,
        "SET statement_timeout = '300ms'")) {
      long before = CopyDatabase.copies(postgres);
      List<Row> items = LongStream.range(0, 10).mapToObj(id -> new Row(id, id == 4 ? "slow" : "p" + id, null))
          .toList();
      RecordingBatch<Row, Integer> batch = RecordingBatch.of(items);
      PgCopySink<Row> sink = PgCopySink.<Row>into(pool, "ip_timeout").column("id", Row::id)
          .column("payload", Row::a).build();

      assertThatThrownBy(() -> sink.write(batch)).isInstanceOf(java.sql.SQLException.class)
          .satisfies(e -> assertThat(((java.sql.SQLException) e).getSQLState()).isEqualTo("57014"));
      assertThat(batch.completed()).isEmpty();
      assertThat(batch.failed()).isEmpty();
      assertThat(CopyDatabase.counts(postgres, "ip_timeout")).isEmpty();
      assertThat(CopyDatabase.copies(postgres) - before).as("the INSERT, then the COPY").isEqualTo(2);
    }
  }

  /**
   * A view, and a table whose row-level security applies to the role: COPY writes neither ("cannot copy to view",
   * "COPY FROM not supported with row-level security"), an INSERT does. A small clean batch was written by its
   * INSERT; one row refused by the view's table or the policy sent the batch to a COPY, which failed it whole with
   * COPY's error: the good rows failed with an error not theirs, the refused row without its own, and whether an
   * item was written depended on how many rows shared its batch. Every batch must fare alike.
   */
  @Test
  void viewOrRowSecurityTable_aSmallBatchFaresAsALargeOne_refusedWholeWithCopysError() throws Exception {
    CopyDatabase.exec(postgres, "DROP VIEW IF EXISTS ip_view", "DROP TABLE IF EXISTS ip_view_base, ip_rls",
        "DROP ROLE IF EXISTS ip_app", "CREATE ROLE ip_app LOGIN",
        "CREATE TABLE ip_view_base (id bigint, a text CHECK (a <> 'bad'), b text)",
        "CREATE VIEW ip_view AS SELECT * FROM ip_view_base",
        "CREATE TABLE ip_rls (id bigint, a text, b text)", "ALTER TABLE ip_rls ENABLE ROW LEVEL SECURITY",
        "CREATE POLICY ip_rls_check ON ip_rls USING (true) WITH CHECK (a <> 'bad')",
        "GRANT ALL ON ip_view, ip_view_base, ip_rls TO ip_app");
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl("jdbc:postgresql://localhost:" + postgres.getPort() + "/postgres?user=ip_app");
    config.setMaximumPoolSize(1);
    try (HikariDataSource pool = new HikariDataSource(config)) {
      for (String[] target : new String[][] {{"ip_view", "42809"}, {"ip_rls", "0A000"}}) {
        PgCopySink<Row> sink = sink(pool, target[0]);
        for (int n : new int[] {10, ValuesInsert.MAX_ROWS + 1}) {
          RecordingBatch<Row, Integer> batch = RecordingBatch.of(rows(0, n, "good", "x"));
          assertThatThrownBy(() -> sink.write(batch)).as("%s, %s rows", target[0], n)
              .isInstanceOf(java.sql.SQLException.class)
              .satisfies(e -> assertThat(((java.sql.SQLException) e).getSQLState()).isEqualTo(target[1]));
          assertThat(batch.completed()).isEmpty();
        }
      }
      assertThat(CopyDatabase.counts(postgres, "ip_view_base")).isEmpty();
      assertThat(CopyDatabase.counts(postgres, "ip_rls")).isEmpty();
    }
  }

  /** What the table holds for {@code id} (column a as text), or the SQLState the item failed with. */
  private static String outcome(RecordingBatch<Row, Integer> batch, int index, Map<Long, String> stored, long id) {
    Throwable failure = batch.failed().get(index);
    if (failure != null) {
      return "failed " + (failure instanceof java.sql.SQLException e ? e.getSQLState() : failure.getClass().getName());
    }
    return "stored " + stored.get(id);
  }

  /**
   * Types whose input depends on the column's type modifier, or which check, round, pad, truncate or normalise
   * what they read: each text stored, or refused, by a small batch's INSERT exactly as by a large batch's COPY.
   */
  @Test
  void typesThatRoundPadOrRefuse_smallBatchStoresOrRefusesEachTextAsALargeOne() throws Exception {
    CopyDatabase.exec(postgres, "DROP TYPE IF EXISTS ip_mood CASCADE", "CREATE TYPE ip_mood AS ENUM ('sad', 'ok')",
        "DROP DOMAIN IF EXISTS ip_positive CASCADE", "CREATE DOMAIN ip_positive AS int CHECK (VALUE > 0)");
    Map<String, List<String>> cases = new java.util.LinkedHashMap<>();
    cases.put("varchar(3)", List.of("ab ", "abc   ", "abcd", "\\x"));
    cases.put("char(3)", List.of("a", "abc  ", "abcd"));
    cases.put("numeric(4,1)", List.of("1.25", "1.35", "999.95", "NaN", "Infinity", "1e2"));
    cases.put("timestamp(0)", List.of("2026-01-01 10:00:00.5", "2026-01-01 10:00:01.5+05", "epoch"));
    cases.put("timestamptz(1)", List.of("2026-01-01 10:00:00.25+02", "2026-01-01 10:00:00.35 Europe/Paris"));
    cases.put("time(0)", List.of("23:59:59.6", "10:00:00.5"));
    cases.put("timetz(0)", List.of("10:00:00.5+01"));
    cases.put("interval(0)", List.of("1.5", "1 day 00:00:00.7", "1"));
    cases.put("interval day to second(0)", List.of("3", "1:30", "1 2:3:4.6"));
    cases.put("bit(3)", List.of("101", "10", "1011"));
    cases.put("varbit(3)", List.of("1010", "10"));
    cases.put("varchar(3)[]", List.of("{\"ab \",abcd}", "{\"ab \"}"));
    cases.put("numeric(3,1)[]", List.of("{1.25,99.99}", "{1.25,2.35}"));
    cases.put("interval year[]", List.of("{3}"));
    cases.put("float4", List.of("0.1", "3.4028235e38", "1e39", "1e-50"));
    cases.put("\"char\"", List.of("ab", "é"));
    cases.put("name", List.of("n".repeat(70)));
    cases.put("json", List.of("{\"a\": 1, \"a\": 2}"));
    cases.put("jsonb", List.of("{\"b\": 1, \"a\": 2, \"a\": 3}"));
    cases.put("tsvector", List.of("b a a:3"));
    cases.put("inet", List.of("10.1.2.3/8", "10.1.2.3/33"));
    cases.put("ip_mood", List.of("ok", "OK"));
    cases.put("ip_positive", List.of("5", "-1"));
    cases.put("bool", List.of("yes", "of"));
    cases.put("bytea", List.of("\\000a", "\\x0", "abc"));
    cases.put("int4range", List.of("[1,3)", "(1,2)"));
    Map<String, String> differ = new java.util.LinkedHashMap<>();
    try (HikariDataSource pool = CopyDatabase.pool(postgres.getPort(), "ip-types", 1, "SET TimeZone = 'UTC'")) {
      int t = 0;
      for (Map.Entry<String, List<String>> c : cases.entrySet()) {
        String table = "ip_type_" + t++;
        CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS " + table,
            "CREATE TABLE " + table + " (id bigint, a " + c.getKey() + ", b text)");
        List<String> values = c.getValue();
        List<Row> small = LongStream.range(0, values.size()).mapToObj(i -> new Row(i, values.get((int) i), null))
            .toList();
        List<Row> large = LongStream.range(1000, 1000 + ValuesInsert.MAX_ROWS + 1)
            .mapToObj(i -> new Row(i, i - 1000 < values.size() ? values.get((int) (i - 1000)) : null, null)).toList();
        RecordingBatch<Row, Integer> smallBatch = RecordingBatch.of(small);
        RecordingBatch<Row, Integer> largeBatch = RecordingBatch.of(large);
        PgCopySink<Row> sink = sink(pool, table);
        sink.write(smallBatch);
        sink.write(largeBatch);
        Map<Long, String> stored = stored(table, "a::text");
        for (int i = 0; i < values.size(); i++) {
          String insert = outcome(smallBatch, i, stored, i);
          String copy = outcome(largeBatch, i, stored, 1000 + i);
          if (!insert.equals(copy)) {
            differ.put(c.getKey() + " '" + values.get(i) + "'", "INSERT " + insert + ", COPY " + copy);
          }
        }
      }
    }
    assertThat(differ).as("texts a small batch stores otherwise than a large one").isEmpty();
  }
}
