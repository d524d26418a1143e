package dev.ringbatch.postgresql;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.ringbatch.BatchSink;
import dev.ringbatch.postgresql.ValueCases.Case;
import dev.ringbatch.postgresql.ValueCases.Group;
import dev.ringbatch.sink.JdbcBatchSink;
import dev.ringbatch.sink.RecordingBatch;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TimeZone;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The value-encoding contract on PostgreSQL 18: every value of {@link ValueCases}, written by every sink and mode,
 * reads back as exactly what was sent, or fails its own row alone, the error naming the column, the Java type and
 * the reason. The build runs it in two JVM default zones (Europe/Amsterdam, for the autumn hour lived twice, and
 * Asia/Kolkata, whose abbreviation IST PostgreSQL reads as Israel's), with sessions at UTC.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ValueRoundTripIT {
  private static EmbeddedPostgres postgres;
  private static HikariDataSource pool;

  /**
   * The sinks and modes, each with how it names the value's column in a refusal. The COPY sink copies a small
   * batch in auto-commit and a large one in a transaction: COPY's batch is padded past that size.
   */
  enum Mode {
    COPY("column 'v'"), COPY_SMALL_BATCH("column 'v'"), COPY_IDEMPOTENT("column 'v'"), ROWS("column 'v'"), UNNEST("column 'parameter 2"),
    UNNEST_IDEMPOTENT("column 'parameter 2");

    final String column;

    Mode(String column) {
      this.column = column;
    }
  }

  record Row(long id, Object value) {}

  @BeforeAll
  static void start() throws Exception {
    postgres = EmbeddedPostgres.builder().start();
    // A session zone other than the JVM's (a role's or a pool's setting): nothing sent may depend on either
    pool = CopyDatabase.pool(postgres.getPort(), "ringbatch-values", 2, "SET TimeZone = 'UTC'");
  }

  @AfterAll
  static void stop() throws Exception {
    pool.close();
    postgres.close();
  }

  static Stream<Arguments> groupsAndModes() {
    List<Arguments> all = new ArrayList<>();
    for (Group group : ValueCases.groups()) {
      for (Mode mode : Mode.values()) {
        all.add(Arguments.of(group, mode));
      }
    }
    return all.stream();
  }

  private static Object valueOf(Row row) {
    return row.value() == ValueCases.NullValue.NULL ? null : row.value();
  }

  private static BatchSink<Row, Integer> sink(Mode mode, String table, String pgType) {
    String unnest = "INSERT INTO " + table + " (id, v) SELECT * FROM unnest(?::bigint[], ?::" + pgType + "[])";
    return switch (mode) {
      case COPY, COPY_SMALL_BATCH -> PgCopySink.<Row>into(pool, table).column("id", Row::id)
          .column("v", ValueRoundTripIT::valueOf).build();
      case COPY_IDEMPOTENT -> PgCopySink.<Row>into(pool, table).column("id", Row::id)
          .column("v", ValueRoundTripIT::valueOf).idempotentOn("id").build();
      case ROWS -> JdbcBatchSink.<Row>of(pool, "INSERT INTO " + table + " (id, v) VALUES (?, ?)", (ps, row) -> {
        PgValues.set(ps, 1, "id", row.id());
        PgValues.set(ps, 2, "v", valueOf(row));
      });
      case UNNEST -> PgUnnest.<Row>sink(pool, unnest).column("bigint", Row::id)
          .column(pgType, ValueRoundTripIT::valueOf).build();
      case UNNEST_IDEMPOTENT -> PgUnnest.<Row>sink(pool, unnest + " ON CONFLICT (id) DO NOTHING")
          .column("bigint", Row::id).column(pgType, ValueRoundTripIT::valueOf).build().idempotent();
    };
  }

  @ParameterizedTest(name = "{0} by {1}")
  @MethodSource("groupsAndModes")
  void everyValue_readsBackAsSent_orFailsItsOwnRowNamingColumnTypeAndReason(Group group, Mode mode)
      throws Exception {
    String table = "rt_" + group.name().replaceAll("[^a-z0-9]", "_") + "_" + mode.name().toLowerCase();
    CopyDatabase.exec(postgres, "DROP TABLE IF EXISTS " + table,
        "CREATE TABLE " + table + " (id bigint PRIMARY KEY, v " + group.pgType() + ")");
    List<Case> cases = group.cases();
    List<Row> rows = new ArrayList<>();
    for (int i = 0; i < cases.size(); i++) {
      rows.add(new Row(i, cases.get(i).value()));
    }
    if (mode == Mode.COPY) {
      for (int i = 0; i <= PgCopySink.AUTOCOMMIT_ROWS; i++) {
        rows.add(new Row(1_000_000 + i, ValueCases.NullValue.NULL)); // past a small batch: copied in a transaction
      }
    } else if (mode == Mode.COPY_SMALL_BATCH) {
      assertThat(rows).as("a batch the COPY sink copies in auto-commit").hasSizeLessThanOrEqualTo(PgCopySink.AUTOCOMMIT_ROWS);
    }
    RecordingBatch<Row, Integer> batch = RecordingBatch.of(rows);

    sink(mode, table, group.pgType()).write(batch);

    Map<Long, String> stored = read(table);
    SoftAssertions soft = new SoftAssertions();
    for (int i = 0; i < cases.size(); i++) {
      Case c = cases.get(i);
      String expected = mode == Mode.ROWS ? c.rowsExpected() : c.expected();
      boolean refused = ValueCases.REFUSED.equals(expected)
          || c.array() && (mode == Mode.UNNEST || mode == Mode.UNNEST_IDEMPOTENT);
      String zone = " in " + TimeZone.getDefault().getID();
      if (refused) {
        soft.assertThat(batch.failed()).as(c + zone + ": fails").containsKey(i);
        soft.assertThat(stored).as(c + zone + ": absent").doesNotContainKey((long) i);
        Throwable cause = batch.failed().get(i);
        if (cause != null) {
          soft.assertThat(cause).as(c + zone + ": the error").isInstanceOf(IllegalArgumentException.class)
              .hasMessageContaining(mode.column).hasMessageContaining(c.value().getClass().getName());
        }
      } else {
        soft.assertThat(batch.failed().get(i)).as(c + zone + ": no failure").isNull();
        soft.assertThat(batch.completed().get(i)).as(c + zone + ": told written").isEqualTo(1);
        soft.assertThat(stored).as(c + zone + ": stored").containsKey((long) i);
        soft.assertThat(stored.get((long) i)).as(c + zone + ": read back").isEqualTo(expected);
      }
    }
    soft.assertAll();
  }

  /** Each row's value as PostgreSQL shows it in a session at UTC. */
  private static Map<Long, String> read(String table) throws Exception {
    Map<Long, String> stored = new HashMap<>();
    try (Connection c = postgres.getPostgresDatabase().getConnection(); Statement s = c.createStatement()) {
      s.execute("SET TimeZone = 'UTC'");
      try (ResultSet rs = s.executeQuery("SELECT id, v::text FROM " + table)) {
        while (rs.next()) {
          stored.put(rs.getLong(1), rs.getString(2));
        }
      }
    }
    assertThat(stored).isNotNull();
    return stored;
  }
}
