package dev.ringbatch.sink;

import static dev.ringbatch.sink.ScriptedJdbcDriver.check;
import static dev.ringbatch.sink.ScriptedJdbcDriver.lock;
import static dev.ringbatch.sink.ScriptedJdbcDriver.lost;
import static dev.ringbatch.sink.ScriptedJdbcDriver.missingTable;
import static dev.ringbatch.sink.ScriptedJdbcDriver.rls;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.sql.SQLException;
import org.junit.jupiter.api.Test;

/**
 * What a statement-level error met while halving a batch does, by what the probe can tell, in both modes: the
 * statement's (thrown for the whole batch while nothing is committed, for a RetryPolicy), or rows' (they fail alone,
 * the others are written). A scripted driver.
 */
class JdbcBatchSinkProbeVerdictTest {

  /**
   * Arrays mode. Row 2 breaks a check without being named; the halving tries row 1 alone and meets a lock timeout
   * on the table (another session's LOCK TABLE), which is still there for the next statement. An arrays sink's probe
   * without any row meets it too, so the statement is refused and nothing is committed: write() throws for the whole
   * batch, and row 1 is not failed for good.
   */
  @Test
  void arrays_lockTimeoutOnASingleRowOfAHalving_nothingCommitted_throwsWithoutFailingTheRowForGood() {
    ScriptedJdbcDriver driver = new ScriptedJdbcDriver((n, rows) -> {
      if (n == 1) {
        throw check(); // row 2, not named
      }
      if (n == 2 || n == 3) {
        throw lock(); // the table is locked by another session, then the lock goes
      }
      if (rows.contains(2L)) {
        throw check();
      }
    });
    JdbcBatchSink<Long> sink = JdbcBatchSink.ofArrays(driver.dataSource(),
        "INSERT INTO t (id) SELECT * FROM unnest(?::bigint[])", driver.arrayBinder());
    RecordingBatch<Long, Integer> batch = RecordingBatch.of(1L, 2L);

    Throwable thrown = catchThrowable(() -> sink.write(batch));

    assertThat(batch.failed()).as("rows failed for good while nothing was committed (statements %s, thrown %s)",
        driver.log, thrown).isEmpty();
    assertThat(thrown).isInstanceOf(SQLException.class).hasMessageContaining("lock timeout");
  }

  /**
   * Rows mode, the same lock met during a halving (two rows in the half): the probe (first row, then last) meets it
   * too and cannot tell the statement's error from the rows'. Those rows fail alone (told failed: not written), the
   * rest is written, and it costs a handful of statements, not a halving of lock waits down to single rows.
   */
  @Test
  void rows_lockTimeoutDuringAHalving_failsTheRowsTheProbeCouldNotClear_inAFewStatements() {
    ScriptedJdbcDriver driver = new ScriptedJdbcDriver((n, rows) -> {
      if (n == 1) {
        throw check(); // row 4, not named
      }
      if (n >= 2 && n <= 4) {
        throw lock(); // the first half, then both probes; then the lock goes
      }
      if (rows.contains(4L)) {
        throw check();
      }
    });
    JdbcBatchSink<Long> sink = JdbcBatchSink.of(driver.dataSource(), "INSERT INTO t (id) VALUES (?)",
        driver.rowBinder());
    RecordingBatch<Long, Integer> batch = RecordingBatch.of(1L, 2L, 3L, 4L);

    Throwable thrown = catchThrowable(() -> sink.write(batch));

    assertThat(thrown).as("statements %s", driver.log).isNull();
    assertThat(batch.failed()).as("statements %s", driver.log).containsOnlyKeys(0, 1, 3);
    assertThat(driver.committed).containsExactly(3L);
    assertThat(batch.completed()).containsOnlyKeys(2);
    assertThat(driver.log.stream().filter(line -> line.matches("\\d+:c\\d+:.*"))).as("statements %s", driver.log)
        .hasSizeLessThanOrEqualTo(7); // the batch, the half, its two probes, the other half, and its two rows
  }

  /**
   * Rows mode, a missing table (42P01) with the connection lost during the probe: nothing is committed, so the whole
   * batch is thrown (as a missing table is), no half of it failed for good.
   */
  @Test
  void rows_missingTable_connectionLostInTheProbe_throwsWithoutFailingHalfTheBatchForGood() {
    ScriptedJdbcDriver driver = new ScriptedJdbcDriver((n, rows) -> {
      if (n == 2) {
        throw lost(); // the probe's connection dies
      }
      throw missingTable();
    });
    JdbcBatchSink<Long> sink = JdbcBatchSink.of(driver.dataSource(), "INSERT INTO t (id) VALUES (?)",
        driver.rowBinder());
    RecordingBatch<Long, Integer> batch = RecordingBatch.of(1L, 2L, 3L, 4L);

    Throwable thrown = catchThrowable(() -> sink.write(batch));

    assertThat(thrown).as("statements %s", driver.log).isInstanceOf(SQLException.class);
    assertThat(batch.failed()).as("rows failed for good before the batch was thrown (statements %s)", driver.log)
        .isEmpty();
  }

  /** an arrays batch whose whole table is locked throws, nothing failed for good. */
  @Test
  void arrays_tableLocked_throwsWhole() {
    ScriptedJdbcDriver driver = new ScriptedJdbcDriver((n, rows) -> {
      throw lock();
    });
    JdbcBatchSink<Long> sink = JdbcBatchSink.ofArrays(driver.dataSource(),
        "INSERT INTO t (id) SELECT * FROM unnest(?::bigint[])", driver.arrayBinder());
    RecordingBatch<Long, Integer> batch = RecordingBatch.of(1L, 2L, 3L, 4L);

    Throwable thrown = catchThrowable(() -> sink.write(batch));

    assertThat(thrown).as("statements %s", driver.log).hasMessageContaining("lock timeout");
    assertThat(batch.failed()).isEmpty();
  }

  /**
   * Idempotent arrays (autocommit), a lock timeout, then the probe's connection lost: nothing is committed, so the
   * whole batch is thrown with the lost connection (a RetryPolicy writes it again), no row failed for good.
   */
  @Test
  void arraysIdempotent_lockThenProbeLost_nothingCommitted_throwsTheWholeBatch() {
    ScriptedJdbcDriver driver = new ScriptedJdbcDriver((n, rows) -> {
      if (n == 1) {
        throw lock();
      }
      if (n == 2) {
        throw lost();
      }
    });
    JdbcBatchSink<Long> sink = JdbcBatchSink.ofArrays(driver.dataSource(),
        "INSERT INTO t (id) SELECT * FROM unnest(?::bigint[]) ON CONFLICT DO NOTHING", driver.arrayBinder())
        .idempotent();
    RecordingBatch<Long, Integer> batch = RecordingBatch.of(1L, 2L, 3L, 4L);

    Throwable thrown = catchThrowable(() -> sink.write(batch));

    assertThat(thrown).as("statements %s", driver.log).isInstanceOfSatisfying(java.sql.SQLException.class,
        e -> assertThat(e.getSQLState()).startsWith("08"));
    assertThat(driver.committed).isEmpty();
    assertThat(batch.failed()).isEmpty();
  }

  /**
   * Rows mode: an error no row can cause alone (a serialization failure) met by the first half of a halving, with
   * nothing committed, fails the whole batch at once so that a RetryPolicy decides; it never fails rows for good.
   */
  @Test
  void serializationFailureInAHalving_withNothingCommitted_failsTheWholeBatchForARetry() {
    ScriptedJdbcDriver driver = new ScriptedJdbcDriver((n, rows) -> {
      if (n == 1) {
        throw check(); // one row refused, not named
      }
      if (n == 2) {
        throw new SQLException("could not serialize access due to concurrent update", "40001");
      }
    });
    JdbcBatchSink<Long> sink = JdbcBatchSink.of(driver.dataSource(), "INSERT INTO t (id) VALUES (?)",
        driver.rowBinder());
    RecordingBatch<Long, Integer> batch = RecordingBatch.of(1L, 2L, 3L, 4L);

    Throwable thrown = catchThrowable(() -> sink.write(batch));

    assertThat(thrown).as("write() threw (failed rows: %s, committed: %s)", batch.failed(), driver.committed)
        .isInstanceOf(SQLException.class).hasMessageContaining("could not serialize");
    assertThat(driver.committed).isEmpty();
  }

  /**
   * Arrays mode: row 4 breaks a check without being named; the first half, then the probe without any row, meet a
   * lock timeout: the statement itself is refused and nothing is committed, so write() throws for the whole batch.
   */
  @Test
  void lockTimeoutInAHalving_confirmedByAnEmptyProbe_withNothingCommitted_failsTheWholeBatchForARetry() {
    ScriptedJdbcDriver driver = new ScriptedJdbcDriver((n, rows) -> {
      if (n == 1 || rows.contains(4L) && n > 3) {
        throw check(); // row 4, every time
      }
      if (n == 2 || n == 3) {
        throw lock(); // the first half, then the probe with no rows; then the lock goes
      }
    });
    JdbcBatchSink<Long> sink = JdbcBatchSink.ofArrays(driver.dataSource(),
        "INSERT INTO t (id) SELECT * FROM unnest(?::bigint[])", driver.arrayBinder());
    RecordingBatch<Long, Integer> batch = RecordingBatch.of(1L, 2L, 3L, 4L);

    Throwable thrown = catchThrowable(() -> sink.write(batch));

    assertThat(thrown).as("write() threw: nothing was committed when the lock timeout came, and the probe without"
            + " rows showed the statement itself refused (statements %s; rows failed for good: %s; committed: %s)",
            driver.log, batch.failed(), driver.committed)
        .isInstanceOf(SQLException.class).hasMessageContaining("lock timeout");
  }
}
