package dev.ringbatch.postgresql;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.ringbatch.sink.RecordingBatch;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.sql.SQLException;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Names another session or a table can play with: the idempotent sink's staging table is its session's own
 * whatever the search_path, and a table named like a line of COPY's error context does not blame the wrong row;
 * and the session state a salvage leaves: one savepoint at a time, whatever the number of refused rows.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PgCopyNamesIT {
  private static EmbeddedPostgres postgres;
  private static HikariDataSource pool;

  record Event(long id, String payload) {}

  @BeforeAll
  static void start() throws Exception {
    postgres = EmbeddedPostgres.builder().start();
    // public first: a table planted there under the staging table's name would win over pg_temp's
    pool = CopyDatabase.pool(postgres.getPort(), "ringbatch-names", 2, "SET search_path = public, pg_temp");
  }

  @AfterAll
  static void stop() throws Exception {
    pool.close();
    postgres.close();
  }

  @Test
  void idempotentStagingTable_plantedInPublicUnderItsName_receivesNothing_andAddsNothing() throws Exception {
    CopyDatabase.exec(postgres, "CREATE TABLE captured (id bigint PRIMARY KEY, payload text NOT NULL)");
    // The name the staging table had: predictable from the table and its columns
    String stage = "ringbatch_stage_" + Integer.toUnsignedString("captured(id, payload)".hashCode(), 36);
    CopyDatabase.exec(postgres, "CREATE TABLE public." + stage + " (id bigint, payload text, ringbatch_row int)",
        "INSERT INTO public." + stage + " VALUES (999, 'planted', 0)", "GRANT ALL ON public." + stage + " TO PUBLIC");
    PgCopySink<Event> sink = PgCopySink.<Event>into(pool, "captured").column("id", Event::id)
        .column("payload", Event::payload).idempotentOn("id").build();
    RecordingBatch<Event, Integer> batch = RecordingBatch.of(new Event(1, "a"), new Event(2, "b"), new Event(3, "c"));

    sink.write(batch);

    assertThat(batch.failed()).isEmpty();
    assertThat(batch.completed()).containsOnlyKeys(0, 1, 2).allSatisfy((i, r) -> assertThat(r).isEqualTo(1));
    assertThat(CopyDatabase.counts(postgres, "captured")).containsOnlyKeys(1L, 2L, 3L);
    assertThat(CopyDatabase.queryLong(postgres, "SELECT count(*) FROM public." + stage)).as("planted table").isOne();
  }

  @Test
  void tableNamedLikeALineOfTheErrorContext_refusedRowFailsAlone_goodRowsWritten() throws Exception {
    CopyDatabase.exec(postgres, "CREATE TABLE \"ev, line 1\" (id bigint, payload text NOT NULL)");
    PgCopySink<Event> sink = PgCopySink.<Event>into(pool, "\"ev, line 1\"").column("id", Event::id)
        .column("payload", Event::payload).build();
    List<Event> events = Arrays.asList(new Event(0, "a"), new Event(1, "b"), new Event(2, "c"), new Event(3, null),
        new Event(4, "e"));
    RecordingBatch<Event, Integer> batch = RecordingBatch.of(events);

    sink.write(batch);

    assertThat(batch.failed()).containsOnlyKeys(3);
    assertThat(((SQLException) batch.failed().get(3)).getSQLState()).isEqualTo("23502");
    assertThat(batch.completed()).containsOnlyKeys(0, 1, 2, 4);
    assertThat(CopyDatabase.counts(postgres, "\"ev, line 1\"")).containsOnlyKeys(0L, 1L, 2L, 4L);
  }

  /**
   * The salvage of k refused rows keeps at most one savepoint open: k nested ones would pass PostgreSQL's cache of 64
   * subtransactions per backend (an overflow that slows every snapshot, on replicas too). A trigger records the most
   * subtransactions with an id this backend held while copying, in a sequence (not rolled back).
   */
  @Test
  void manyRefusedRows_salvagedWithoutNestingASavepointPerRow() throws Exception {
    CopyDatabase.exec(postgres, "CREATE SEQUENCE most_subxacts MINVALUE 0 START 0",
        "CREATE TABLE salvaged (id bigint, payload text NOT NULL CHECK (payload <> 'bad'))",
        "CREATE FUNCTION count_subxacts() RETURNS trigger LANGUAGE plpgsql AS $$ DECLARE n int; BEGIN"
            + " PERFORM pg_stat_clear_snapshot();"
            + " SELECT s.subxact_count INTO n FROM pg_stat_get_backend_idset() b,"
            + " LATERAL pg_stat_get_backend_subxact(b) s WHERE pg_stat_get_backend_pid(b) = pg_backend_pid();"
            + " IF n > (SELECT last_value FROM most_subxacts) THEN PERFORM setval('most_subxacts', n); END IF;"
            + " RETURN NEW; END $$",
        "CREATE TRIGGER count_subxacts BEFORE INSERT ON salvaged FOR EACH ROW EXECUTE FUNCTION count_subxacts()");
    PgCopySink<Event> sink = PgCopySink.<Event>into(pool, "salvaged").column("id", Event::id)
        .column("payload", Event::payload).build();
    List<Event> events = new java.util.ArrayList<>();
    for (int i = 0; i < 300; i++) {
      events.add(new Event(i, i % 3 == 1 ? "bad" : "p" + i)); // 100 refused rows, each after a good one
    }
    RecordingBatch<Event, Integer> batch = RecordingBatch.of(events);

    sink.write(batch);

    assertThat(batch.failed()).hasSize(100);
    assertThat(batch.completed()).hasSize(200);
    assertThat(CopyDatabase.queryLong(postgres, "SELECT last_value FROM most_subxacts")).as("most subtransactions")
        .isLessThanOrEqualTo(2);
  }
}
