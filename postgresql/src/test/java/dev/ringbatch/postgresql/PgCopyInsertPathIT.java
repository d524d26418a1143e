package dev.ringbatch.postgresql;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.ringbatch.sink.RecordingBatch;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
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
 * stored must be the one a COPY of the same text stores, whatever the batch's size.
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
    Map<Long, String> stored = new HashMap<>();
    try (Connection c = postgres.getPostgresDatabase().getConnection(); Statement s = c.createStatement();
         ResultSet rs = s.executeQuery("SELECT id, a::text || ' | ' || b::text FROM " + table)) {
      while (rs.next()) {
        stored.put(rs.getLong(1), rs.getString(2));
      }
    }
    return stored;
  }

  /**
   * An interval column with fields ({@code interval year}, {@code interval minute to second}) reads its text by
   * them: COPY hands the input function the column's type modifier, and '3' is 3 years, '1:30' one minute thirty.
   * An INSERT's parameter is read without it ('3' is 3 seconds, '1:30' an hour and a half) and then cut to the
   * fields: 0 years, 01:30:00. The same item would be stored differently by a batch of 64 rows and one of 65.
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
}
