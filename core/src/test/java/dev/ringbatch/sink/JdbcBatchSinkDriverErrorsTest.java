package dev.ringbatch.sink;

import static dev.ringbatch.sink.ScriptedJdbcDriver.check;
import static dev.ringbatch.sink.ScriptedJdbcDriver.lost;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.ringbatch.OutcomeUnknownException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.ExecutionException;

/**
 * {@link JdbcBatchSink} against a driver that throws an Error (pgjdbc: AssertionError on a terminated backend) from
 * rollback after part of the batch was committed, and one whose every connection is lost before any statement: rows
 * committed stay told written, write() never throws after a commit, and rows never sent are not told "unknown".
 * A scripted driver.
 */
class JdbcBatchSinkDriverErrorsTest {
  private static final String UNNEST = "INSERT INTO t (id) SELECT * FROM unnest(?::bigint[]) ON CONFLICT DO NOTHING";

  /** Wraps the scripted data source: prepareStatement loses the connection when asked, rollback throws an Error. */
  private static DataSource wrap(DataSource inner, AtomicBoolean prepareLost, AtomicBoolean rollbackError) {
    return (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(), new Class<?>[] {DataSource.class},
        (p, m, a) -> {
          if (!m.getName().equals("getConnection")) {
            throw new UnsupportedOperationException(m.getName());
          }
          Connection c = inner.getConnection();
          return Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
              (p2, m2, a2) -> {
                if (m2.getName().equals("prepareStatement") && prepareLost.get()) {
                  c.abort(Runnable::run);
                  throw lost();
                }
                if (m2.getName().equals("rollback") && rollbackError.getAndSet(false)) {
                  c.abort(Runnable::run);
                  throw new AssertionError("rollback on a terminated backend (driver assertion)");
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
   * Idempotent arrays (autocommit). The database restarted: every pooled connection is dead, and each fails at
   * prepareStatement, before any statement is sent. Nothing of the batch was ever sent, so nothing can be in the table:
   * the class Javadoc says write throws (a lost connection) for a retry policy. replaceDead's fourth loss goes to
   * unknown() instead, with sentCount 0 (no statement ran), so every row is told "outcome unknown", final per row.
   */
  @Test
  void idempotentArrays_everyConnectionLostBeforeAnyStatement_throwsLostNotUnknownPerRow() {
    ScriptedJdbcDriver driver = new ScriptedJdbcDriver((n, rows) -> { });
    JdbcBatchSink<Long> sink = JdbcBatchSink.ofArrays(wrap(driver.dataSource(), new AtomicBoolean(true),
        new AtomicBoolean()), UNNEST, driver.arrayBinder()).idempotent();
    RecordingBatch<Long, Integer> batch = RecordingBatch.of(1L, 2L, 3L, 4L);

    Throwable thrown = catchThrowable(() -> sink.write(batch));

    assertThat(driver.log).as("no statement was ever executed").isEmpty();
    assertThat(batch.failed()).as("rows never sent, told per row (thrown %s)", thrown).isEmpty();
    assertThat(thrown).isInstanceOfSatisfying(SQLException.class, e -> assertThat(e.getSQLState()).startsWith("08"))
        .isNotInstanceOf(OutcomeUnknownException.class);
  }

  /**
   * Rows sink. Row 4 breaks a check (unnamed: halving). [1,2] is committed and told written. [3,4] meets a terminated
   * backend: the driver throws an AssertionError (the case writeOnce's comment names for pgjdbc), and so does the
   * rollback on that dead connection. BatchConnection.rollback catches only SQLException and RuntimeException: the
   * Error escapes write() after rows 1 and 2 were committed, and the batcher voids their recorded success.
   */
  @Test
  void rows_errorFromRollbackAfterACommit_mustNotEscapeWrite() {
    AtomicBoolean rollbackError = new AtomicBoolean();
    ScriptedJdbcDriver driver = new ScriptedJdbcDriver((n, rows) -> {
      if (n == 1) {
        throw check();
      }
      if (rows.contains(3L)) {
        rollbackError.set(true);
        throw new AssertionError("executeBatch on a terminated backend (driver assertion)");
      }
    });
    JdbcBatchSink<Long> sink = JdbcBatchSink.of(wrap(driver.dataSource(), new AtomicBoolean(), rollbackError),
        "INSERT INTO t (id) VALUES (?)", driver.rowBinder());
    RecordingBatch<Long, Integer> batch = RecordingBatch.of(1L, 2L, 3L, 4L);

    Throwable thrown = catchThrowable(() -> sink.write(batch));

    assertThat(driver.committed).containsExactly(1L, 2L);
    assertThat(batch.completed()).containsOnlyKeys(0, 1);
    assertThat(thrown).as("write threw after rows 1, 2 were committed (statements %s)", driver.log).isNull();
    assertThat(batch.failed()).containsOnlyKeys(2, 3);
  }

  /** The same, through a batcher: rows 1 and 2 are in the table, and their callers must be told written. */
  @Test
  void rows_errorFromRollbackAfterACommit_throughABatcher_committedRowsToldFailed() throws Exception {
    AtomicBoolean rollbackError = new AtomicBoolean();
    ScriptedJdbcDriver driver = new ScriptedJdbcDriver((n, rows) -> {
      if (n == 1) {
        throw check();
      }
      if (rows.contains(3L)) {
        rollbackError.set(true);
        throw new AssertionError("executeBatch on a terminated backend (driver assertion)");
      }
    });
    JdbcBatchSink<Long> sink = JdbcBatchSink.of(wrap(driver.dataSource(), new AtomicBoolean(), rollbackError),
        "INSERT INTO t (id) VALUES (?)", driver.rowBinder());
    Batcher<Long, Integer> batcher = Batcher.of("revI", BatcherConfig.builder().ringSize(16).maxBatchSize(4)
        .linger(Duration.ofSeconds(30)).build(), sink);
    List<CompletableFuture<Integer>> futures = List.of(batcher.submit(1L), batcher.submit(2L), batcher.submit(3L),
        batcher.submit(4L));
    Throwable first = null;
    try {
      futures.get(0).get(10, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      first = e.getCause();
    }
    futures.forEach(f -> f.handle((r, e) -> null).join());
    batcher.close(Duration.ofSeconds(5));
    synchronized (driver) {
      assertThat(driver.committed).containsExactly(1L, 2L);
    }
    assertThat(first).as("row 1 is in the table; its caller was told (statements %s)", driver.log).isNull();
  }
}
