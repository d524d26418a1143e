package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.ringbatch.OutcomeUnknownException;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An idempotent batch whose commit reply is lost is thrown for the whole batch, safe to retry, whether or not an item
 * failed to bind (the JDBC pieces the COPY sink shares; PostgreSQL 18 through HikariCP).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class JdbcLostCommitReplyIT {
  private static EmbeddedPostgres postgres;

  record Event(long id, String payload) {}

  @BeforeAll
  static void start() throws Exception {
    postgres = EmbeddedPostgres.builder().start();
    PostgresSql.exec(postgres, "CREATE TABLE second_keyed (id BIGINT PRIMARY KEY, payload TEXT NOT NULL)");
  }

  @AfterAll
  static void stop() throws Exception {
    postgres.close();
  }

  /**
   * Defect (regression of 909cc1c): the whole-batch, safe-to-retry OutcomeUnknownException of an idempotent sink
   * is now thrown only when {@code batchRows.unsettled() == rows.length}. But {@code rows} is what writeOnce was
   * given, which includes the rows whose binder threw during this very attempt (settled as failed, never sent).
   * One unbindable item in the batch, and a lost COMMIT reply no longer throws for the batch: every other row is
   * told "outcome unknown" one by one, and no RetryPolicy writes them again, though nothing of the batch is
   * committed for sure and the statement is declared idempotent ("a lost reply is then thrown for the whole
   * batch (as long as nothing of it was committed) ... and a RetryPolicy writes the batch again").
   */
  @Test
  void idempotentRows_oneItemFailsToBind_lostCommitReply_isThrownForTheBatch_safeToRetry() throws Exception {
    try (ReplyDroppingProxy proxy = new ReplyDroppingProxy(postgres.getPort(), "COMMIT", () -> false);
         HikariDataSource pool = pool(proxy.port())) {
      JdbcBatchSink<Event> sink = JdbcBatchSink.<Event>of(pool,
          "INSERT INTO second_keyed (id, payload) VALUES (?, ?) ON CONFLICT (id) DO NOTHING", (ps, e) -> {
            if (e.payload().equals("unbindable")) {
              throw new IllegalArgumentException("cannot bind item " + e.id());
            }
            ps.setLong(1, e.id());
            ps.setString(2, e.payload());
          }).idempotent();
      RecordingBatch<Event, Integer> batch = RecordingBatch.of(new Event(1, "a"), new Event(2, "unbindable"),
          new Event(3, "c"));
      proxy.dropNext(1);
      Throwable thrown = catchThrowable(() -> sink.write(batch));

      assertThat(proxy.dropped()).as("COMMIT replies lost").isOne();
      assertThat(batch.failed().get(1)).isInstanceOf(IllegalArgumentException.class);
      assertThat(batch.failed()).as("rows 0 and 2 failed one by one as %s", batch.failed()).containsOnlyKeys(1);
      assertThat(thrown).as("a lost COMMIT reply of an idempotent sink, nothing of the batch committed before")
          .isInstanceOf(OutcomeUnknownException.class);
      assertThat(((OutcomeUnknownException) thrown).isSafeToRetry()).isTrue();
    }
  }

  /** Control: the same batch without the unbindable item is thrown whole, safe to retry (passes). */
  @Test
  void idempotentRows_allItemsBind_lostCommitReply_isThrownForTheBatch_safeToRetry() throws Exception {
    PostgresSql.exec(postgres, "TRUNCATE second_keyed");
    try (ReplyDroppingProxy proxy = new ReplyDroppingProxy(postgres.getPort(), "COMMIT", () -> false);
         HikariDataSource pool = pool(proxy.port())) {
      JdbcBatchSink<Event> sink = JdbcBatchSink.<Event>of(pool,
          "INSERT INTO second_keyed (id, payload) VALUES (?, ?) ON CONFLICT (id) DO NOTHING", (ps, e) -> {
            ps.setLong(1, e.id());
            ps.setString(2, e.payload());
          }).idempotent();
      RecordingBatch<Event, Integer> batch = RecordingBatch.of(new Event(11, "a"), new Event(13, "c"));
      proxy.dropNext(1);
      Throwable thrown = catchThrowable(() -> sink.write(batch));
      assertThat(proxy.dropped()).isOne();
      assertThat(thrown).isInstanceOf(OutcomeUnknownException.class);
      assertThat(batch.failed()).isEmpty();
    }
  }

  private static HikariDataSource pool(int port) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl("jdbc:postgresql://localhost:" + port + "/postgres?user=postgres&ApplicationName=second-review");
    config.setMaximumPoolSize(2);
    config.setConnectionTimeout(5_000);
    return new HikariDataSource(config);
  }
}
