package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * {@link JdbcBatchSink} in arrays mode, halving a batch (one row refused without being named), meets a lock timeout
 * (55P03: another session's lock on the table) on the first half, and the probe with empty arrays meets it too: the
 * statement itself is refused, whatever the rows, and nothing is committed, so write() throws for the whole batch and
 * a RetryPolicy decides, rather than failing the half's rows for good with a class ("55") one row could cause.
 */
class JdbcBatchSinkHalvingLockTimeoutTest {

  /** Row 4 breaks a check; statement 2 (first half) and 3 (the empty probe) meet a lock timeout, then the lock goes. */
  static final class ScriptedDriver {
    final List<Long> committed = new ArrayList<>();
    final List<String> log = new ArrayList<>();
    private final List<Long> transaction = new ArrayList<>();
    private List<Long> bound = List.of();
    private boolean autoCommit = true;
    private int executions;

    DataSource dataSource() {
      return proxy(DataSource.class, (p, m, a) -> switch (m.getName()) {
        case "getConnection" -> connection();
        default -> throw new UnsupportedOperationException(m.getName());
      });
    }

    ArrayBinder<Long> binder() {
      return capacity -> new ArrayBinder.Rows<>() {
        private final List<Long> rows = new ArrayList<>();

        @Override
        public void add(Long item) {
          rows.add(item);
        }

        @Override
        public void bind(Connection c, PreparedStatement ps, boolean autoCommit) {
          bound = List.copyOf(rows);
        }
      };
    }

    private Connection connection() {
      return proxy(Connection.class, (p, m, a) -> switch (m.getName()) {
        case "getAutoCommit" -> autoCommit;
        case "setAutoCommit" -> {
          autoCommit = (Boolean) a[0];
          yield null;
        }
        case "prepareStatement" -> statement();
        case "commit" -> {
          committed.addAll(transaction);
          transaction.clear();
          yield null;
        }
        case "rollback" -> {
          transaction.clear();
          yield null;
        }
        case "isValid" -> true;
        case "isClosed" -> false;
        case "close" -> null;
        default -> throw new UnsupportedOperationException(m.getName());
      });
    }

    private PreparedStatement statement() {
      return proxy(PreparedStatement.class, (p, m, a) -> switch (m.getName()) {
        case "execute" -> execute();
        case "getUpdateCount" -> -1;
        case "getMoreResults" -> false;
        case "clearParameters", "clearBatch", "close", "setQueryTimeout" -> null;
        default -> throw new UnsupportedOperationException(m.getName());
      });
    }

    private boolean execute() throws SQLException {
      executions++;
      log.add(executions + ":" + bound);
      if (executions == 1 || bound.contains(4L) && executions > 3) { // row 4 breaks a check, every time
        throw new SQLException("new row violates check constraint", "23514");
      }
      if (executions == 2 || executions == 3) { // the first half, then the probe with no rows
        throw new SQLException("canceling statement due to lock timeout", "55P03");
      }
      transaction.addAll(bound); // the lock is gone
      return false;
    }

    private static <P> P proxy(Class<P> type, InvocationHandler handler) {
      return type.cast(Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, handler));
    }
  }

  @Test
  void lockTimeoutInAHalving_confirmedByAnEmptyProbe_withNothingCommitted_failsTheWholeBatchForARetry() {
    ScriptedDriver driver = new ScriptedDriver();
    JdbcBatchSink<Long> sink = JdbcBatchSink.ofArrays(driver.dataSource(),
        "INSERT INTO t (id) SELECT * FROM unnest(?::bigint[])", driver.binder());
    RecordingBatch<Long, Integer> batch = RecordingBatch.of(1L, 2L, 3L, 4L);

    Throwable thrown = catchThrowable(() -> sink.write(batch));

    assertThat(thrown).as("write() threw: nothing was committed when the lock timeout came, and the probe without"
            + " rows showed the statement itself refused (statements %s; rows failed for good: %s; committed: %s)",
            driver.log, batch.failed(), driver.committed)
        .isInstanceOf(SQLException.class).hasMessageContaining("lock timeout");
  }
}
