package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.RetryPolicy;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * An Error from borrowing the connection (the pool's getConnection, before anything was sent) is not a lost
 * connection: it reaches the caller as itself, and RetryPolicy's default retryOn ({@code e instanceof Exception})
 * does not retry it (a VirtualMachineError is never retried).
 */
class JdbcBatchSinkErrorOnBorrowTest {

  private static DataSource throwingOnBorrow(DataSource real, AtomicInteger borrows, Error error) {
    return (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(), new Class<?>[] {DataSource.class},
        (p, m, a) -> {
          if (m.getName().equals("getConnection")) {
            borrows.incrementAndGet();
            throw error;
          }
          return m.invoke(real, a);
        });
  }

  private static Throwable failureOf(CompletableFuture<Integer> f) throws Exception {
    try {
      f.get(10, TimeUnit.SECONDS);
      return null;
    } catch (ExecutionException e) {
      return e.getCause();
    }
  }

  private Throwable submitOne(Error error, AtomicInteger borrows) throws Exception {
    DataSource h2 = new UrlDataSource("jdbc:h2:mem:" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1");
    try (Connection c = h2.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE t (id BIGINT PRIMARY KEY)");
    }
    JdbcBatchSink<Long> sink = JdbcBatchSink.of(throwingOnBorrow(h2, borrows, error),
        "INSERT INTO t (id) VALUES (?)", (ps, id) -> ps.setLong(1, id));
    BatcherConfig config = BatcherConfig.builder().ringSize(16).maxBatchSize(4).linger(Duration.ZERO)
        .retryPolicy(RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ofMillis(1))
            .maxBackoff(Duration.ofMillis(2)).build())
        .build();
    try (Batcher<Long, Integer> batcher = Batcher.of("borrow", config, sink)) {
      return failureOf(batcher.submit(1L));
    }
  }

  @Test
  void assertionErrorFromGetConnection_isNotRetriedByTheDefaultRetryOn_andReachesTheCallerAsItself() throws Exception {
    AtomicInteger borrows = new AtomicInteger();
    AssertionError error = new AssertionError("a wrapper's assertion in getConnection");

    Throwable told = submitOne(error, borrows);

    assertThat(borrows).as("attempts: the default retryOn retries Exceptions only").hasValue(1);
    assertThat(told).as("what the caller is told").isSameAs(error);
  }

  @Test
  void stackOverflowErrorFromGetConnection_aVirtualMachineError_isNeverRetried() throws Exception {
    AtomicInteger borrows = new AtomicInteger();
    StackOverflowError error = new StackOverflowError("in the pool's getConnection");

    Throwable told = submitOne(error, borrows);

    assertThat(borrows).as("attempts: a VirtualMachineError is never retried").hasValue(1);
    assertThat(told).as("what the caller is told").isSameAs(error);
  }
}
