package dev.ringbatch.postgresql;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.ringbatch.sink.JdbcBatchSink;
import dev.ringbatch.sink.RecordingBatch;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Arrays;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Unnest mode writes every common PostgreSQL type (uuid, jsonb, timestamptz, numeric, bytea, text, NULLs): each
 * value is sent as its text by the {@link PgValues} contract, which the server reads with the array's element type;
 * a text with a NUL, which PostgreSQL cannot store, fails its row alone.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class JdbcUnnestTypesIT {
  private static EmbeddedPostgres postgres;
  private static HikariDataSource pool;

  record Flagged(long id, Object flag) {}

  record Row(long id, UUID uuid, String json, OffsetDateTime at, BigDecimal amount, byte[] bytes, String text) {}

  @BeforeAll
  static void start() throws Exception {
    postgres = EmbeddedPostgres.builder().start();
    CopyDatabase.exec(postgres, "CREATE TABLE flags (id BIGINT NOT NULL, t TEXT, j JSONB)");
    CopyDatabase.exec(postgres, "CREATE TABLE typed (id bigint PRIMARY KEY, u uuid, j jsonb, at timestamptz,"
        + " amount numeric, b bytea, t text)");
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl("jdbc:postgresql://localhost:" + postgres.getPort() + "/postgres?user=postgres");
    config.setMaximumPoolSize(1);
    pool = new HikariDataSource(config);
  }

  @AfterAll
  static void stop() throws Exception {
    pool.close();
    postgres.close();
  }

  @Test
  void everyCommonType_andNulls_roundTrip_andATextWithNulFailsItsRowAlone() throws Exception {
    JdbcBatchSink<Row> sink = PgUnnest.<Row>sink(pool, "INSERT INTO typed SELECT * FROM unnest(?::bigint[],"
            + " ?::uuid[], ?::jsonb[], ?::timestamptz[], ?::numeric[], ?::bytea[], ?::text[])")
        .column("bigint", Row::id).column("uuid", Row::uuid).column("jsonb", Row::json)
        .column("timestamptz", Row::at).column("numeric", Row::amount).column("bytea", Row::bytes)
        .column("text", Row::text).build();
    Row full = new Row(1, UUID.fromString("3f2504e0-4f89-11d3-9a0c-0305e82c3301"), "{\"k\": [1, \"v\"]}",
        OffsetDateTime.of(2026, 11, 25, 13, 14, 15, 123_456_000, ZoneOffset.ofHours(2)),
        new BigDecimal("12345678901234567890.000000001"), new byte[] {0, 1, (byte) 0xff, '\\', '"', ','},
        "tab\t, quote\" backslash\\ {braces} NULL");
    Row nulls = new Row(2, null, null, null, null, null, null);
    Row nul = new Row(3, UUID.randomUUID(), "{}", OffsetDateTime.now(ZoneOffset.UTC), BigDecimal.ONE, new byte[0],
        "a\u0000b");
    Row exponent = new Row(4, UUID.randomUUID(), "[]", OffsetDateTime.now(ZoneOffset.UTC), new BigDecimal("1E+3"),
        "é".getBytes(StandardCharsets.UTF_8), "");
    RecordingBatch<Row, Integer> batch = RecordingBatch.of(full, nulls, nul, exponent);

    sink.write(batch);

    assertThat(batch.completed()).containsOnlyKeys(0, 1, 3);
    assertThat(batch.failed()).containsOnlyKeys(2);
    try (Connection c = pool.getConnection(); Statement s = c.createStatement();
         ResultSet rs = s.executeQuery("SELECT id, u, j::text, at, amount, b, t FROM typed ORDER BY id")) {
      assertThat(rs.next()).isTrue();
      assertThat(rs.getObject(2, UUID.class)).isEqualTo(full.uuid());
      assertThat(rs.getString(3)).isEqualTo("{\"k\": [1, \"v\"]}");
      assertThat(rs.getObject(4, OffsetDateTime.class).toInstant()).isEqualTo(full.at().toInstant());
      assertThat(rs.getBigDecimal(5)).isEqualTo(full.amount());
      assertThat(Arrays.equals(rs.getBytes(6), full.bytes())).as("bytea round trip").isTrue();
      assertThat(rs.getString(7)).isEqualTo(full.text());
      assertThat(rs.next()).isTrue();
      assertThat(rs.getLong(1)).isEqualTo(2);
      for (int column = 2; column <= 7; column++) {
        assertThat(rs.getObject(column)).as("column %s of the NULL row", column).isNull();
      }
      assertThat(rs.next()).isTrue();
      assertThat(rs.getLong(1)).isEqualTo(4);
      assertThat(rs.getBigDecimal(5)).isEqualByComparingTo("1000");
      assertThat(rs.getBytes(6)).isEqualTo("é".getBytes(StandardCharsets.UTF_8));
      assertThat(rs.getString(7)).isEmpty();
      assertThat(rs.next()).isFalse();
    }
  }

  @Test
  void aSinkWithoutColumns_isRefusedWhenBuilt() {
    assertThatThrownBy(() -> PgUnnest.<Row>sink(pool, "INSERT ...").build())
        .isExactlyInstanceOf(IllegalStateException.class)
        .hasMessage("an unnest sink needs at least one column");
  }

  @Test
  void aBlankElementType_isRefusedWhenTheColumnIsAdded_namingTheParameter() {
    PgUnnest.Builder<Row> builder = PgUnnest.<Row>sink(pool, "INSERT ...").column("bigint", Row::id);
    assertThatThrownBy(() -> builder.column(" ", Row::text))
        .isExactlyInstanceOf(IllegalArgumentException.class)
        .hasMessage("sqlType of parameter 2 must not be blank but was ' '");
  }

  /**
   * A column's values are texts by the value contract whatever the other values of the batch: a Boolean is "true"
   * in a text and a jsonb column alike (bound as a Boolean[], pgjdbc would render '1'/'0', and a batch of only
   * Booleans would write them differently from a mixed one).
   */
  @Test
  void booleanValuesInATextOrJsonbColumn_areWrittenAsTrue_whateverTheRestOfTheBatch() throws Exception {
    JdbcBatchSink<Flagged> sink = PgUnnest.<Flagged>sink(pool,
            "INSERT INTO flags (id, t, j) SELECT * FROM unnest(?::bigint[], ?::text[], ?::jsonb[])")
        .column("bigint", Flagged::id).column("text", Flagged::flag).column("jsonb", Flagged::flag).build();

    RecordingBatch<Flagged, Integer> onlyBooleans = RecordingBatch.of(new Flagged(1, true), new Flagged(2, false));
    sink.write(onlyBooleans);
    RecordingBatch<Flagged, Integer> mixed = RecordingBatch.of(new Flagged(3, true), new Flagged(4, 7));
    sink.write(mixed);
    assertThat(onlyBooleans.failed()).isEmpty();
    assertThat(mixed.failed()).isEmpty();

    try (Connection c = pool.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(
        "SELECT string_agg(id || '=' || t || '/' || j::text, ', ' ORDER BY id) FROM flags")) {
      assertThat(rs.next()).isTrue();
      assertThat(rs.getString(1)).isEqualTo("1=true/true, 2=false/false, 3=true/true, 4=7/7");
    }
  }
}
