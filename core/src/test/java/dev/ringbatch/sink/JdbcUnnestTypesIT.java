package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
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

  record Row(long id, UUID uuid, String json, OffsetDateTime at, BigDecimal amount, byte[] bytes, String text) {}

  @BeforeAll
  static void start() throws Exception {
    postgres = EmbeddedPostgres.builder().start();
    PostgresSql.exec(postgres, "CREATE TABLE typed (id bigint PRIMARY KEY, u uuid, j jsonb, at timestamptz,"
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
    JdbcBatchSink<Row> sink = JdbcBatchSink.<Row>unnest(pool, "INSERT INTO typed SELECT * FROM unnest(?::bigint[],"
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
}
