package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Proxy;
import java.sql.BatchUpdateException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link JdbcBatchSink} against a driver that, like Derby, HSQLDB or SQLite, stops a JDBC batch at its first
 * refused row and reports the update counts of the rows before it ({@link JdbcFailures#culprit} handles that
 * case). Each refused row found that way costs one more level of {@code writeRows -> isolate -> writeRows}
 * recursion, so a batch with a few thousand refused rows (a replay of rows already in the table) overflows the
 * consumer thread's stack. The StackOverflowError is then caught as if a binder or the driver had thrown it:
 * rows fail with it, or write() throws it, and rows committed earlier in the same write are told failed.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class JdbcBatchSinkFirstFailureDriverTest {

  /** A fake driver over one "table" of ids; ids below {@code refusedBelow} are duplicates it refuses. */
  static final class FirstFailureDriver {
    final long refusedBelow;
    final List<Long> committed = new ArrayList<>();
    private final List<Long> transaction = new ArrayList<>();
    private final List<Long> batch = new ArrayList<>();
    private long bound;
    private boolean autoCommit = true;

    FirstFailureDriver(long refusedBelow) {
      this.refusedBelow = refusedBelow;
    }

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
        case "clearParameters", "close" -> null;
        case "executeBatch" -> executeBatch();
        default -> throw new UnsupportedOperationException(m.getName());
      });
    }

    private int[] executeBatch() throws SQLException {
      int[] counts = new int[batch.size()];
      try {
        for (int i = 0; i < counts.length; i++) {
          long id = batch.get(i);
          if (id < refusedBelow) {
            throw new BatchUpdateException("duplicate key " + id, "23505", 0, Arrays.copyOf(counts, i));
          }
          transaction.add(id);
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
  void manyRefusedRows_eachFailsWithTheDatabaseError_theRestAreWritten() throws Exception {
    int refused = 20_000;
    int good = 10;
    FirstFailureDriver driver = new FirstFailureDriver(refused);
    JdbcBatchSink<Long> sink = JdbcBatchSink.of(driver.dataSource(), "INSERT INTO t (id) VALUES (?)",
        (ps, id) -> ps.setLong(1, id));
    Long[] ids = new Long[refused + good];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = (long) i;
    }
    RecordingBatch<Long, Integer> batch = RecordingBatch.of(ids);

    // On a thread with the default stack size, as the batcher's consumer thread is (DisruptorBatcher: new Thread).
    CompletableFuture<Throwable> thrown = new CompletableFuture<>();
    Thread consumer = new Thread(() -> {
      try {
        sink.write(batch);
        thrown.complete(null);
      } catch (Throwable t) {
        thrown.complete(t);
      }
    }, "consumer");
    consumer.start();

    assertThat(thrown.get(100, TimeUnit.SECONDS)).as("write() threw").isNull(); // actually StackOverflowError
    assertThat(batch.failed()).hasSize(refused).allSatisfy((row, e) -> assertThat(e)
        .isInstanceOf(SQLException.class).hasMessageContaining("duplicate key " + row));
    assertThat(batch.completed()).hasSize(good);
    assertThat(driver.committed).hasSize(good);
  }
}
