package dev.ringbatch.postgresql;

import com.zaxxer.hikari.HikariDataSource;
import dev.ringbatch.BatchSink;
import dev.ringbatch.sink.JdbcBatchSink;
import dev.ringbatch.sink.RecordingBatch;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * One row refused with a class 42 state by a trigger (as a row-level security policy or a trigger routing
 * one row to a missing table refuses it; docs/sinks.md says such a row is isolated). Only that row may fail; the
 * others must be written once.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RowRefusedWithAStatementStateIT {
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

  static BatchSink<Event, Integer> sink(String kind, HikariDataSource pool, String table) {
    return switch (kind) {
      case "copy" -> PgCopySink.<Event>into(pool, table).column("id", Event::id).column("payload", Event::payload)
          .build();
      case "rows" -> JdbcBatchSink.<Event>of(pool, "INSERT INTO " + table + " (id, payload) VALUES (?, ?)",
          (ps, e) -> {
            ps.setLong(1, e.id());
            ps.setString(2, e.payload());
          });
      case "unnest" -> PgUnnest.<Event>sink(pool, "INSERT INTO " + table
          + " (id, payload) SELECT * FROM unnest(?::bigint[], ?::text[])").column("bigint", Event::id)
          .column("text", Event::payload).build();
      default -> throw new IllegalArgumentException(kind);
    };
  }

  @ParameterizedTest(name = "{0}, {1} rows, bad row {2}")
  @CsvSource({"rows,4,0", "rows,4,3", "rows,8,2", "copy,4,0", "copy,8,2", "unnest,4,0", "unnest,8,2"})
  void oneRowRefusedWithAClass42State_onlyThatRowFails(String kind, int n, int badRow) throws Exception {
    String table = "sl_" + kind + "_" + n + "_" + badRow;
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS " + table,
        "CREATE TABLE " + table + " (id bigint PRIMARY KEY, payload text)",
        "CREATE OR REPLACE FUNCTION sl_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
            + " IF NEW.payload = 'secret' THEN RAISE EXCEPTION 'new row violates row-level security policy'"
            + " USING ERRCODE = '42501'; END IF; RETURN NEW; END $$",
        "CREATE TRIGGER sl_refuse BEFORE INSERT ON " + table + " FOR EACH ROW EXECUTE FUNCTION sl_refuse()");
    try (HikariDataSource pool = CopyDatabase.pool(postgres.getPort(), "sl-" + kind, 2)) {
      List<Event> events = IntStream.range(0, n).mapToObj(i -> new Event(i, i == badRow ? "secret" : "p" + i))
          .toList();
      RecordingBatch<Event, Integer> batch = RecordingBatch.of(events);
      Throwable thrown = null;
      try {
        sink(kind, pool, table).write(batch);
      } catch (Exception e) {
        thrown = e;
      }
      Map<Long, Integer> counts = CopyDatabase.counts(postgres, table);
      SoftAssertions soft = new SoftAssertions();
      soft.assertThat(thrown).as(kind + ": write must not throw for the whole batch over one row (counts %s)", counts).isNull();
      soft.assertThat(batch.failed()).as(kind + ": only the refused row fails").containsOnlyKeys(badRow);
      for (int i = 0; i < n; i++) {
        if (i != badRow) {
          soft.assertThat(counts.get((long) i)).as(kind + ": good row " + i + " written once").isEqualTo(1);
          soft.assertThat(batch.completed().get(i)).as(kind + ": good row " + i + " told 1").isEqualTo(1);
        }
      }
      soft.assertAll();
    }
  }
}
