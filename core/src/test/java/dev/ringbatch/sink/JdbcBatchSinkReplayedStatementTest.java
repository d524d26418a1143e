package dev.ringbatch.sink;

import static dev.ringbatch.sink.ScriptedJdbcDriver.lock;
import static dev.ringbatch.sink.ScriptedJdbcDriver.lost;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.ringbatch.OutcomeUnknownException;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * An idempotent arrays sink (autocommit) whose statement lost its connection before any answer writes it again on a
 * fresh connection; that statement may have committed, so a failure of the rows from then on is an unknown outcome
 * (safe to retry), never a plain failure of rows that may be in the table.
 */
class JdbcBatchSinkReplayedStatementTest {

  /**
   * Idempotent arrays (autocommit). The first statement runs and commits on the server, but its reply is lost (the
   * connection's first exchange in this batch, so it counts as "dead before the batch began"). The sink borrows another
   * connection and runs the statement again; there the table is locked (55P03), and the empty probe meets the lock too:
   * the statement is refused.
   * Every row is in the table: the batch is thrown as a safe-to-retry OutcomeUnknownException, not the lock timeout.
   */
  @Test
  void arraysIdempotent_firstReplyLostAfterCommit_thenStatementRefused_doesNotReportPlainFailure() {
    java.util.concurrent.atomic.AtomicReference<List<Long>> committed = new java.util.concurrent.atomic.AtomicReference<>();
    ScriptedJdbcDriver driver = new ScriptedJdbcDriver((n, rows) -> {
      if (n == 1) {
        committed.get().addAll(rows); // autocommit: committed on the server ...
        throw lost(); // ... and the reply is lost
      }
      throw lock(); // another session locks the table
    });
    committed.set(driver.committed);
    JdbcBatchSink<Long> sink = JdbcBatchSink.ofArrays(driver.dataSource(),
        "INSERT INTO t (id) SELECT * FROM unnest(?::bigint[]) ON CONFLICT DO NOTHING", driver.arrayBinder())
        .idempotent();
    RecordingBatch<Long, Integer> batch = RecordingBatch.of(1L, 2L, 3L, 4L);

    Throwable thrown = catchThrowable(() -> sink.write(batch));

    assertThat(driver.committed).containsExactlyInAnyOrder(1L, 2L, 3L, 4L);
    boolean toldUnknown = thrown instanceof OutcomeUnknownException
        || !batch.failed().isEmpty() && batch.failed().values().stream()
            .allMatch(e -> e instanceof OutcomeUnknownException);
    assertThat(toldUnknown).as("rows in the table, but thrown %s, failed %s (statements %s)", thrown,
        batch.failed(), driver.log).isTrue();
  }
}
