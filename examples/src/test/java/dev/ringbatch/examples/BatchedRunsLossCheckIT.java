package dev.ringbatch.examples;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The "lost" check of {@link BatchedRuns} (after every run the table must hold exactly the rows that run told
 * "written") against writers that really do lose or add rows. A trigger on the demo's table plays the faulty writer:
 * the arm acknowledges the row, the table does not hold it, or holds another.
 */
class BatchedRunsLossCheckIT {
  private DemoDatabase database;
  private HikariDataSource pool;
  private HikariDataSource rewriting;
  private final ByteArrayOutputStream output = new ByteArrayOutputStream();
  private final PrintStream out = new PrintStream(output, true, StandardCharsets.UTF_8);

  @BeforeEach
  void start() throws Exception {
    database = DemoDatabase.start("", "off", out);
    pool = database.pool("ringbatch-demo", 8);
    rewriting = database.pool("queue-rewrite", 1, "reWriteBatchedInserts", "true");
    DemoDatabase.execute(pool, "CREATE TABLE demo_events (id BIGINT PRIMARY KEY, caller INT NOT NULL,"
        + " payload TEXT NOT NULL CHECK (payload <> 'bad'))");
  }

  @AfterEach
  void stop() throws Exception {
    rewriting.close();
    pool.close();
    database.close();
  }

  private BatchedRuns.Result run(int rows, int warmup, int rounds) throws Exception {
    return BatchedRuns.run(new BatchedRuns.Setup(pool, rewriting, 8, 0, "platform", "copy", 1, 1, "default", null,
        JdbcDemo.BATCH_CAP, true), rows, warmup, rounds, out);
  }

  /** A BEFORE INSERT trigger on the demo's table running {@code body} (PL/pgSQL, ending in its RETURN). */
  private void trigger(String name, String body) throws Exception {
    DemoDatabase.execute(pool, "CREATE FUNCTION " + name + "() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN " + body
        + " END $$");
    DemoDatabase.execute(pool, "CREATE TRIGGER " + name + " BEFORE INSERT ON demo_events FOR EACH ROW EXECUTE FUNCTION "
        + name + "()");
  }

  /** Runs every writer once, without a warm-up, and checks none of their calls failed. */
  private BatchedRuns.Result runOnce() throws Exception {
    BatchedRuns.Result result = run(2_000, 0, 1);
    assertThat(result.ringbatch().failed + result.queueCopy().failed + result.queueRewrite().failed).isZero();
    return result;
  }

  private static long lost(BatchedRuns.Result result) {
    return result.ringbatch().lost + result.queueCopy().lost + result.queueRewrite().lost;
  }

  @Test
  void warmUp_whoseWriterSilentlyDropsAnAcknowledgedRow_isCountedAsLost() throws Exception {
    // The queue + rewrite batcher's connection (application_name queue-rewrite) loses row 3 once: in its warm-up.
    DemoDatabase.execute(pool, "CREATE TABLE dropped (id BIGINT)");
    trigger("drop_once", "IF NEW.id = 3 AND current_setting('application_name') = 'queue-rewrite'"
        + " AND NOT EXISTS (SELECT 1 FROM dropped) THEN INSERT INTO dropped VALUES (NEW.id); RETURN NULL; END IF;"
        + " RETURN NEW;");

    BatchedRuns.Result result = run(2_000, 400, 1);

    assertThat(DemoDatabase.count(pool, "SELECT count(*) FROM dropped")).as("the warm-up lost row 3").isEqualTo(1);
    assertThat(result.queueRewrite().failed).as("and acknowledged it").isZero();
    assertThat(lost(result)).as("rows lost, summed as JdbcDemo sums them into lost=").isEqualTo(1);
  }

  @Test
  void timedRound_thatLosesAnAcknowledgedRowAndHoldsARowNobodyWrote_isCountedAsLost() throws Exception {
    // Every writer's row 7 lands as row 2^41 + 7: row 7, acknowledged, is missing, and a row nobody wrote is there.
    trigger("misplace", "IF NEW.id = 7 THEN NEW.id := NEW.id + (1::bigint << 41); END IF; RETURN NEW;");

    BatchedRuns.Result result = runOnce();

    // one row missing and one extra in each of the three runs
    assertThat(lost(result)).as("rows missing from or extra in the table").isEqualTo(6);
  }

  @Test
  void timedRound_thatStoresAnotherPayloadThanTheCallerPassed_isCountedAsLost() throws Exception {
    // Every writer's row 5 is stored with another payload: present and acknowledged, but not the value passed.
    trigger("rewrite", "IF NEW.id = 5 THEN NEW.payload := 'not what was passed'; END IF; RETURN NEW;");

    BatchedRuns.Result result = runOnce();

    assertThat(lost(result)).as("one wrong row in each of the three runs").isEqualTo(3);
  }
}
