package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Proxy;
import java.sql.BatchUpdateException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * {@link JdbcBatchSink}: an error no row can cause alone (a serialization failure, a cancelled statement) met while
 * halving a batch to find a refused row fails the whole batch at once, nothing of it written, so that write() throws
 * and a RetryPolicy decides; only an error of a class one row can cause (42, 55) fails the rows a halving narrowed it
 * down to. A scripted driver: statement 1 (all rows) refuses one row without naming it, statement 2 (the first half)
 * gets a serialization failure.
 */
class JdbcBatchSinkHalvingTransientFailureTest {

  /** Statement 1 (all rows) refuses one row without naming it; statement 2 (first half) a serialization failure. */
  static final class ScriptedDriver {
    final List<Long> committed = new ArrayList<>();
    private final List<Long> transaction = new ArrayList<>();
    private final List<Long> batch = new ArrayList<>();
    private long bound;
    private boolean autoCommit = true;
    private int executions;

    DataSource dataSource() {
      return proxy(DataSource.class, (p, m, a) -> switch (m.getName()) {
        case "getConnection" -> connection();
        default -> throw new UnsupportedOperationException(m.getName());
      });
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
        case "setLong" -> {
          bound = (Long) a[1];
          yield null;
        }
        case "addBatch" -> {
          batch.add(bound);
          yield null;
        }
        case "clearBatch" -> {
          batch.clear();
          yield null;
        }
        case "clearParameters", "close", "setQueryTimeout" -> null;
        case "executeBatch" -> executeBatch();
        default -> throw new UnsupportedOperationException(m.getName());
      });
    }

    private int[] executeBatch() throws SQLException {
      try {
        executions++;
        if (executions == 1) { // as PostgreSQL: the batch aborted, no row named
          throw new BatchUpdateException("duplicate key value violates unique constraint", "23505", 0, null);
        }
        if (executions == 2) {
          throw new SQLException("could not serialize access due to concurrent update", "40001");
        }
        int[] counts = new int[batch.size()];
        for (int i = 0; i < counts.length; i++) {
          transaction.add(batch.get(i));
          counts[i] = 1;
        }
        return counts;
      } finally {
        batch.clear();
      }
    }

    private static <P> P proxy(Class<P> type, InvocationHandler handler) {
      return type.cast(Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, handler));
    }
  }

  @Test
  void serializationFailureInAHalving_withNothingCommitted_failsTheWholeBatchForARetry() {
    ScriptedDriver driver = new ScriptedDriver();
    JdbcBatchSink<Long> sink = JdbcBatchSink.of(driver.dataSource(), "INSERT INTO t (id) VALUES (?)",
        (ps, id) -> ps.setLong(1, id));
    RecordingBatch<Long, Integer> batch = RecordingBatch.of(1L, 2L, 3L, 4L);

    Throwable thrown = catchThrowable(() -> sink.write(batch));

    assertThat(thrown).as("write() threw (failed rows: %s, committed: %s)", batch.failed(), driver.committed)
        .isInstanceOf(SQLException.class).hasMessageContaining("could not serialize");
    assertThat(driver.committed).isEmpty();
  }
}
