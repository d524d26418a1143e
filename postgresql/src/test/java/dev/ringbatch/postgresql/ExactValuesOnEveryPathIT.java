package dev.ringbatch.postgresql;

import com.zaxxer.hikari.HikariDataSource;
import dev.ringbatch.BatchSink;
import dev.ringbatch.sink.JdbcBatchSink;
import dev.ringbatch.sink.RecordingBatch;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The exact-value contract (docs/sinks.md, "Values"): a caller told "written" finds exactly the value it passed,
 * else its item fails with a clear error. Each test writes the same values by every PostgreSQL path:
 * PgCopySink's small batch (a COPY in auto-commit), its large batch (a COPY in a transaction), a large batch with a refused row (salvage), its
 * idempotent mode, the unnest sink, and a rows sink binding with PgValues.set.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ExactValuesOnEveryPathIT {
  private static EmbeddedPostgres postgres;
  private static HikariDataSource pool;

  /** SMALL: few rows; COPY: padded past 32 rows; SALVAGE: COPY with one row the server refuses first. */
  enum Mode { SMALL, COPY, SALVAGE, IDEMPOTENT, UNNEST, ROWS }

  record Row(long id, Object value) {}

  record Result(Map<Integer, Throwable> failed, Map<Integer, Integer> completed, Map<Long, String> stored) {}

  /** A row the table's CHECK refuses, which makes the COPY sink salvage the rest. */
  private static final long REFUSED_ID = 999_999;

  @BeforeAll
  static void start() throws Exception {
    postgres = EmbeddedPostgres.builder().start();
    pool = CopyDatabase.pool(postgres.getPort(), "exact-values", 2, "SET TimeZone = 'UTC'");
  }

  @AfterAll
  static void stop() throws Exception {
    pool.close();
    postgres.close();
  }

  private static Object valueOf(Row row) {
    return row.value() == ValueCases.NullValue.NULL ? null : row.value();
  }

  private static BatchSink<Row, Integer> sink(DataSource ds, Mode mode, String table, String pgType) {
    String unnest = "INSERT INTO " + table + " (id, v) SELECT * FROM unnest(?::bigint[], ?::" + pgType + "[])";
    return switch (mode) {
      case SMALL, COPY, SALVAGE -> PgCopySink.<Row>into(ds, table).column("id", Row::id)
          .column("v", ExactValuesOnEveryPathIT::valueOf).build();
      case IDEMPOTENT -> PgCopySink.<Row>into(ds, table).column("id", Row::id)
          .column("v", ExactValuesOnEveryPathIT::valueOf).idempotentOn("id").build();
      case ROWS -> JdbcBatchSink.<Row>of(ds, "INSERT INTO " + table + " (id, v) VALUES (?, ?)", (ps, row) -> {
        PgValues.set(ps, 1, "id", row.id());
        PgValues.set(ps, 2, "v", valueOf(row));
      });
      case UNNEST -> PgUnnest.<Row>sink(ds, unnest).column("bigint", Row::id)
          .column(pgType, ExactValuesOnEveryPathIT::valueOf).build();
    };
  }

  /**
   * Writes {@code values} (item i has id i) into a fresh {@code table (id bigint primary key, v pgType)} by
   * {@code mode}; reads back {@code readExpr} of each row in a session at UTC. Item indexes are the values' own
   * (the salvage mode's refused row and the padding come after them).
   */
  private static Result write(Mode mode, String table, String pgType, String readExpr, List<?> values)
      throws Exception {
    table = table + "_" + mode.name().toLowerCase();
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS " + table,
        "CREATE TABLE " + table + " (id bigint PRIMARY KEY CHECK (id <> " + REFUSED_ID + "), v " + pgType + ")");
    List<Row> rows = new ArrayList<>();
    for (int i = 0; i < values.size(); i++) {
      rows.add(new Row(i, values.get(i)));
    }
    if (mode == Mode.SALVAGE) {
      rows.add(new Row(REFUSED_ID, ValueCases.NullValue.NULL));
    }
    if (mode != Mode.SMALL) {
      for (int i = 0; i <= PgCopySink.AUTOCOMMIT_ROWS; i++) {
        rows.add(new Row(1_000_000 + i, ValueCases.NullValue.NULL));
      }
    }
    RecordingBatch<Row, Integer> batch = RecordingBatch.of(rows);
    BatchSink<Row, Integer> sink = sink(pool, mode, table, pgType);
    sink.write(batch);
    if (sink instanceof AutoCloseable closeable) {
      closeable.close();
    }
    Map<Long, String> stored = new HashMap<>();
    try (Connection c = postgres.getPostgresDatabase().getConnection(); Statement s = c.createStatement()) {
      s.execute("SET TimeZone = 'UTC'");
      try (ResultSet rs = s.executeQuery("SELECT id, " + readExpr + " FROM " + table)) {
        while (rs.next()) {
          stored.put(rs.getLong(1), rs.getString(2));
        }
      }
    }
    Result r = new Result(new HashMap<>(batch.failed()), new HashMap<>(batch.completed()), stored);
    System.out.println("[exact-values] " + table + ": failed=" + r.failed() + " completed=" + r.completed().keySet()
        + " stored=" + stored.entrySet().stream().filter(e -> e.getKey() < REFUSED_ID).toList());
    return r;
  }

  /**
   * An OffsetDateTime (or ZonedDateTime) before year 1 with a negative offset is stored as its own instant: the
   * offset goes before the era ({@code 0044-03-15 12:00:00-05:00 BC}; after it, PostgreSQL reads an AD timestamp
   * with the offset's sign flipped). A ZonedDateTime of any zone in the Americas has a negative LMT offset before
   * 1883 (New York -04:56:02).
   */
  @Test
  void bcDateTimeWithANegativeOffset_isStoredAsItsOwnInstant_notInTheWrongEra() throws Exception {
    OffsetDateTime idesWest = OffsetDateTime.of(-43, 3, 15, 12, 0, 0, 0, ZoneOffset.ofHours(-5));
    ZonedDateTime idesNewYork = ZonedDateTime.of(LocalDateTime.of(-43, 3, 15, 12, 0), ZoneId.of("America/New_York"));
    OffsetDateTime idesEast = OffsetDateTime.of(-43, 3, 15, 12, 0, 0, 0, ZoneOffset.ofHours(5)); // control: right
    List<Object> values = List.of(idesWest, idesNewYork, idesEast);
    List<String> expected = List.of(
        "0044-03-15 17:00:00+00 BC", "0044-03-15 16:56:02+00 BC", "0044-03-15 07:00:00+00 BC");
    assertThatInstant(values.get(1)).isEqualTo(Instant.parse("-0043-03-15T16:56:02Z"));
    SoftAssertions soft = new SoftAssertions();
    for (Mode mode : Mode.values()) {
      Result r = write(mode, "ev_bc", "timestamptz", "v::text", values);
      for (int i = 0; i < values.size(); i++) {
        soft.assertThat(r.failed().get(i)).as(mode + " " + values.get(i) + ": not failed").isNull();
        soft.assertThat(r.stored().get((long) i)).as(mode + " " + values.get(i) + ": read back")
            .isEqualTo(expected.get(i));
      }
    }
    soft.assertAll();
  }

  private static org.assertj.core.api.AbstractInstantAssert<?> assertThatInstant(Object value) {
    return org.assertj.core.api.Assertions.assertThat(((ZonedDateTime) value).toInstant());
  }

  /**
   * An Integer, Long or BigInteger that a float4 or float8 column would store rounded (16777217 into float4,
   * 9007199254740993 into float8) is refused, as a Double a float4 cannot hold is; one it holds is written.
   */
  @Test
  void integerIntoAFloatColumnThatCannotHoldIt_isRefusedLikeADouble_notStoredRounded() throws Exception {
    SoftAssertions soft = new SoftAssertions();
    for (Mode mode : new Mode[] {Mode.SMALL, Mode.COPY, Mode.SALVAGE, Mode.IDEMPOTENT, Mode.UNNEST}) {
      Result f4 = write(mode, "ev_i4", "float4", "v::text",
          List.of(16_777_217, new java.math.BigInteger("123456789"), 16_777_216));
      Result f8 = write(mode, "ev_i8", "float8", "v::text",
          List.of(9_007_199_254_740_993L, new java.math.BigInteger("9007199254740993"), 9_007_199_254_740_992L));
      assertNumericallyExactOrRefused(soft, mode + " float4", f4, List.of("16777217", "123456789", "16777216"));
      assertNumericallyExactOrRefused(soft, mode + " float8", f8, List.of("9007199254740993", "9007199254740993",
          "9007199254740992"));
    }
    soft.assertAll();
  }

  /**
   * A date-time into a time or timetz column is refused, as one with a time of day into a date column is, rather
   * than stored without its date.
   */
  @Test
  void dateTimeIntoATimeColumn_isRefusedLikeADateTimeIntoADateColumn_notStoredWithoutItsDate() throws Exception {
    List<Object> values = List.of(LocalDateTime.of(2026, 1, 1, 10, 15), Instant.parse("2026-01-01T10:15:00Z"),
        OffsetDateTime.of(2026, 1, 1, 10, 15, 0, 0, ZoneOffset.ofHours(5)),
        java.sql.Timestamp.valueOf("2026-01-01 10:15:00"));
    SoftAssertions soft = new SoftAssertions();
    for (Mode mode : new Mode[] {Mode.SMALL, Mode.COPY, Mode.IDEMPOTENT, Mode.UNNEST}) {
      for (String type : List.of("time", "timetz")) {
        Result r = write(mode, "ev_t" + type, type, "v::text", values);
        for (int i = 0; i < values.size(); i++) {
          soft.assertThat(r.failed().get(i)).as(mode + " " + values.get(i).getClass().getSimpleName() + " into "
              + type + ": refused, not stored as " + r.stored().get((long) i))
              .isInstanceOf(IllegalArgumentException.class);
        }
      }
    }
    soft.assertAll();
  }

  /**
   * A GENERATED ALWAYS identity column stores the ids given in idempotent mode too, as COPY stores them.
   */
  @Test
  void identityAlwaysColumn_idempotentMode_writesTheIdsGiven_asThePlainSinkDoes() throws Exception {
    SoftAssertions soft = new SoftAssertions();
    for (int n : new int[] {3, 40}) {
      for (boolean idempotent : new boolean[] {false, true}) {
        String table = "ev_identity_" + n + (idempotent ? "_idem" : "_plain");
        CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS " + table,
            "CREATE TABLE " + table + " (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)");
        List<Row> rows = new ArrayList<>();
        for (int i = 0; i < n; i++) {
          rows.add(new Row(100 + i, "v" + i));
        }
        RecordingBatch<Row, Integer> batch = RecordingBatch.of(rows);
        PgCopySink.Builder<Row> b = PgCopySink.<Row>into(pool, table).column("id", Row::id).column("v", Row::value);
        PgCopySink<Row> sink = idempotent ? b.idempotentOn("id").build() : b.build();
        Throwable thrown = null;
        try {
          sink.write(batch);
        } catch (Exception e) {
          thrown = e;
        }
        sink.close();
        String what = table + " (" + n + " rows)";
        soft.assertThat(thrown).as(what + ": write threw").isNull();
        soft.assertThat(batch.failed()).as(what + ": failed items").isEmpty();
        soft.assertThat(CopyDatabase.counts(postgres, table)).as(what + ": rows written").hasSize(n);
      }
    }
    soft.assertAll();
  }

  /**
   * An unnest column of float8 under each name pgjdbc's createArrayOf reads as float8 ("float", "double") refuses
   * an integer a float8 cannot hold, as under "float8".
   */
  @Test
  void unnestFloat8SpelledFloatOrDouble_integerAFloat8CannotHold_isRefusedAsUnderFloat8() throws Exception {
    SoftAssertions soft = new SoftAssertions();
    for (String[] spelling : new String[][] {{"float8", "float8"}, {"float", "float"}, {"double", "double precision"}}) {
      String table = "ev_unnest_" + spelling[0];
      CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS " + table,
          "CREATE TABLE " + table + " (id bigint PRIMARY KEY, v float8)");
      List<Row> rows = List.of(new Row(0, 9_007_199_254_740_993L));
      RecordingBatch<Row, Integer> batch = RecordingBatch.of(rows);
      BatchSink<Row, Integer> sink = PgUnnest.<Row>sink(pool, "INSERT INTO " + table
              + " (id, v) SELECT * FROM unnest(?::bigint[], ?::" + spelling[1] + "[])")
          .column("bigint", Row::id).column(spelling[0], Row::value).build();
      sink.write(batch);
      String stored = null;
      try (Connection c = postgres.getPostgresDatabase().getConnection(); Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT v::numeric::text FROM " + table)) {
        if (rs.next()) {
          stored = rs.getString(1);
        }
      }
      System.out.println("[exact-values] column(\"" + spelling[0] + "\"): failed=" + batch.failed() + " stored=" + stored);
      assertNumericallyExactOrRefused(soft, "unnest column(\"" + spelling[0] + "\")",
          new Result(batch.failed(), batch.completed(), stored == null ? Map.of() : Map.of(0L, stored)),
          List.of("9007199254740993"));
    }
    soft.assertAll();
  }

  /** Each item refused with a clear error, or stored exactly: the stored text compared as a number. */
  private static void assertNumericallyExactOrRefused(SoftAssertions soft, String what, Result r,
      List<String> exact) {
    for (int i = 0; i < exact.size(); i++) {
      Throwable failed = r.failed().get(i);
      if (failed != null) {
        soft.assertThat(failed).as(what + " item " + i + ": refused with a clear error")
            .isInstanceOf(IllegalArgumentException.class);
      } else {
        String stored = r.stored().get((long) i);
        soft.assertThat(stored == null ? null : new BigDecimal(stored).toPlainString())
            .as(what + " item " + i + ": told written, so stored exactly (stored " + stored + ")")
            .isEqualTo(new BigDecimal(exact.get(i)).toPlainString());
      }
    }
  }
}
