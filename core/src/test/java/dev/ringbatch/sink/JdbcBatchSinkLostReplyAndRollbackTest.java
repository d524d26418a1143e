package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.OutcomeUnknownException;
import dev.ringbatch.RetryPolicy;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Proxy;
import java.sql.BatchUpdateException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Review findings, with a fake driver that, like H2, goes on after a refused row and marks it EXECUTE_FAILED, and that
 * can lose a COMMIT reply (after committing), refuse new connections, or fail a rollback.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class JdbcBatchSinkLostReplyAndRollbackTest {

  static final class Driver {
    final Set<Long> refused;
    final List<Long> committed = new CopyOnWriteArrayList<>();
    volatile int commitReplyLosses;
    volatile int refuseConnectionNumber; // the n-th getConnection (1-based) is refused; 0: none
    int connections;
    volatile int rollbackFailures;

    Driver(Set<Long> refused) {
      this.refused = refused;
    }

    DataSource dataSource() {
      return proxy(DataSource.class, (p, m, a) -> switch (m.getName()) {
        case "getConnection" -> {
          if (++connections == refuseConnectionNumber) {
            throw new SQLException("Connection refused", "08001");
          }
          yield new Conn().proxy();
        }
        default -> throw new UnsupportedOperationException(m.getName());
      });
    }

    final class Conn {
      final List<Long> tx = new ArrayList<>();
      final List<Long> batch = new ArrayList<>();
      long bound;
      boolean autoCommit = true;
      boolean dead;

      Connection proxy() {
        return Driver.proxy(Connection.class, (p, m, a) -> switch (m.getName()) {
          case "getAutoCommit" -> autoCommit;
          case "setAutoCommit" -> {
            autoCommit = (Boolean) a[0];
            yield null;
          }
          case "prepareStatement" -> statement();
          case "commit" -> {
            committed.addAll(tx); // the server commits...
            tx.clear();
            if (commitReplyLosses > 0) {
              commitReplyLosses--;
              dead = true; // ...and the reply is lost with the connection
              throw new SQLException("An I/O error occurred while sending to the backend", "08006");
            }
            yield null;
          }
          case "rollback" -> {
            if (rollbackFailures > 0) {
              rollbackFailures--;
              throw new SQLException("rollback failed", "HY000");
            }
            tx.clear();
            yield null;
          }
          case "isValid" -> !dead;
          case "isClosed" -> dead;
          case "close" -> null;
          default -> throw new UnsupportedOperationException(m.getName());
        });
      }

      PreparedStatement statement() {
        return Driver.proxy(PreparedStatement.class, (p, m, a) -> switch (m.getName()) {
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

      int[] executeBatch() throws SQLException {
        if (dead) {
          throw new SQLException("This connection has been closed.", "08003");
        }
        int[] counts = new int[batch.size()];
        boolean failed = false;
        for (int i = 0; i < counts.length; i++) {
          long id = batch.get(i);
          if (refused.contains(id)) {
            counts[i] = Statement.EXECUTE_FAILED;
            failed = true;
          } else {
            tx.add(id);
            counts[i] = 1;
          }
        }
        batch.clear();
        if (failed) {
          throw new BatchUpdateException("check constraint violated", "23513", 0, counts);
        }
        return counts;
      }
    }

    static <P> P proxy(Class<P> type, InvocationHandler handler) {
      return type.cast(Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, handler));
    }
  }

  private static JdbcBatchSink<Long> sink(Driver driver) {
    return JdbcBatchSink.of(driver.dataSource(), "INSERT INTO t (id) VALUES (?)", (ps, id) -> ps.setLong(1, id));
  }

  /**
   * Two refused rows, no single culprit: the rows are halved. The first half's COMMIT reply is lost (it did
   * commit: OutcomeUnknown for those rows), and the database is then unreachable for the second half. Since
   * nothing counted as committed yet, the sink used to throw, and the batcher failed EVERY item with that plain
   * SQLException, overriding the OutcomeUnknownException of rows 10 and 11, which ARE committed (and retried them).
   */
  @Test
  void lostCommitReplyThenUnreachable_committedRowsAreToldOutcomeUnknown() throws Exception {
    Driver driver = new Driver(Set.of(90L, 91L));
    driver.commitReplyLosses = 1;
    driver.refuseConnectionNumber = 2; // the one the second half borrows
    List<CompletableFuture<Integer>> futures = new ArrayList<>();
    try (JdbcBatchSink<Long> sink = sink(driver);
         Batcher<Long, Integer> batcher = Batcher.of("lost-reply", BatcherConfig.builder().maxBatchSize(4)
             .linger(Duration.ofMinutes(1)).build(), sink)) {
      for (long id : new long[] {10, 11, 90, 91}) {
        futures.add(batcher.submit(id));
      }
      for (CompletableFuture<Integer> f : futures) {
        assertThat(f).failsWithin(Duration.ofSeconds(30))
        .withThrowableOfType(java.util.concurrent.ExecutionException.class);
      }
    }
    assertThat(driver.committed).containsExactly(10L, 11L);
    for (int i = 0; i < 2; i++) {
      Throwable told = catchThrowable(futures.get(i)::join);
      assertThat(OutcomeUnknownException.isIn(told))
          .as("row %s is committed, but its caller was told: %s", 10 + i, told).isTrue();
    }
  }

  /** Same, with a RetryPolicy (default retryOn: any Exception): the committed rows used to be written twice. */
  @Test
  void lostCommitReplyThenUnreachable_withRetry_noRowIsWrittenTwice() throws Exception {
    Driver driver = new Driver(Set.of(90L, 91L));
    driver.commitReplyLosses = 1;
    driver.refuseConnectionNumber = 2; // the one the second half borrows
    List<CompletableFuture<Integer>> futures = new ArrayList<>();
    RetryPolicy retry = RetryPolicy.builder().maxAttempts(2).initialBackoff(Duration.ofMillis(1)).build();
    try (JdbcBatchSink<Long> sink = sink(driver);
         Batcher<Long, Integer> batcher = Batcher.of("lost-reply-retried", BatcherConfig.builder().maxBatchSize(4)
             .linger(Duration.ofMinutes(1)).retryPolicy(retry).build(), sink)) {
      for (long id : new long[] {10, 11, 90, 91}) {
        futures.add(batcher.submit(id));
      }
      for (CompletableFuture<Integer> f : futures) {
        f.handle((r, t) -> null).get(30, TimeUnit.SECONDS); // whatever each is told
      }
    }
    assertThat(driver.committed).as("rows committed").doesNotHaveDuplicates();
  }

  /**
   * One refused row, named by the driver; the rollback of the failed transaction fails but the connection
   * still validates. The sink used to go on with the rest on the SAME connection, whose transaction still held the
   * first execution of the good rows: COMMIT wrote them twice. Now that connection is aborted and dropped.
   */
  @Test
  void rollbackFails_connectionStillValid_goodRowsAreCommittedOnce() throws Exception {
    Driver driver = new Driver(Set.of(3L));
    driver.rollbackFailures = 1;
    try (JdbcBatchSink<Long> sink = sink(driver)) {
      RecordingBatch<Long, Integer> batch = RecordingBatch.of(1L, 2L, 3L, 4L);
      sink.write(batch);
      assertThat(batch.completed()).containsOnlyKeys(0, 1, 3);
      assertThat(batch.failed()).containsOnlyKeys(2);
    }
    assertThat(driver.committed).as("rows committed").containsExactlyInAnyOrder(1L, 2L, 4L);
  }
}
