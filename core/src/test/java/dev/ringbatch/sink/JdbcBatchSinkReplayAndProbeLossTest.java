package dev.ringbatch.sink;

import static dev.ringbatch.sink.ScriptedJdbcDriver.check;
import static dev.ringbatch.sink.ScriptedJdbcDriver.lock;
import static dev.ringbatch.sink.ScriptedJdbcDriver.lost;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.ringbatch.OutcomeUnknownException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * An idempotent arrays sink (autocommit) that writes a statement again after its connection was lost unanswered, and
 * probes that lose their connection: rows that may be in the table are told an unknown outcome (safe to retry),
 * only those rows, never in a later batch; a loss with nothing committed throws the whole batch. A scripted driver.
 */
class JdbcBatchSinkReplayAndProbeLossTest {
  private static final String UNNEST = "INSERT INTO t (id) SELECT * FROM unnest(?::bigint[]) ON CONFLICT DO NOTHING";

  /** Wraps the scripted data source: the k-th connection borrowed fails prepareStatement with a lost connection. */
  private static DataSource prepareLostOn(DataSource inner, int k, AtomicBoolean failNextRollback) {
    AtomicInteger borrowed = new AtomicInteger();
    return (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(), new Class<?>[] {DataSource.class},
        (p, m, a) -> {
          if (!m.getName().equals("getConnection")) {
            throw new UnsupportedOperationException(m.getName());
          }
          Connection c = inner.getConnection();
          int n = borrowed.incrementAndGet();
          return Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
              (p2, m2, a2) -> {
                if (m2.getName().equals("prepareStatement") && n == k) {
                  c.abort(Runnable::run);
                  throw lost();
                }
                if (m2.getName().equals("rollback") && failNextRollback.getAndSet(false)) {
                  c.abort(Runnable::run); // the backend is killed: the rollback meets a dead connection
                  throw lost();
                }
                try {
                  return m2.invoke(c, a2);
                } catch (InvocationTargetException e) {
                  throw e.getCause();
                }
              });
        });
  }

  /**
   * Idempotent arrays. The first statement commits every row and its reply is lost (unanswered: replayed). The replay
   * meets a lock; the empty probe then loses its connection. Every row is in the table, nothing of this attempt was
   * committed: statementVerdict throws the whole batch, but as a plain lost connection, bypassing the replayed mark.
   */
  @Test
  void replayed_thenLock_thenProbeLost_mustBeOutcomeUnknown() {
    AtomicReference<List<Long>> committed = new AtomicReference<>();
    ScriptedJdbcDriver driver = new ScriptedJdbcDriver((n, rows) -> {
      if (n == 1) {
        committed.get().addAll(rows);
        throw lost();
      }
      if (n == 2) {
        throw lock();
      }
      throw lost(); // the probe's connection dies
    });
    committed.set(driver.committed);
    JdbcBatchSink<Long> sink = JdbcBatchSink.ofArrays(driver.dataSource(), UNNEST, driver.arrayBinder()).idempotent();
    RecordingBatch<Long, Integer> batch = RecordingBatch.of(1L, 2L, 3L, 4L);

    Throwable thrown = catchThrowable(() -> sink.write(batch));

    assertThat(driver.committed).containsExactlyInAnyOrder(1L, 2L, 3L, 4L);
    assertThat(batch.failed()).isEmpty();
    assertThat(thrown).as("rows in the table; thrown %s (statements %s)", thrown, driver.log)
        .isInstanceOf(OutcomeUnknownException.class);
  }

  /**
   * Idempotent arrays, batch 1..6, row 6 breaks a check. Halves: [1,2,3] written; [4,5,6] meets a lock (answered); the
   * probe loses its connection: isolate [4] / [5,6] on a fresh connection, whose prepareStatement loses it (nothing
   * sent). replaceDead marks the stale sent rows [4,5,6] replayed though no statement carrying 5 or 6 was ever lost
   * unanswered; row 6 is then refused by its check constraint, certainly not written, yet told "outcome unknown".
   */
  @Test
  void staleSentRows_markedReplayed_byALossBeforeAnyStatement() {
    ScriptedJdbcDriver driver = new ScriptedJdbcDriver((n, rows) -> {
      if (n == 1) {
        throw check();
      }
      if (n == 3) {
        throw lock(); // [4,5,6]
      }
      if (n == 4) {
        throw lost(); // the probe
      }
      if (rows.contains(6L)) {
        throw check();
      }
    });
    JdbcBatchSink<Long> sink = JdbcBatchSink.ofArrays(prepareLostOn(driver.dataSource(), 2, new AtomicBoolean()),
        UNNEST, driver.arrayBinder()).idempotent();
    RecordingBatch<Long, Integer> batch = RecordingBatch.of(1L, 2L, 3L, 4L, 5L, 6L);

    Throwable thrown = catchThrowable(() -> sink.write(batch));

    assertThat(thrown).as("statements %s", driver.log).isNull();
    assertThat(driver.committed).containsExactlyInAnyOrder(1L, 2L, 3L, 4L, 5L);
    assertThat(batch.completed()).containsOnlyKeys(0, 1, 2, 3, 4);
    assertThat(batch.failed()).containsOnlyKeys(5);
    assertThat(batch.failed().get(5)).as("row 6 was refused by its check and never in a lost statement (statements %s)",
        driver.log).isNotInstanceOf(OutcomeUnknownException.class);
  }

  /**
   * Rows sink (transactions). A lock on [1..4]; both probes meet the lock too and the last one's rollback then finds the
   * connection dead (the backend killed). The loss is kept as suppressed on the probe's failure, but
   * JdbcFailures.connectionLost does not look at suppressed errors and, the failure carrying a state, does not ask
   * isValid: the loss goes unseen, the dead connection is kept. Nothing is committed: the whole batch must be thrown
   * with no row failed for good (as when the probe itself loses the connection).
   */
  @Test
  void rows_probeRollbackLosesTheConnection_nothingCommitted_throwsWholeWithoutFailingRowsForGood() {
    AtomicBoolean failNextRollback = new AtomicBoolean();
    ScriptedJdbcDriver driver = new ScriptedJdbcDriver((n, rows) -> {
      if (n == 1) {
        throw check(); // row 4, unnamed: halving
      }
      if (n == 2) {
        throw lock(); // [1,2]
      }
      if (n == 3) {
        throw lock(); // the first probe [1]
      }
      if (n == 4) {
        failNextRollback.set(true);
        throw lock(); // the last probe [2]: its rollback meets a dead connection
      }
      if (rows.contains(4L)) {
        throw check();
      }
    });
    JdbcBatchSink<Long> sink = JdbcBatchSink.of(prepareLostOn(driver.dataSource(), -1, failNextRollback),
        "INSERT INTO t (id) VALUES (?)", driver.rowBinder());
    RecordingBatch<Long, Integer> batch = RecordingBatch.of(1L, 2L, 3L, 4L);

    Throwable thrown = catchThrowable(() -> sink.write(batch));

    assertThat(batch.failed()).as("failed for good while nothing was committed (statements %s, thrown %s)",
        driver.log, thrown).isEmpty();
    assertThat(thrown).isInstanceOfSatisfying(SQLException.class, e -> assertThat(e.getSQLState()).startsWith("08"));
  }

  /** The replayed mark must not reach the next batch: a later smaller, then larger, batch fails plainly. */
  @Test
  void replayedMark_doesNotLeakIntoLaterBatches() {
    AtomicInteger phase = new AtomicInteger();
    AtomicReference<List<Long>> committed = new AtomicReference<>();
    ScriptedJdbcDriver driver = new ScriptedJdbcDriver((n, rows) -> {
      if (phase.get() == 0) {
        if (n == 1) {
          committed.get().addAll(rows);
          throw lost();
        }
        if (rows.contains(8L)) {
          throw check();
        }
        return;
      }
      if (rows.contains(100L)) {
        throw check();
      }
    });
    committed.set(driver.committed);
    JdbcBatchSink<Long> sink = JdbcBatchSink.ofArrays(driver.dataSource(), UNNEST, driver.arrayBinder()).idempotent();
    RecordingBatch<Long, Integer> first = RecordingBatch.of(1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L);
    catchThrowable(() -> sink.write(first));
    assertThat(first.failed().get(7)).isInstanceOf(OutcomeUnknownException.class);
    assertThat(first.completed()).hasSize(7);
    phase.set(1);
    RecordingBatch<Long, Integer> smaller = RecordingBatch.of(10L, 100L);
    RecordingBatch<Long, Integer> larger = RecordingBatch.of(11L, 12L, 13L, 14L, 15L, 16L, 17L, 100L, 18L, 19L);
    assertThat(catchThrowable(() -> sink.write(smaller))).isNull();
    assertThat(catchThrowable(() -> sink.write(larger))).isNull();
    assertThat(smaller.failed()).containsOnlyKeys(1);
    assertThat(smaller.failed().get(1)).isNotInstanceOf(OutcomeUnknownException.class);
    assertThat(larger.failed()).containsOnlyKeys(7);
    assertThat(larger.failed().get(7)).isNotInstanceOf(OutcomeUnknownException.class);
    assertThat(larger.completed()).hasSize(9);
  }

  /** A replayed statement that then succeeds: every row told written once, nothing thrown. */
  @Test
  void replayed_thenSucceeds_toldWrittenOnce() {
    AtomicReference<List<Long>> committed = new AtomicReference<>();
    ScriptedJdbcDriver driver = new ScriptedJdbcDriver((n, rows) -> {
      if (n == 1) {
        throw lost();
      }
    });
    committed.set(driver.committed);
    JdbcBatchSink<Long> sink = JdbcBatchSink.ofArrays(driver.dataSource(), UNNEST, driver.arrayBinder()).idempotent();
    RecordingBatch<Long, Integer> batch = RecordingBatch.of(1L, 2L, 3L);
    assertThat(catchThrowable(() -> sink.write(batch))).isNull();
    assertThat(batch.completed()).containsOnlyKeys(0, 1, 2);
    assertThat(batch.failed()).isEmpty();
    assertThat(driver.committed).containsExactly(1L, 2L, 3L);
  }

  /** Replayed, then halving: [1,2] written, [3,4] refused with the statement (lock, probe locked): told unknown. */
  @Test
  void replayed_thenRefusedAfterAHalfWasWritten_rowsToldUnknown() {
    AtomicReference<List<Long>> committed = new AtomicReference<>();
    ScriptedJdbcDriver driver = new ScriptedJdbcDriver((n, rows) -> {
      if (n == 1) {
        committed.get().addAll(rows);
        throw lost();
      }
      if (n == 2) {
        throw check();
      }
      if (n >= 4) {
        throw lock();
      }
    });
    committed.set(driver.committed);
    JdbcBatchSink<Long> sink = JdbcBatchSink.ofArrays(driver.dataSource(), UNNEST, driver.arrayBinder()).idempotent();
    RecordingBatch<Long, Integer> batch = RecordingBatch.of(1L, 2L, 3L, 4L);
    assertThat(catchThrowable(() -> sink.write(batch))).as("statements %s", driver.log).isNull();
    assertThat(batch.completed()).containsOnlyKeys(0, 1);
    assertThat(batch.failed()).containsOnlyKeys(2, 3);
    assertThat(batch.failed().values()).allMatch(e -> e instanceof OutcomeUnknownException u && u.isSafeToRetry());
  }

  /** Replayed, and the array binder throws for row 2 on the replay: row 2 may be in the table, told unknown. */
  @Test
  void replayed_binderThrowsOnTheReplay_rowToldUnknown() {
    AtomicReference<List<Long>> committed = new AtomicReference<>();
    ScriptedJdbcDriver driver = new ScriptedJdbcDriver((n, rows) -> {
      if (n == 1) {
        committed.get().addAll(rows);
        throw lost();
      }
    });
    committed.set(driver.committed);
    AtomicInteger adds = new AtomicInteger();
    ArrayBinder<Long> inner = driver.arrayBinder();
    ArrayBinder<Long> flaky = capacity -> {
      ArrayBinder.Rows<Long> r = inner.rows(capacity);
      return new ArrayBinder.Rows<>() {
        @Override
        public void add(Long item) {
          if (item == 2L && adds.incrementAndGet() == 2) {
            throw new IllegalStateException("second bind of 2");
          }
          r.add(item);
        }

        @Override
        public void bind(Connection c, java.sql.PreparedStatement ps, boolean autoCommit) throws SQLException {
          r.bind(c, ps, autoCommit);
        }
      };
    };
    JdbcBatchSink<Long> sink = JdbcBatchSink.ofArrays(driver.dataSource(), UNNEST, flaky).idempotent();
    RecordingBatch<Long, Integer> batch = RecordingBatch.of(1L, 2L, 3L);
    assertThat(catchThrowable(() -> sink.write(batch))).as("statements %s", driver.log).isNull();
    assertThat(batch.completed()).containsOnlyKeys(0, 2);
    assertThat(batch.failed().get(1)).isInstanceOf(OutcomeUnknownException.class);
  }
}
