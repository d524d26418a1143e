package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link JdbcBatchSink} on a HikariCP pool over H2, behind a user's DataSource wrapper whose connection or statement
 * throws an {@link Error} from one method (a driver assertion, a NoClassDefFoundError in a wrapper, ...) while it is
 * borrowed (setAutoCommit) or given back (PreparedStatement.close, Connection.close): the connection goes back to
 * the pool, and rows committed stay told written (the driver's execute, commit and rollback:
 * JdbcBatchSinkDriverErrorsTest).
 */
class JdbcBatchSinkConnectionErrorsTest {
  private final String url = "jdbc:h2:mem:" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1";
  private HikariDataSource pool;

  @BeforeEach
  void createPoolAndTable() throws SQLException {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setMaximumPoolSize(2);
    config.setConnectionTimeout(2_000);
    pool = new HikariDataSource(config);
    try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE t (id BIGINT PRIMARY KEY)");
    }
  }

  @AfterEach
  void closePool() {
    pool.close();
  }

  /**
   * The pool's connections, wrapped: {@code method} ("Connection.close", "PreparedStatement.close",
   * "Connection.setAutoCommit") throws an AssertionError once while armed; a close runs first (the pool gets its
   * connection back), setAutoCommit does not run.
   */
  private DataSource wrapped(String method, AtomicBoolean armed) {
    return wrapped(method, armed, () -> new AssertionError(method + " (a wrapper's assertion)"));
  }

  /** As {@link #wrapped(String, AtomicBoolean)}, {@code method} throwing what {@code thrown} makes. */
  private DataSource wrapped(String method, AtomicBoolean armed, java.util.function.Supplier<Throwable> thrown) {
    return (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(), new Class<?>[] {DataSource.class},
        (p, m, a) -> {
          if (!m.getName().equals("getConnection")) {
            throw new UnsupportedOperationException(m.getName());
          }
          Connection c = pool.getConnection();
          return Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
              (p2, m2, a2) -> {
                if (method.equals("Connection.setAutoCommit") && m2.getName().equals("setAutoCommit")
                    && armed.getAndSet(false)) {
                  throw thrown.get();
                }
                Object result = invoke(c, m2, a2);
                if (result instanceof PreparedStatement ps) {
                  return Proxy.newProxyInstance(PreparedStatement.class.getClassLoader(),
                      new Class<?>[] {PreparedStatement.class}, (p3, m3, a3) -> {
                        Object r = invoke(ps, m3, a3);
                        if (method.equals("PreparedStatement." + m3.getName()) && armed.getAndSet(false)) {
                          throw thrown.get();
                        }
                        return r;
                      });
                }
                if (method.equals("Connection." + m2.getName()) && armed.getAndSet(false)) {
                  throw thrown.get();
                }
                return result;
              });
        });
  }

  private static Object invoke(Object target, java.lang.reflect.Method m, Object[] a) throws Throwable {
    try {
      return m.invoke(target, a);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  private static JdbcBatchSink<Long> sink(DataSource ds) {
    return JdbcBatchSink.of(ds, "INSERT INTO t (id) VALUES (?)", (ps, id) -> ps.setLong(1, id));
  }

  private List<Long> ids() throws SQLException {
    List<Long> ids = new ArrayList<>();
    try (Connection c = pool.getConnection(); Statement s = c.createStatement();
         ResultSet rs = s.executeQuery("SELECT id FROM t ORDER BY id")) {
      while (rs.next()) {
        ids.add(rs.getLong(1));
      }
    }
    return ids;
  }

  /**
   * Rows 1, 2 and 3 submitted as one batch (a batch of three, lingering up to 30 s for all three) and the batcher
   * closed: what each of the three callers was told, its result or the exception.
   */
  private static List<Object> toldForRowsOneTwoThree(JdbcBatchSink<Long> sink) throws Exception {
    List<CompletableFuture<Integer>> futures;
    List<Object> told = new ArrayList<>();
    try (Batcher<Long, Integer> batcher = Batcher.of("hooks", BatcherConfig.builder().ringSize(16).maxBatchSize(3)
        .linger(Duration.ofSeconds(30)).build(), sink)) {
      futures = List.of(batcher.submit(1L), batcher.submit(2L), batcher.submit(3L));
      for (CompletableFuture<Integer> f : futures) {
        try {
          told.add(f.get(10, TimeUnit.SECONDS));
        } catch (ExecutionException e) {
          told.add(e.getCause());
        }
      }
    }
    return told;
  }

  /**
   * The connection's close() runs (the pool gets it back), then the wrapper throws an Error. The three rows were
   * committed before: their callers are told written (a throw from write would void the recorded successes).
   */
  @Test
  void connectionCloseThrowsAnError_afterTheCommit_committedRowsAreToldWritten() throws Exception {
    JdbcBatchSink<Long> sink = sink(wrapped("Connection.close", new AtomicBoolean(true)));
    List<Object> told = toldForRowsOneTwoThree(sink);

    assertThat(ids()).containsExactly(1L, 2L, 3L);
    assertThat(told).as("rows 1, 2, 3 are committed").containsExactly(1, 1, 1);
  }

  /**
   * The connection's commit() runs (the database commits), then the wrapper throws an Error: not the database's
   * refusal of the COMMIT, so the rows may be committed. They are neither written again (with the key: told
   * "duplicate key" for their own rows) nor told failed: their callers are told the outcome is unknown.
   */
  @Test
  void commitThrowsAnError_afterTheDatabaseCommitted_callersAreToldUnknown_rowsNotWrittenAgain() throws Exception {
    JdbcBatchSink<Long> sink = sink(wrapped("Connection.commit", new AtomicBoolean(true)));
    List<Object> told = toldForRowsOneTwoThree(sink);

    assertThat(ids()).containsExactly(1L, 2L, 3L);
    assertThat(told).as("rows 1, 2, 3 are committed").allSatisfy(o -> assertThat(o)
        .isInstanceOf(dev.ringbatch.OutcomeUnknownException.class));
  }

  /**
   * The COMMIT runs and commits, and the driver reports 40003, statement completion unknown (CockroachDB's "result
   * is ambiguous"), or a broken connection with a state of its own (H2 over TCP: 90067, as a JDBC connection
   * exception): not a refusal, so the callers are told the outcome is unknown, never failed.
   */
  @ParameterizedTest
  @ValueSource(strings = {"40003", "90067"})
  void commitAnsweredWithCompletionUnknownOrABrokenConnection_callersAreToldUnknown(String state) throws Exception {
    DataSource ambiguous = wrapped("Connection.commit", new AtomicBoolean(true), () -> state.equals("40003")
        ? new java.sql.SQLTransactionRollbackException("result is ambiguous", state)
        : new java.sql.SQLNonTransientConnectionException("connection is broken", state));
    List<Object> told = toldForRowsOneTwoThree(sink(ambiguous));

    assertThat(ids()).containsExactly(1L, 2L, 3L);
    assertThat(told).allSatisfy(o -> assertThat(o).isInstanceOf(dev.ringbatch.OutcomeUnknownException.class));
  }

  /**
   * PreparedStatement.close() throws an Error after the commit: the connection is still closed (not leaked, the
   * pool's active count back to 0), and write() does not throw after the commit.
   */
  @Test
  void statementCloseThrowsAnError_connectionStillGoesBackToThePool() throws Exception {
    JdbcBatchSink<Long> sink = sink(wrapped("PreparedStatement.close", new AtomicBoolean(true)));

    Throwable thrown = catchThrowable(() -> sink.write(RecordingBatch.of(1L, 2L)));

    assertThat(ids()).containsExactly(1L, 2L);
    assertThat(pool.getHikariPoolMXBean().getActiveConnections()).as("connections not given back (write threw %s)",
        thrown).isZero();
  }

  /**
   * setAutoCommit(false) on the borrowed connection throws an Error: the connection goes back to the pool (a pool of
   * one is not exhausted for good), and the batch fails, nothing written.
   */
  @Test
  void setAutoCommitThrowsAnError_connectionStillGoesBackToThePool() throws Exception {
    JdbcBatchSink<Long> sink = sink(wrapped("Connection.setAutoCommit", new AtomicBoolean(true)));

    Throwable first = catchThrowable(() -> sink.write(RecordingBatch.of(1L)));

    assertThat(pool.getHikariPoolMXBean().getActiveConnections()).as("connections not given back (write threw %s)",
        first).isZero();
  }
}
