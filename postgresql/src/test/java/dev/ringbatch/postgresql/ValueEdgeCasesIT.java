package dev.ringbatch.postgresql;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.ringbatch.BatchSink;
import dev.ringbatch.sink.JdbcBatchSink;
import dev.ringbatch.sink.RecordingBatch;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.OffsetTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TimeZone;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Edges of the value contract (docs/sinks.md's table) by every sink and mode: each test's comment says how the
 * value was once told "written" but stored as something else, or refused with the wrong cause; its assertions state
 * what the contract promises. Every test writes a good neighbour row too, and prints what each mode did.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ValueEdgeCasesIT {
  private static EmbeddedPostgres postgres;
  private static HikariDataSource pool;

  /**
   * COPY: the COPY sink with the test's few rows, which it copies in auto-commit; COPY_LARGE: the same rows padded
   * past that size with rows of NULL, which it copies in a transaction.
   */
  enum Mode { COPY, COPY_LARGE, COPY_IDEMPOTENT, ROWS, UNNEST }

  record Row(long id, Object value) {}

  record Result(Map<Integer, Throwable> failed, Map<Integer, Integer> completed, Map<Long, String> stored) {}

  @BeforeAll
  static void start() throws Exception {
    postgres = EmbeddedPostgres.builder().start();
    pool = CopyDatabase.pool(postgres.getPort(), "ringbatch-review", 2, "SET TimeZone = 'UTC'");
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
      case COPY, COPY_LARGE -> PgCopySink.<Row>into(ds, table).column("id", Row::id)
          .column("v", ValueEdgeCasesIT::valueOf).build();
      case COPY_IDEMPOTENT -> PgCopySink.<Row>into(ds, table).column("id", Row::id)
          .column("v", ValueEdgeCasesIT::valueOf).idempotentOn("id").build();
      case ROWS -> JdbcBatchSink.<Row>of(ds, "INSERT INTO " + table + " (id, v) VALUES (?, ?)", (ps, row) -> {
        PgValues.set(ps, 1, "id", row.id());
        PgValues.set(ps, 2, "v", valueOf(row));
      });
      case UNNEST -> PgUnnest.<Row>sink(ds, unnest).column("bigint", Row::id)
          .column(pgType, ValueEdgeCasesIT::valueOf).build();
    };
  }

  /** Writes {@code values} (row i has id i) into a fresh {@code table (id bigint primary key, v pgType)}. */
  private static Result write(DataSource ds, Mode mode, String table, String pgType, String readExpr,
      List<Object> values) throws Exception {
    table = table + "_" + mode.name().toLowerCase();
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS " + table,
        "CREATE TABLE " + table + " (id bigint PRIMARY KEY, v " + pgType + ")",
        "GRANT INSERT ON " + table + " TO PUBLIC");
    List<Row> rows = new ArrayList<>();
    for (int i = 0; i < values.size(); i++) {
      rows.add(new Row(i, values.get(i)));
    }
    for (int i = 0; mode == Mode.COPY_LARGE && i <= PgCopySink.AUTOCOMMIT_ROWS; i++) {
      rows.add(new Row(1_000_000 + i, ValueCases.NullValue.NULL));
    }
    RecordingBatch<Row, Integer> batch = RecordingBatch.of(rows);
    BatchSink<Row, Integer> sink = sink(ds, mode, table, pgType);
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
    System.out.println("[review " + TimeZone.getDefault().getID() + "] " + table + ": " + r);
    return r;
  }

  /**
   * A column whose type is a domain (over real, over date), named so in unnest mode too: its values are checked by
   * the domain's base type, as PgCopySink (which follows domains in the catalog) checks them. A Double a float4
   * cannot hold, or a date-time with a time of day, is refused, never stored rounded or cut.
   */
  @Test
  void domainColumn_isCheckedByItsBaseType_byEverySinkThatKnowsTheType() throws Exception {
    CopyDatabase.exec(postgres, "DROP DOMAIN IF EXISTS rv_price CASCADE", "CREATE DOMAIN rv_price AS real",
        "DROP DOMAIN IF EXISTS rv_day CASCADE", "CREATE DOMAIN rv_day AS date");
    SoftAssertions soft = new SoftAssertions();
    for (Mode mode : new Mode[] {Mode.COPY, Mode.COPY_LARGE, Mode.COPY_IDEMPOTENT, Mode.UNNEST}) {
      Result price = write(pool, mode, "rv_pricedom", "rv_price", "v::float8::text", List.of(0.1d, 0.5d));
      soft.assertThat(price.failed().get(0)).as(mode + " Double 0.1 into a domain over real: refused, not stored as "
          + price.stored().get(0L)).isInstanceOf(IllegalArgumentException.class);
      assertWrittenAs(soft, price, 1, mode + " Double 0.5 into a domain over real", "0.5");
      Result day = write(pool, mode, "rv_daydom", "rv_day", "v::text",
          List.of(LocalDateTime.of(2026, 11, 27, 23, 30), LocalDate.of(2026, 11, 27)));
      soft.assertThat(day.failed().get(0)).as(mode + " LocalDateTime 23:30 into a domain over date: refused, not"
          + " stored as " + day.stored().get(0L)).isInstanceOf(IllegalArgumentException.class);
      assertWrittenAs(soft, day, 1, mode + " LocalDate into a domain over date", "2026-11-27");
    }
    soft.assertAll();
  }

  /** How a refusal names column v: by its name, or in unnest mode (no names) by its parameter and array type. */
  private static String column(Mode mode) {
    return mode == Mode.UNNEST ? "'parameter 2 (" : "'v'";
  }

  private static void assertWrittenAs(SoftAssertions soft, Result r, int i, String what, String expected) {
    String zone = " (JVM " + TimeZone.getDefault().getID() + ")";
    soft.assertThat(r.failed().get(i)).as(what + zone + ": not failed").isNull();
    soft.assertThat(r.stored().get((long) i)).as(what + zone + ": read back").isEqualTo(expected);
  }

  /**
   * java.sql.Date for a BC day (ISO year -10, i.e. 11 BC; and ISO year 0, 1 BC): PgValues uses toLocalDate(), whose
   * deprecated getYear() gives the era year, so the value is sent as year 11 AD / 1 AD, told written. pgjdbc's own
   * setDate stores it BC.
   */
  @Test
  void sqlDateBeforeYear1_isStoredBc() throws Exception {
    ZoneId zone = ZoneId.systemDefault();
    java.sql.Date bc11 = new java.sql.Date(LocalDate.of(-10, 6, 1).atStartOfDay(zone).toInstant().toEpochMilli());
    java.sql.Date bc1 = new java.sql.Date(LocalDate.of(0, 6, 1).atStartOfDay(zone).toInstant().toEpochMilli());
    // What pgjdbc itself stores for the same objects (its setDate reads the era)
    String refBc11;
    String refBc1;
    try (Connection c = postgres.getPostgresDatabase().getConnection();
         java.sql.PreparedStatement ps = c.prepareStatement("SELECT ?::date::text, ?::date::text")) {
      ps.setDate(1, bc11);
      ps.setDate(2, bc1);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        refBc11 = rs.getString(1);
        refBc1 = rs.getString(2);
      }
    }
    System.out.println("[review] pgjdbc setDate stores " + refBc11 + " and " + refBc1);
    SoftAssertions soft = new SoftAssertions();
    for (Mode mode : Mode.values()) {
      Result r = write(pool, mode, "rv_sqldate", "date", "v::text", List.of(bc11, bc1, LocalDate.of(2026, 1, 1)));
      soft.assertThat(r.stored().get(0L)).as(mode + ": java.sql.Date of 11 BC stored").endsWith(" BC");
      soft.assertThat(r.stored().get(1L)).as(mode + ": java.sql.Date of 1 BC stored").endsWith(" BC");
      soft.assertThat(r.stored().get(0L)).as(mode + ": same as pgjdbc's setDate").isEqualTo(refBc11);
      assertWrittenAs(soft, r, 2, mode + " neighbour", "2026-01-01");
    }
    soft.assertAll();
  }

  /**
   * An OffsetDateTime at +18:00 (Java's limit) is an exact instant, but it is sent with its offset, which
   * PostgreSQL refuses ("time zone displacement out of range", over 15:59:59): a valid value fails with the server's
   * text instead of being stored. A sink that knows the column is a timestamptz stores the same instant; a rows sink,
   * which cannot tell a timestamptz parameter from a timestamp one (whose wall time that instant would change),
   * refuses it naming the Java type.
   */
  @Test
  void offsetBeyondPostgresDisplacementLimit_storedAsTheSameInstant() throws Exception {
    OffsetDateTime plus18 = OffsetDateTime.of(2026, 1, 1, 0, 0, 0, 0, ZoneOffset.ofHours(18));
    ZonedDateTime zonedMinus17 = ZonedDateTime.of(LocalDateTime.of(2026, 1, 1, 0, 0), ZoneOffset.ofHours(-17));
    SoftAssertions soft = new SoftAssertions();
    for (Mode mode : Mode.values()) {
      Result r = write(pool, mode, "rv_bigoffset", "timestamptz", "v::text",
          List.of(plus18, zonedMinus17, Instant.parse("2026-01-01T00:00:00Z")));
      if (mode == Mode.ROWS) {
        soft.assertThat(r.failed().get(0)).as(mode + ": +18:00 refused by the contract, naming the Java type")
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("java.time.OffsetDateTime");
        soft.assertThat(r.failed().get(1)).as(mode + ": -17:00 refused by the contract, naming the Java type")
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("java.time.ZonedDateTime");
        soft.assertThat(r.stored()).as(mode + ": refused, so absent").doesNotContainKeys(0L, 1L);
      } else {
        assertWrittenAs(soft, r, 0, mode + " +18:00, an exact instant", "2025-12-31 06:00:00+00");
        assertWrittenAs(soft, r, 1, mode + " -17:00, an exact instant", "2026-01-01 17:00:00+00");
      }
      assertWrittenAs(soft, r, 2, mode + " neighbour", "2026-01-01 00:00:00+00");
    }
    soft.assertAll();
  }

  /** OffsetTime +17:00: timetz cannot hold it; it must be refused by the contract naming the Java type. */
  @Test
  void offsetTimeBeyondLimit_refusedNamingJavaType() throws Exception {
    SoftAssertions soft = new SoftAssertions();
    for (Mode mode : Mode.values()) {
      Result r = write(pool, mode, "rv_timetz", "timetz", "v::text",
          List.of(OffsetTime.of(10, 0, 0, 0, ZoneOffset.ofHours(17)), OffsetTime.of(10, 0, 0, 0, ZoneOffset.UTC)));
      soft.assertThat(r.failed().get(0)).as(mode + ": +17:00 timetz fails").isNotNull();
      if (r.failed().get(0) != null) {
        soft.assertThat(r.failed().get(0)).as(mode + ": refusal names the Java type")
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("java.time.OffsetTime");
      }
      assertWrittenAs(soft, r, 1, mode + " neighbour", "10:00:00+00");
    }
    soft.assertAll();
  }

  /**
   * An OffsetDateTime whose instant is inside PostgreSQL's range but whose wall time (at its offset) is past
   * 294276-12-31 is refused as "outside PostgreSQL's timestamp range", though PostgreSQL stores it.
   */
  @Test
  void instantInRange_wallTimePastRangeEnd_stored() throws Exception {
    String direct;
    try (Connection c = postgres.getPostgresDatabase().getConnection(); Statement s = c.createStatement()) {
      s.execute("SET TimeZone = 'UTC'");
      try (ResultSet rs = s.executeQuery("SELECT '294277-01-01 05:00:00+14'::timestamptz::text")) {
        rs.next();
        direct = rs.getString(1);
      }
    }
    System.out.println("[review] PostgreSQL itself reads 294277-01-01 05:00:00+14 as " + direct);
    OffsetDateTime lateWall = OffsetDateTime.of(294277, 1, 1, 5, 0, 0, 0, ZoneOffset.ofHours(14));
    SoftAssertions soft = new SoftAssertions();
    for (Mode mode : Mode.values()) {
      Result r = write(pool, mode, "rv_edge", "timestamptz", "v::text", List.of(lateWall));
      assertWrittenAs(soft, r, 0, mode + " 294277-01-01T05:00+14:00 (= 294276-12-31T15:00Z)", direct);
    }
    soft.assertAll();
  }

  /**
   * Double into float4 (a pairing the docs' table lists): 0.123456789 has no float4 form, so a sink that knows the
   * column's type (COPY, unnest) refuses it naming the column, the Java type and the reason; a rows sink cannot know
   * a parameter's type, and the server rounds it to the float (the table says so). -0.0 into numeric, which has no
   * signed zero, is stored as 0 (the table says so).
   */
  @Test
  void doubleIntoFloat4_refusedWhereTheTypeIsKnown_negativeZeroIntoNumericIsZero() throws Exception {
    SoftAssertions soft = new SoftAssertions();
    for (Mode mode : Mode.values()) {
      Result f4 = write(pool, mode, "rv_f4", "float4", "v::float8::text", List.of(0.123456789d, 0.5d));
      if (mode == Mode.ROWS) {
        assertWrittenAs(soft, f4, 0, mode + " Double 0.123456789 into float4", "0.12345679104328156");
      } else {
        soft.assertThat(f4.failed().get(0)).as(mode + " Double 0.123456789 into float4: refused")
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(column(mode))
            .hasMessageContaining("java.lang.Double").hasMessageContaining("float4");
        soft.assertThat(f4.stored()).as(mode + ": nothing stored for it").doesNotContainKey(0L);
      }
      assertWrittenAs(soft, f4, 1, mode + " neighbour", "0.5");
      Result num = write(pool, mode, "rv_negzero", "numeric", "v::text", List.of(-0.0d, 1.5d));
      assertWrittenAs(soft, num, 0, mode + " Double -0.0 into numeric", "0.0");
      assertWrittenAs(soft, num, 1, mode + " neighbour", "1.5");
    }
    soft.assertAll();
  }

  /**
   * A role that may INSERT but not SELECT (a write-only logger): the COPY sink's "which columns are arrays" read
   * fails every batch, so the check is skipped, and a List/array into a text column is stored as its literal text,
   * told written. The docs say PgCopySink refuses an array for a non-array column.
   */
  @Test
  void insertOnlyRole_arrayIntoTextColumn_refused() throws Exception {
    CopyDatabase.exec(postgres, "DROP ROLE IF EXISTS rv_writer", "CREATE ROLE rv_writer LOGIN");
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl("jdbc:postgresql://localhost:" + postgres.getPort() + "/postgres?user=rv_writer");
    config.setMaximumPoolSize(2);
    SoftAssertions soft = new SoftAssertions();
    try (HikariDataSource writer = new HikariDataSource(config)) {
      for (Mode mode : new Mode[] {Mode.COPY, Mode.COPY_LARGE}) {
        Result r = write(writer, mode, "rv_insertonly", "text", "v::text",
            List.of(List.of("a", "b"), new int[] {1, 2}, "plain"));
        soft.assertThat(r.failed()).as(mode + ": List and int[] into text refused").containsKeys(0, 1);
        soft.assertThat(r.stored()).as(mode + ": nothing stored for them").doesNotContainKeys(0L, 1L);
        assertWrittenAs(soft, r, 2, mode + " neighbour", "plain");
      }
    }
    soft.assertAll();
  }

  /**
   * java.sql.Timestamp before 1582 into timestamp: the docs say "the wall time the value shows in the JVM (as
   * pgjdbc's setTimestamp)". It shows 1500-03-01 00:00:00 (Julian); PgValues sends the proleptic Gregorian wall
   * time of its instant, 1500-03-10; pgjdbc's setTimestamp stores 1500-03-01.
   */
  @Test
  void legacyTimestampIntoTimestamp_storesTheWallTimeItShows() throws Exception {
    Timestamp ts = Timestamp.valueOf("1500-03-01 00:00:00");
    String ref;
    try (Connection c = postgres.getPostgresDatabase().getConnection();
         java.sql.PreparedStatement ps = c.prepareStatement("SELECT ?::timestamp::text")) {
      ps.setTimestamp(1, ts);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        ref = rs.getString(1);
      }
    }
    System.out.println("[review] Timestamp shows " + ts + ", pgjdbc setTimestamp stores " + ref);
    // After 1582 too: before a zone's first transition java.time uses its LMT offset (New York -04:56:02,
    // Kolkata +05:53:28), java.util.TimeZone (which the Timestamp's fields use) a standard offset
    Timestamp lmt = Timestamp.valueOf("1850-01-01 00:00:00");
    Timestamp amsterdam1899 = Timestamp.valueOf("1899-06-01 12:00:00");
    SoftAssertions soft = new SoftAssertions();
    for (Mode mode : Mode.values()) {
      Result r = write(pool, mode, "rv_julian", "timestamp", "v::text", List.of(ts, lmt, amsterdam1899));
      assertWrittenAs(soft, r, 0, mode + " Timestamp 1500-03-01 into timestamp", "1500-03-01 00:00:00");
      assertWrittenAs(soft, r, 1, mode + " Timestamp 1850-01-01 into timestamp", "1850-01-01 00:00:00");
      assertWrittenAs(soft, r, 2, mode + " Timestamp 1899-06-01 12:00 into timestamp", "1899-06-01 12:00:00");
    }
    soft.assertAll();
  }

  /** A CharSequence whose toString() throws: the item fails, but the error names neither column nor type. */
  @Test
  void toStringThrows_failsItsRowNamingColumnAndType() throws Exception {
    CharSequence bad = new CharSequence() {
      @Override
      public int length() {
        return 1;
      }

      @Override
      public char charAt(int index) {
        return 'x';
      }

      @Override
      public CharSequence subSequence(int start, int end) {
        return this;
      }

      @Override
      public String toString() {
        throw new IllegalStateException("boom");
      }
    };
    SoftAssertions soft = new SoftAssertions();
    for (Mode mode : Mode.values()) {
      Result r = write(pool, mode, "rv_throws", "text", "v::text", List.of(bad, "ok"));
      soft.assertThat(r.failed().get(0)).as(mode + ": fails").isNotNull();
      if (r.failed().get(0) != null) {
        soft.assertThat(r.failed().get(0).getMessage()).as(mode + ": error names the column and type")
            .contains(column(mode)).contains("ValueEdgeCasesIT$1");
        soft.assertThat(r.failed().get(0).getCause()).as(mode + ": the thrown exception is the cause")
            .hasMessage("boom");
      }
      assertWrittenAs(soft, r, 1, mode + " neighbour", "ok");
    }
    soft.assertAll();
  }

  /** Sanity probes expected to hold: printed, asserted. */
  @Test
  void probesThatShouldHold() throws Exception {
    ZoneId lordHowe = ZoneId.of("Australia/Lord_Howe");
    ZoneId chatham = ZoneId.of("Pacific/Chatham");
    ZoneId ny = ZoneId.of("America/New_York");
    ZoneId casa = ZoneId.of("Africa/Casablanca");
    List<Object> values = List.of(
        ZonedDateTime.of(LocalDateTime.of(2026, 4, 5, 1, 45), lordHowe).withEarlierOffsetAtOverlap(),
        ZonedDateTime.of(LocalDateTime.of(2026, 4, 5, 1, 45), lordHowe).withLaterOffsetAtOverlap(),
        ZonedDateTime.of(LocalDateTime.of(2026, 4, 5, 3, 15), chatham).withLaterOffsetAtOverlap(),
        ZonedDateTime.of(LocalDateTime.of(2026, 11, 1, 1, 30), ny).withLaterOffsetAtOverlap(),
        ZonedDateTime.of(LocalDateTime.of(2026, 3, 1, 2, 30), casa),
        ZonedDateTime.of(LocalDateTime.of(1800, 1, 1, 0, 0), ZoneId.of("Europe/Amsterdam")),
        Instant.parse("2026-12-31T23:59:59.9999995Z"),
        Instant.parse("-4713-11-24T00:00:00Z"),
        Timestamp.from(Instant.parse("1969-12-31T23:59:59.9999995Z")));
    SoftAssertions soft = new SoftAssertions();
    for (Mode mode : Mode.values()) {
      Result r = write(pool, mode, "rv_zones", "timestamptz", "extract(epoch from v)::text", values);
      for (int i = 0; i < values.size(); i++) {
        Object v = values.get(i);
        Instant instant = v instanceof ZonedDateTime z ? z.toInstant() : v instanceof Timestamp t ? t.toInstant()
            : (Instant) v;
        Instant micros = instant.plusNanos(500).truncatedTo(java.time.temporal.ChronoUnit.MICROS);
        BigDecimal expected = BigDecimal.valueOf(micros.getEpochSecond())
            .add(BigDecimal.valueOf(micros.getNano(), 9)).stripTrailingZeros();
        soft.assertThat(r.failed().get(i)).as(mode + " " + v + ": not failed").isNull();
        String got = r.stored().get((long) i);
        soft.assertThat(got == null ? null : new BigDecimal(got).stripTrailingZeros()).as(mode + " " + v)
            .isEqualTo(expected);
      }
      Result t = write(pool, mode, "rv_text", "text", "v::text", List.of("\\.", "a\n\\.\nb", "\r\n\\.\r\n",
          "\\N", "x".repeat(1 << 20), new StringBuilder("\t\\.\t")));
      soft.assertThat(t.failed()).as(mode + ": texts").isEmpty();
      soft.assertThat(t.stored().get(0L)).isEqualTo("\\.");
      soft.assertThat(t.stored().get(1L)).isEqualTo("a\n\\.\nb");
      soft.assertThat(t.stored().get(2L)).isEqualTo("\r\n\\.\r\n");
      soft.assertThat(t.stored().get(3L)).isEqualTo("\\N");
      soft.assertThat(t.stored().get(5L)).isEqualTo("\t\\.\t");
      Result f = write(pool, mode, "rv_sub", "float8", "v::text", List.of(Double.MIN_VALUE, -0.0d, Float.MIN_VALUE));
      soft.assertThat(f.failed()).as(mode + ": subnormals").isEmpty();
      soft.assertThat(f.stored().get(0L)).isEqualTo("5e-324");
      soft.assertThat(f.stored().get(1L)).isEqualTo("-0");
    }
    for (Mode mode : new Mode[] {Mode.COPY, Mode.COPY_LARGE, Mode.ROWS}) {
      Result a = write(pool, mode, "rv_arr", "text[]", "v::text", List.of(
          List.of(List.of("NULL", ""), List.of("\\", "\"")), List.of(List.of(), List.of()),
          List.of(List.of("a"), List.of()), List.of("ok")));
      System.out.println("[review] arrays " + mode + ": " + a);
      soft.assertThat(a.stored().get(0L)).isEqualTo("{{\"NULL\",\"\"},{\"\\\\\",\"\\\"\"}}");
      soft.assertThat(a.stored().get(3L)).isEqualTo("{ok}");
    }
    soft.assertAll();
  }

  /**
   * The refused-line parser takes the first line of the error's context that starts with "COPY <table>, line ".
   * A BEFORE trigger that runs dynamic SQL with a row's value (EXECUTE format('... %L', NEW.v)) puts that value, raw
   * newlines included, in an earlier context line: a value holding "\nCOPY rv_ctx_copy, line 1, ..." makes the sink
   * blame line 1, a good row, with another row's error; good rows fail and are not written.
   */
  @Test
  void valueInDynamicSqlContext_onlyTheBadRowFails() throws Exception {
    String table = "rv_ctx_copy";
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS " + table,
        "CREATE TABLE " + table + " (id bigint PRIMARY KEY, v text)",
        "CREATE OR REPLACE FUNCTION rv_ctx_check() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
            + " IF NEW.v LIKE 'bad%' THEN EXECUTE format('SELECT 1/0 WHERE %L IS NOT NULL', NEW.v); END IF;"
            + " RETURN NEW; END $$",
        "CREATE TRIGGER rv_ctx_check BEFORE INSERT ON " + table + " FOR EACH ROW EXECUTE FUNCTION rv_ctx_check()");
    List<Row> rows = List.of(new Row(0, "good0"), new Row(1, "good1"),
        new Row(2, "bad\nCOPY " + table + ", line 1, column v"), new Row(3, "good3"));
    RecordingBatch<Row, Integer> batch = RecordingBatch.of(rows);
    PgCopySink<Row> sink = PgCopySink.<Row>into(pool, table).column("id", Row::id).column("v", Row::value).build();
    sink.write(batch);
    sink.close();
    Map<Long, Integer> counts = CopyDatabase.counts(postgres, table);
    System.out.println("[review] context spoof: failed=" + batch.failed().keySet() + " completed="
        + batch.completed() + " stored=" + counts.keySet());
    SoftAssertions soft = new SoftAssertions();
    soft.assertThat(batch.failed().keySet()).as("only the bad row fails").containsExactly(2);
    soft.assertThat(counts.keySet()).as("good rows written").containsExactlyInAnyOrder(0L, 1L, 3L);
    soft.assertAll();
  }

  /** A column of a domain over an array type: is an array accepted (it is an array column)? */
  @Test
  void domainOverArrayColumn_acceptsAList() throws Exception {
    CopyDatabase.exec(postgres, "DROP DOMAIN IF EXISTS rv_tags CASCADE", "CREATE DOMAIN rv_tags AS text[]");
    SoftAssertions soft = new SoftAssertions();
    for (Mode mode : new Mode[] {Mode.COPY, Mode.COPY_LARGE, Mode.COPY_IDEMPOTENT, Mode.ROWS}) {
      Result r = write(pool, mode, "rv_dom", "rv_tags", "v::text", List.of(List.of("a", "b")));
      assertWrittenAs(soft, r, 0, mode + " List into domain over text[]", "{a,b}");
    }
    soft.assertAll();
  }

  /**
   * Session settings other than TimeZone: the whole ValueCases matrix with sessions at array_nulls = off, and at
   * DateStyle German/SQL-DMY with TimeZone Pacific/Chatham.
   */
  @Test
  void valueCases_underOtherSessionSettings_readBackAsSent() throws Exception {
    SoftAssertions soft = new SoftAssertions();
    String[] settings = {"SET array_nulls = off",
        "SET DateStyle = 'ISO, DMY'; SET TimeZone = 'Pacific/Chatham'; SET IntervalStyle = 'sql_standard'",
        "SET DateStyle = 'ISO, MDY'; SET TimeZone = 'America/St_Johns'; SET extra_float_digits = -15"};
    for (String setting : settings) {
      try (HikariDataSource ds = CopyDatabase.pool(postgres.getPort(), "ringbatch-review-s", 2, setting)) {
        for (ValueCases.Group group : ValueCases.groups()) {
          for (Mode mode : new Mode[] {Mode.COPY, Mode.COPY_LARGE, Mode.ROWS, Mode.UNNEST}) {
            List<Object> values = new ArrayList<>();
            for (ValueCases.Case c : group.cases()) {
              values.add(c.value());
            }
            Result r = write(ds, mode, "rv_set_" + group.name().replaceAll("[^a-z0-9]", "_"), group.pgType(),
                "v::text", values);
            for (int i = 0; i < group.cases().size(); i++) {
              ValueCases.Case c = group.cases().get(i);
              String expected = mode == Mode.ROWS ? c.rowsExpected() : c.expected();
              if (ValueCases.REFUSED.equals(expected) || c.array() && mode == Mode.UNNEST) {
                continue;
              }
              soft.assertThat(r.failed().get(i)).as(setting + " " + mode + " " + c + ": not failed").isNull();
              soft.assertThat(r.stored().get((long) i)).as(setting + " " + mode + " " + c + ": read back")
                  .isEqualTo(expected);
            }
          }
        }
        // a null String in unnest mode and a null element of a List, in text
        for (Mode mode : new Mode[] {Mode.COPY, Mode.COPY_LARGE, Mode.ROWS, Mode.UNNEST}) {
          Result r = write(ds, mode, "rv_set_null", "text", "coalesce(v, '<SQL NULL>')",
              List.of(ValueCases.NullValue.NULL, "NULL"));
          assertWrittenAs(soft, r, 0, setting + " " + mode + " null String", "<SQL NULL>");
          assertWrittenAs(soft, r, 1, setting + " " + mode + " the string NULL", "NULL");
        }
      }
    }
    soft.assertAll();
  }

  /**
   * search_path listing pg_catalog after public (explicitly), and a role that may create in public planting
   * public.=(bigint, bigint): the idempotent COPY sink's move joins and compares keys with an unqualified "=",
   * so the planted function runs inside every batch and decides what each caller is told.
   */
  @Test
  void idempotentMove_plantedEqualsOperator_isNotUsed() throws Exception {
    String table = "rv_op_copy_idempotent";
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS " + table,
        "CREATE TABLE " + table + " (id bigint PRIMARY KEY, v text)",
        "INSERT INTO " + table + " VALUES (1, 'there before')",
        "CREATE OR REPLACE FUNCTION public.rv_always(bigint, bigint) RETURNS boolean LANGUAGE sql"
            + " AS 'SELECT true'",
        "DROP OPERATOR IF EXISTS public.= (bigint, bigint)",
        "CREATE OPERATOR public.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = public.rv_always)");
    try (HikariDataSource ds = CopyDatabase.pool(postgres.getPort(), "ringbatch-review-op", 1,
        "SET search_path = public, pg_catalog")) {
      RecordingBatch<Row, Integer> batch = RecordingBatch.of(new Row(1, "dup"), new Row(2, "new"));
      PgCopySink<Row> sink = PgCopySink.<Row>into(ds, table).column("id", Row::id).column("v", Row::value)
          .idempotentOn("id").build();
      sink.write(batch);
      sink.close();
      System.out.println("[review] planted '=': failed=" + batch.failed() + " completed=" + batch.completed());
      SoftAssertions soft = new SoftAssertions();
      soft.assertThat(batch.completed().get(0)).as("id 1 was there: told 0").isEqualTo(0);
      soft.assertThat(batch.completed().get(1)).as("id 2 inserted: told 1").isEqualTo(1);
      soft.assertAll();
    } finally {
      CopyDatabase.exec(postgres, "DROP OPERATOR IF EXISTS public.= (bigint, bigint)");
    }
  }

  /**
   * LocalDateTime into timestamptz (accepted, as pgjdbc's setObject accepts it; the table says so): read in the
   * session's TimeZone, so what is stored depends on it, and a wall time in that zone's DST gap moves forward.
   */
  @Test
  void localDateTimeIntoTimestamptz_readInTheSessionZone() throws Exception {
    LocalDateTime gap = LocalDateTime.of(2026, 3, 8, 2, 30);
    SoftAssertions soft = new SoftAssertions();
    Map<String, String> expected = Map.of("UTC", "2026-03-08 02:30:00+00",
        "America/New_York", "2026-03-08 07:30:00+00");
    for (String zone : new String[] {"UTC", "America/New_York"}) {
      try (HikariDataSource ds = CopyDatabase.pool(postgres.getPort(), "ringbatch-review-z", 1,
          "SET TimeZone = '" + zone + "'")) {
        for (Mode mode : Mode.values()) {
          Result r = write(ds, mode, "rv_ldt_" + zone.replaceAll("[^A-Za-z]", "_").toLowerCase(), "timestamptz",
              "v::text", List.of(gap));
          assertWrittenAs(soft, r, 0, zone + " " + mode + " LocalDateTime 02:30 into timestamptz", expected.get(zone));
        }
      }
    }
    soft.assertAll();
  }

  /**
   * array_nulls = off (a database or role setting): unnest mode sends each column as an array literal with NULL
   * unquoted, so a null into a varchar / int / timestamptz column is read as the text "NULL": stored as the string
   * "NULL" (varchar) or refused with the server's "invalid input syntax" (others).
   */
  @Test
  void arrayNullsOff_nullsStoredAsNull() throws Exception {
    SoftAssertions soft = new SoftAssertions();
    try (HikariDataSource ds = CopyDatabase.pool(postgres.getPort(), "ringbatch-review-an", 1,
        "SET array_nulls = off")) {
      for (String type : new String[] {"varchar", "text", "bigint", "jsonb", "uuid"}) {
        Result r = write(ds, Mode.UNNEST, "rv_an_" + type, type, "coalesce(v::text, '<SQL NULL>')",
            java.util.Arrays.asList(ValueCases.NullValue.NULL));
        assertWrittenAs(soft, r, 0, "UNNEST null into " + type + " with array_nulls off", "<SQL NULL>");
      }
    }
    soft.assertAll();
  }

  /** BigDecimal edges PostgreSQL cannot hold: refused by the contract naming the Java type, or by the server? */
  @Test
  void bigDecimalBeyondNumeric_refusedNamingJavaType() throws Exception {
    SoftAssertions soft = new SoftAssertions();
    List<Object> values = List.of(new BigDecimal("1E-16384"), new BigDecimal("1E-200000"),
        new BigDecimal("1E+200000"), new BigDecimal("1E+131072"), new BigDecimal("2.5"));
    for (Mode mode : Mode.values()) {
      Result r = write(pool, mode, "rv_bd", "numeric", "v::text", values);
      for (int i = 0; i < 4; i++) {
        Throwable t = r.failed().get(i);
        soft.assertThat(t).as(mode + " " + values.get(i) + ": fails").isNotNull();
        if (t != null) {
          soft.assertThat(t).as(mode + " " + values.get(i) + ": refusal names the Java type")
              .hasMessageContaining("java.math.BigDecimal");
        }
      }
      assertWrittenAs(soft, r, 4, mode + " neighbour", "2.5");
    }
    soft.assertAll();
  }

  /**
   * A List of two empty Lists (a 2x0 array) has no PostgreSQL form: it is sent as {{},{}}, which PostgreSQL reads
   * as the empty array {}, told written; and int[0][0]/new int[][] {{}} alike.
   */
  @Test
  void nestedEmptyArrays_refused() throws Exception {
    SoftAssertions soft = new SoftAssertions();
    for (Mode mode : new Mode[] {Mode.COPY, Mode.COPY_LARGE, Mode.ROWS}) {
      Result r = write(pool, mode, "rv_empty2d", "int[]", "coalesce(array_ndims(v)::text, 'no dims') || ' ' || v::text",
          List.of(List.of(List.of(), List.of()), new int[][] {{}}));
      soft.assertThat(r.failed().get(0)).as(mode + " [[],[]]: refused (no exact encoding)").isNotNull();
      soft.assertThat(r.failed().get(1)).as(mode + " int[][]{{}}: refused (no exact encoding)").isNotNull();
    }
    soft.assertAll();
  }

  /** timetz with seconds offsets and a rounding to 24:00 (expected to hold). */
  @Test
  void timetzSecondsOffsetsAndRounding_hold() throws Exception {
    SoftAssertions soft = new SoftAssertions();
    for (Mode mode : Mode.values()) {
      Result r = write(pool, mode, "rv_ttz", "timetz", "v::text", List.of(
          OffsetTime.of(10, 0, 0, 0, ZoneOffset.ofHoursMinutesSeconds(0, 19, 32)),
          OffsetTime.of(10, 0, 0, 0, ZoneOffset.ofHoursMinutes(13, 45)),
          OffsetTime.of(23, 59, 59, 999_999_500, ZoneOffset.ofHoursMinutes(-3, -30))));
      assertWrittenAs(soft, r, 0, mode + " +00:19:32", "10:00:00+00:19:32");
      assertWrittenAs(soft, r, 1, mode + " +13:45", "10:00:00+13:45");
      assertWrittenAs(soft, r, 2, mode + " 23:59:59.9999995-03:30", "24:00:00-03:30");
    }
    soft.assertAll();
  }

  /**
   * docs/sinks.md: nanoseconds are "rounded to the nearest microsecond, half up, exactly as PostgreSQL rounds the
   * digits it reads". Compare with what PostgreSQL does with the same 7+ digits.
   */
  @Test
  void nanosRounding_sameAsPostgresOwn() throws Exception {
    SoftAssertions soft = new SoftAssertions();
    try (Connection c = postgres.getPostgresDatabase().getConnection(); Statement s = c.createStatement()) {
      s.execute("SET TimeZone = 'UTC'");
      for (int nanos : new int[] {500, 1_500, 2_500, 123_456_500, 999_999_500}) {
        Instant instant = Instant.parse("2026-01-01T00:00:00Z").plusNanos(nanos);
        String digits = String.format("%09d", nanos);
        try (ResultSet rs = s.executeQuery("SELECT '2026-01-01 00:00:00." + digits + "+00'::timestamptz::text, '"
            + PgValues.text("v", instant) + "'::timestamptz::text")) {
          rs.next();
          System.out.println("[review] ." + digits + ": PostgreSQL " + rs.getString(1) + ", PgValues "
              + rs.getString(2));
          soft.assertThat(rs.getString(2)).as("." + digits).isEqualTo(rs.getString(1));
        }
      }
    }
    soft.assertAll();
  }

  /** Told written, so read back exactly; or refused up front (an IllegalArgumentException), so absent. */
  private static void assertExactOrRefused(SoftAssertions soft, Result r, int i, String what, String exact) {
    if (r.failed().containsKey(i)) {
      soft.assertThat(r.failed().get(i)).as(what + ": refused up front").isInstanceOf(IllegalArgumentException.class);
      soft.assertThat(r.stored()).as(what + ": refused, so absent").doesNotContainKey((long) i);
    } else {
      soft.assertThat(r.stored().get((long) i)).as(what + ": told written, so read back exactly").isEqualTo(exact);
    }
  }

  /**
   * An array's elements by the element type, as the same value alone by the column's: a Double[] element that a
   * float4[] cannot hold was told written and stored rounded, where the Double alone into float4 is refused.
   */
  @Test
  void doubleElementsIntoFloat4Array_areCheckedAsADoubleIntoFloat4() throws Exception {
    SoftAssertions soft = new SoftAssertions();
    for (Mode mode : new Mode[] {Mode.COPY, Mode.COPY_LARGE, Mode.COPY_IDEMPOTENT}) {
      Result scalar = write(pool, mode, "rv_f4s", "float4", "v::float8::text", List.of(0.1d));
      soft.assertThat(scalar.failed()).as(mode + " Double 0.1 into float4: refused").containsKey(0);
      Result array = write(pool, mode, "rv_f4a", "float4[]", "v[1]::float8::text",
          List.of((Object) new Double[] {0.1d}, (Object) new Double[] {0.5d}));
      soft.assertThat(array.failed()).as(mode + " Double[]{0.1} into float4[]: refused").containsKey(0);
      assertWrittenAs(soft, array, 1, mode + " Double[]{0.5} into float4[]", "0.5");
    }
    soft.assertAll();
  }

  /**
   * An OffsetDateTime into timestamp stores its own wall time, with an offset of 16 h or more too; as an element of
   * a timestamp[] it was converted to UTC (another wall time), and a rows sink, which cannot tell timestamp from
   * timestamptz, did the same to a timestamp parameter: it refuses it now.
   */
  @Test
  void offsetDateTimeElementsIntoTimestampArray_storeTheirOwnWallTime() throws Exception {
    OffsetDateTime odt = OffsetDateTime.of(2020, 1, 1, 12, 0, 0, 0, ZoneOffset.ofHours(18));
    SoftAssertions soft = new SoftAssertions();
    for (Mode mode : new Mode[] {Mode.COPY, Mode.COPY_LARGE, Mode.COPY_IDEMPOTENT}) {
      Result scalar = write(pool, mode, "rv_odts", "timestamp", "v::text", List.of(odt));
      assertWrittenAs(soft, scalar, 0, mode + " " + odt + " into timestamp", "2020-01-01 12:00:00");
      Result array = write(pool, mode, "rv_odta", "timestamp[]", "v[1]::text", List.of(List.of(odt)));
      assertWrittenAs(soft, array, 0, mode + " List.of(" + odt + ") into timestamp[]", "2020-01-01 12:00:00");
    }
    Result rows = write(pool, Mode.ROWS, "rv_odts", "timestamp", "v::text", List.of(odt));
    soft.assertThat(rows.failed().get(0)).as("ROWS " + odt + " into a timestamp parameter: refused")
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("16 hours");
    soft.assertAll();
  }

  /**
   * A java.sql.Timestamp into timestamptz stores its exact instant; as an element of a timestamptz[] it was sent with
   * its Julian calendar fields before 1582, which PostgreSQL reads as Gregorian: 6 days away.
   */
  @Test
  void legacyTimestampElementsIntoTimestamptzArray_storeTheirExactInstant() throws Exception {
    Timestamp ts = Timestamp.from(Instant.parse("1000-06-01T12:00:00Z"));
    String exact = Long.toString(ts.getTime() / 1000);
    SoftAssertions soft = new SoftAssertions();
    for (Mode mode : new Mode[] {Mode.COPY, Mode.COPY_LARGE, Mode.COPY_IDEMPOTENT}) {
      Result array = write(pool, mode, "rv_tsa", "timestamptz[]", "extract(epoch from v[1])::bigint::text",
          List.of((Object) new Timestamp[] {ts}));
      assertWrittenAs(soft, array, 0, mode + " Timestamp[]{" + ts.toInstant() + "} into timestamptz[]", exact);
    }
    soft.assertAll();
  }

  /**
   * A java.sql.Date into timestamptz stores the Date's instant (its midnight in the JVM zone), as pgjdbc's setDate
   * does; it was sent as a bare date, read as midnight in the session's zone (UTC here): hours away in any other JVM
   * zone. Runs in the Amsterdam and Kolkata executions too.
   */
  @Test
  void sqlDateIntoTimestamptz_storesTheDatesInstant_asSetDateDoes() throws Exception {
    java.sql.Date date = java.sql.Date.valueOf(LocalDate.of(2026, 11, 27));
    String exact = Long.toString(date.getTime() / 1000);
    SoftAssertions soft = new SoftAssertions();
    try (Connection c = pool.getConnection();
         java.sql.PreparedStatement ps = c.prepareStatement("SELECT extract(epoch from ?::timestamptz)::bigint::text")) {
      ps.setDate(1, date);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        soft.assertThat(rs.getString(1)).as("pgjdbc's setDate stores the Date's instant").isEqualTo(exact);
      }
    }
    for (Mode mode : Mode.values()) {
      Result r = write(pool, mode, "rv_sqld", "timestamptz", "extract(epoch from v)::bigint::text", List.of(date));
      assertWrittenAs(soft, r, 0, mode + " java.sql.Date " + date + " into timestamptz", exact);
      Result d = write(pool, mode, "rv_sqldd", "date", "v::text", List.of(date));
      assertWrittenAs(soft, d, 0, mode + " java.sql.Date " + date + " into date", "2026-11-27");
    }
    soft.assertAll();
  }

  /** A value with a time of day into a date column, whose type the sink knows: refused, not cut to its date. */
  @Test
  void valueWithATimeOfDay_intoADateColumn_isRefused() throws Exception {
    SoftAssertions soft = new SoftAssertions();
    for (Mode mode : new Mode[] {Mode.COPY, Mode.COPY_LARGE, Mode.COPY_IDEMPOTENT, Mode.UNNEST}) {
      Result r = write(pool, mode, "rv_dt", "date", "v::text", List.of(LocalDateTime.of(2026, 11, 27, 23, 30),
          Instant.parse("2026-11-27T10:15:20Z"), OffsetDateTime.of(2026, 11, 27, 1, 0, 0, 0, ZoneOffset.ofHours(5)),
          Timestamp.valueOf(LocalDateTime.of(2026, 11, 27, 8, 0)), LocalDate.of(2026, 11, 27)));
      for (int i = 0; i < 4; i++) {
        soft.assertThat(r.failed().get(i)).as(mode + " value " + i + " with a time of day into date: refused")
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(column(mode))
            .hasMessageContaining("time of day");
      }
      assertWrittenAs(soft, r, 4, mode + " LocalDate into date", "2026-11-27");
    }
    soft.assertAll();
  }

  /** A refusal names the column and the value; the float4 one says what float4 would store, not the same number. */
  @Test
  void aRefusal_namesTheColumnAndTheValue() throws Exception {
    SoftAssertions soft = new SoftAssertions();
    LocalDate early = LocalDate.of(-5000, 1, 1);
    Result d = write(pool, Mode.COPY, "rv_msgd", "date", "v::text", List.of(early));
    soft.assertThat(d.failed().get(0)).as("date refusal").hasMessageContaining("'v'")
        .hasMessageContaining(early.toString());
    LocalDateTime late = LocalDateTime.of(300000, 1, 1, 0, 0);
    Result t = write(pool, Mode.COPY, "rv_msgt", "timestamp", "v::text", List.of(late));
    soft.assertThat(t.failed().get(0)).as("timestamp refusal").hasMessageContaining(late.toString());
    Result f = write(pool, Mode.COPY, "rv_msgf", "float4", "v::text", List.of(3.4028235e38d));
    soft.assertThat(f.failed().get(0)).as("float4 refusal").hasMessageContaining(Double.toString(3.4028235e38d))
        .hasMessageContaining(Double.toString((double) (float) 3.4028235e38d));
    soft.assertAll();
  }

  /**
   * An array of a domain over timestamp, timestamptz, date or float4: its elements by the domain's base type, as a
   * plain array's (the element type was once read as the domain's name, and encoded as any other type).
   */
  @Test
  void arraysOfDomains_encodeElementsByTheDomainsBaseType() throws Exception {
    CopyDatabase.exec(postgres, "DROP DOMAIN IF EXISTS rv_tsdom CASCADE", "CREATE DOMAIN rv_tsdom AS timestamp",
        "DROP DOMAIN IF EXISTS rv_tstzdom CASCADE", "CREATE DOMAIN rv_tstzdom AS timestamptz",
        "DROP DOMAIN IF EXISTS rv_f4dom CASCADE", "CREATE DOMAIN rv_f4dom AS float4",
        "DROP DOMAIN IF EXISTS rv_datedom CASCADE", "CREATE DOMAIN rv_datedom AS date");
    OffsetDateTime odt = OffsetDateTime.of(2020, 1, 1, 12, 0, 0, 0, ZoneOffset.ofHours(18));
    Timestamp ts = Timestamp.from(Instant.parse("1000-06-01T12:00:00Z"));
    SoftAssertions soft = new SoftAssertions();
    for (Mode mode : new Mode[] {Mode.COPY, Mode.COPY_LARGE, Mode.COPY_IDEMPOTENT}) {
      Result a = write(pool, mode, "rv_tsdoma", "rv_tsdom[]", "v[1]::text", List.of(List.of(odt)));
      assertExactOrRefused(soft, a, 0, mode + " " + odt + " into rv_tsdom[] (domain over timestamp)",
          "2020-01-01 12:00:00");
      Result b = write(pool, mode, "rv_tstzdoma", "rv_tstzdom[]", "extract(epoch from v[1])::bigint::text",
          List.of((Object) new Timestamp[] {ts}));
      assertExactOrRefused(soft, b, 0, mode + " Timestamp " + ts.toInstant() + " into rv_tstzdom[]",
          Long.toString(ts.getTime() / 1000));
      Result c = write(pool, mode, "rv_f4doma", "rv_f4dom[]", "v[1]::float8::text", List.of((Object) new Double[] {0.1d}));
      assertExactOrRefused(soft, c, 0, mode + " Double 0.1 into rv_f4dom[] (domain over float4)", "0.1");
      Result d = write(pool, mode, "rv_datedoma", "rv_datedom[]", "v[1]::text",
          List.of(List.of(LocalDateTime.of(2026, 11, 27, 23, 30))));
      soft.assertThat(d.failed().get(0)).as(mode + " LocalDateTime 23:30 into rv_datedom[] (domain over date):"
          + " refused as for date[], not stored as " + d.stored().get(0L)).isInstanceOf(IllegalArgumentException.class);
    }
    soft.assertAll();
  }

  /**
   * A java.sql.Date whose millis are not midnight (new java.sql.Date(millis), common) into timestamptz: stored alike
   * by every sink and mode (midnight of its date in the JVM zone, as pgjdbc's setDate), never its instant by one sink
   * and its date by another.
   */
  @Test
  void sqlDateNotAtMidnight_intoTimestamptz_isStoredAlikeByEverySink() throws Exception {
    java.sql.Date date = new java.sql.Date(Instant.parse("2026-11-27T10:15:00Z").toEpochMilli());
    Map<Mode, String> stored = new HashMap<>();
    SoftAssertions soft = new SoftAssertions();
    for (Mode mode : Mode.values()) {
      Result r = write(pool, mode, "rv_sqldn", "timestamptz", "v::text", List.of(date));
      soft.assertThat(r.failed()).as(mode.name()).isEmpty();
      stored.put(mode, r.stored().get(0L));
    }
    soft.assertThat(stored.values().stream().distinct().toList()).as("what each mode stored for java.sql.Date "
        + date + " (" + Instant.ofEpochMilli(date.getTime()) + ") in JVM " + TimeZone.getDefault().getID() + ": " + stored).hasSize(1);
    soft.assertAll();
  }

  /**
   * A java.sql.Date in a JVM zone whose midnight falls in a DST gap (America/Sao_Paulo, 2018-11-04: 00:00 -> 01:00;
   * Date.valueOf gives 01:00-02:00) into timestamptz: stored alike by every sink and mode.
   */
  @Test
  void sqlDateWhoseMidnightIsInADstGap_intoTimestamptz_isStoredAlikeByEverySink() throws Exception {
    TimeZone before = TimeZone.getDefault();
    TimeZone.setDefault(TimeZone.getTimeZone("America/Sao_Paulo"));
    try {
      java.sql.Date date = java.sql.Date.valueOf(LocalDate.of(2018, 11, 4));
      Map<Mode, String> stored = new HashMap<>();
      SoftAssertions soft = new SoftAssertions();
      for (Mode mode : Mode.values()) {
        Result r = write(pool, mode, "rv_sqldgap", "timestamptz", "v::text", List.of(date));
        soft.assertThat(r.failed()).as(mode.name()).isEmpty();
        stored.put(mode, r.stored().get(0L));
      }
      soft.assertThat(stored.values().stream().distinct().toList()).as("what each mode stored for java.sql.Date "
          + date + " (" + Instant.ofEpochMilli(date.getTime()) + ") in America/Sao_Paulo: " + stored).hasSize(1);
      soft.assertAll();
    } finally {
      TimeZone.setDefault(before);
    }
  }
}
