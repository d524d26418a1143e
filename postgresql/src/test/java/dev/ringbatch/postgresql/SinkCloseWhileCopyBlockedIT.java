package dev.ringbatch.postgresql;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A batcher's close gives up on a COPY blocked on a lock, and the sink is then closed with its batcher: the sink's
 * close returns at once, and does not hand its pool the connection the consumer is still copying on.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SinkCloseWhileCopyBlockedIT {
  private static EmbeddedPostgres postgres;

  record Event(long id, String payload) {}

  @BeforeAll
  static void start() throws Exception {
    postgres = EmbeddedPostgres.builder().start();
  }

  @AfterAll
  static void stop() throws Exception {
    postgres.close();
  }

  @Test
  void sinkClosedAfterTheBatcherGaveUpOnABlockedCopy_returnsPromptly() throws Exception {
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS close_blocked",
        "CREATE TABLE close_blocked (id BIGINT NOT NULL, payload TEXT NOT NULL)",
        "CREATE OR REPLACE FUNCTION wait_for_lock() RETURNS trigger LANGUAGE plpgsql AS $$"
            + " BEGIN IF NEW.payload = 'wait' THEN PERFORM pg_advisory_xact_lock(4242); END IF; RETURN NEW; END $$",
        "CREATE TRIGGER wait_for_lock BEFORE INSERT ON close_blocked FOR EACH ROW EXECUTE FUNCTION wait_for_lock()");
    try (HikariDataSource pool = CopyDatabase.pool(postgres.getPort(), "close-blocked", 2);
         Connection holder = postgres.getPostgresDatabase().getConnection()) {
      holder.setAutoCommit(false);
      try (Statement s = holder.createStatement()) {
        s.execute("SELECT pg_advisory_xact_lock(4242)"); // the COPY's row waits for this transaction
      }
      PgCopySink<Event> sink = PgCopySink.<Event>into(pool, "close_blocked").column("id", Event::id)
          .column("payload", Event::payload).build();
      Batcher<Event, Integer> batcher = Batcher.of("close-blocked",
          BatcherConfig.builder().closeTimeout(Duration.ofMillis(500)).build(), sink);
      List<CompletableFuture<Integer>> futures = IntStream.range(0, 100)
          .mapToObj(i -> batcher.submit(new Event(i, i == 50 ? "wait" : "p" + i))).toList();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (CopyDatabase.queryLong(postgres, "SELECT count(*) FROM pg_stat_activity WHERE application_name ="
          + " 'close-blocked' AND wait_event_type = 'Lock'") == 0) {
        assertThat(System.nanoTime()).as("the COPY waits for the lock").isLessThan(deadline);
        Thread.onSpinWait();
      }
      batcher.close(); // gives up after 500 ms: the callers are told it may or may not have been written
      assertThat(futures.get(50)).isCompletedExceptionally(); // the blocked batch's callers are told

      CompletableFuture<Void> closed = CompletableFuture.runAsync(sink::close);
      try {
        assertThat(closed).as("the sink's close returns while the COPY is blocked")
            .succeedsWithin(Duration.ofSeconds(10));
      } finally {
        holder.rollback(); // lets the COPY go on, and the close end
        closed.get(30, TimeUnit.SECONDS);
      }
    }
  }
}
