package dev.ringbatch.postgresql;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.zaxxer.hikari.HikariDataSource;
import dev.ringbatch.sink.RecordingBatch;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The column types a COPY sink reads on its first batch decide how a value is encoded (a Double into real is refused
 * when float4 cannot hold it). When that read fails (the DataSource throws, or hands back a dead connection), the
 * sink never encodes without the types: the batch fails whole, or the dead connection is replaced.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ColumnTypesUnreadIT {
  private static EmbeddedPostgres postgres;

  record Reading(long id, Double value) {}

  @BeforeAll
  static void start() throws Exception {
    postgres = EmbeddedPostgres.builder().start();
  }

  @AfterAll
  static void stop() throws Exception {
    postgres.close();
  }

  private static DataSource failing(DataSource pool, AtomicInteger failures, boolean deadConnection) {
    return (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(), new Class<?>[] {DataSource.class},
        (p, method, args) -> {
          if (method.getName().equals("getConnection") && failures.getAndDecrement() > 0) {
            if (!deadConnection) {
              throw new SQLException("connection refused (the database is restarting)", "08001");
            }
            Connection c = pool.getConnection();
            c.unwrap(Connection.class).close(); // the physical connection is gone; the pool's handle looks fine
            return c;
          }
          try {
            return method.invoke(pool, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
  }

  private static double stored(String table) throws SQLException {
    try (Connection c = postgres.getPostgresDatabase().getConnection(); Statement s = c.createStatement();
         ResultSet rs = s.executeQuery("SELECT value::float8 FROM " + table + " WHERE id = 1")) {
      assertThat(rs.next()).as("row 1 is in " + table).isTrue();
      return rs.getDouble(1);
    }
  }

  /** A fresh sink refuses 0.1 for a real column: float4 cannot hold it exactly. The control. */
  @Test
  void control_aSinkThatReadTheTypes_refusesTheDouble() throws Exception {
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS targets_control",
        "CREATE TABLE targets_control (id BIGINT, value REAL)");
    try (HikariDataSource pool = CopyDatabase.pool(postgres.getPort(), "targets-control", 2)) {
      PgCopySink<Reading> sink = PgCopySink.<Reading>into(pool, "targets_control").column("id", Reading::id)
          .column("value", Reading::value).build();
      RecordingBatch<Reading, Integer> batch = RecordingBatch.of(new Reading(1, 0.1));
      sink.write(batch);
      assertThat(batch.completed()).isEmpty();
      assertThat(batch.failed()).hasEntrySatisfying(0, e -> assertThat(e).isInstanceOf(IllegalArgumentException.class));
    }
  }

  /** The first batch cannot borrow a connection (08001); the second is told written, the value rounded. */
  @Test
  void firstBorrowFails_theNextBatchReadsTheTypes_andRefusesWhatTheColumnCannotHold() throws Exception {
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS targets_refused",
        "CREATE TABLE targets_refused (id BIGINT, value REAL)");
    try (HikariDataSource pool = CopyDatabase.pool(postgres.getPort(), "targets-refused", 2)) {
      PgCopySink<Reading> sink = PgCopySink.<Reading>into(failing(pool, new AtomicInteger(1), false),
          "targets_refused").column("id", Reading::id).column("value", Reading::value).build();
      RecordingBatch<Reading, Integer> first = RecordingBatch.of(new Reading(0, 1.0));
      // the borrow for the catalog read refused: the batch fails whole, nothing sent
      assertThatThrownBy(() -> sink.write(first)).isInstanceOf(SQLException.class);

      RecordingBatch<Reading, Integer> second = RecordingBatch.of(new Reading(1, 0.1));
      sink.write(second);
      assertThat(second.completed()).as("0.1 told written, stored as %s", second.completed().isEmpty() ? "-"
          : String.valueOf(stored("targets_refused"))).isEmpty();
      assertThat(second.failed()).hasEntrySatisfying(0, e -> assertThat(e).isInstanceOf(IllegalArgumentException.class));
    }
  }

  /** The first batch's pooled connection is dead: that batch is never encoded without the types. */
  @Test
  void firstConnectionDead_theBatchIsNeverEncodedWithoutTheTypes() throws Exception {
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS targets_dead",
        "CREATE TABLE targets_dead (id BIGINT, value REAL)");
    try (HikariDataSource pool = CopyDatabase.pool(postgres.getPort(), "targets-dead", 2)) {
      PgCopySink<Reading> sink = PgCopySink.<Reading>into(failing(pool, new AtomicInteger(1), true),
          "targets_dead").column("id", Reading::id).column("value", Reading::value).build();
      RecordingBatch<Reading, Integer> batch = RecordingBatch.of(new Reading(1, 0.1));
      Throwable thrown = catchThrowable(() -> sink.write(batch));
      if (thrown == null) {
        assertThat(batch.failed()).hasEntrySatisfying(0, e -> assertThat(e).isInstanceOf(IllegalArgumentException.class));
      }
      assertThat(batch.completed()).as("0.1 told written, stored as %s", batch.completed().isEmpty() ? "-"
          : String.valueOf(stored("targets_dead"))).isEmpty();

      RecordingBatch<Reading, Integer> again = RecordingBatch.of(new Reading(1, 0.1));
      sink.write(again);
      assertThat(again.completed()).isEmpty();
      assertThat(again.failed()).hasEntrySatisfying(0, e -> assertThat(e).isInstanceOf(IllegalArgumentException.class));
    }
  }
}
