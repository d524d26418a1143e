package dev.ringbatch.postgresql;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.ringbatch.sink.JdbcBatchSink;
import dev.ringbatch.sink.RecordingBatch;
import dev.ringbatch.sink.ReplyDroppingProxy;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The unnest sink's per-row outcomes through the arrays mode's paths where {@link PgUnnest} binds: a row refused by
 * a row-level security policy (the probe with empty arrays, then halving), items whose column function throws
 * part-way through a row, both in a session with {@code array_nulls = off}, in a transaction and in autocommit
 * (idempotent); and the builder after a refused column.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PgUnnestOutcomesIT {
  private static EmbeddedPostgres postgres;

  record Note(long id, String payload, @Nullable String note) {}

  @BeforeAll
  static void start() throws Exception {
    postgres = EmbeddedPostgres.builder().start();
    CopyDatabase.exec(postgres,
        "CREATE ROLE writer LOGIN",
        "CREATE TABLE secured (id BIGINT PRIMARY KEY, payload TEXT NOT NULL, note TEXT)",
        "ALTER TABLE secured ENABLE ROW LEVEL SECURITY",
        "CREATE POLICY no_bad ON secured FOR INSERT TO writer WITH CHECK (payload <> 'bad')",
        "CREATE POLICY see_all ON secured FOR SELECT TO writer USING (true)",
        "GRANT SELECT, INSERT ON secured TO writer");
  }

  @AfterAll
  static void stop() throws Exception {
    postgres.close();
  }

  @BeforeEach
  void empty() throws SQLException {
    CopyDatabase.exec(postgres, "TRUNCATE secured");
  }

  private static HikariDataSource pool(String user) {
    return pool(postgres.getPort(), user);
  }

  private static HikariDataSource pool(int port, String user) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl("jdbc:postgresql://localhost:" + port + "/postgres?user=" + user);
    config.setConnectionInitSql("SET array_nulls = off");
    config.setMaximumPoolSize(1);
    return new HikariDataSource(config);
  }

  private static JdbcBatchSink<Note> sink(HikariDataSource pool, String mode) {
    JdbcBatchSink<Note> sink = PgUnnest.<Note>sink(pool, "INSERT INTO secured SELECT * FROM"
            + " unnest(?::bigint[], ?::text[], ?::text[])" + (mode.equals("idempotent") ? " ON CONFLICT (id) DO NOTHING"
            : ""))
        .column("bigint", Note::id).column("text", Note::payload).column("text", Note::note).build();
    return mode.equals("idempotent") ? sink.idempotent() : sink;
  }

  /** Each stored row's note, "<SQL NULL>" for a null. */
  private static Map<Long, String> notes() throws SQLException {
    Map<Long, String> notes = new HashMap<>();
    try (Connection c = postgres.getPostgresDatabase().getConnection(); Statement s = c.createStatement();
         ResultSet rs = s.executeQuery("SELECT id, coalesce(note, '<SQL NULL>') FROM secured")) {
      while (rs.next()) {
        notes.put(rs.getLong(1), rs.getString(2));
      }
    }
    return notes;
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"transaction", "idempotent"})
  void rowRefusedByAPolicy_withArrayNullsOff_failsAlone_andTheOthersKeepTheirNulls(String mode) throws Exception {
    try (HikariDataSource pool = pool("writer")) {
      JdbcBatchSink<Note> sink = sink(pool, mode);
      RecordingBatch<Note, Integer> batch = RecordingBatch.of(new Note(1, "a", null), new Note(2, "b", "NULL"),
          new Note(3, "bad", null), new Note(4, "d", null), new Note(5, "e", "x"));

      sink.write(batch);

      assertThat(batch.failed()).containsOnlyKeys(2);
      assertThat(batch.failed().get(2)).isInstanceOf(SQLException.class);
      assertThat(((SQLException) batch.failed().get(2)).getSQLState()).isEqualTo("42501");
      assertThat(batch.completed()).containsOnlyKeys(0, 1, 3, 4);
      assertThat(notes()).isEqualTo(Map.of(1L, "<SQL NULL>", 2L, "NULL", 4L, "<SQL NULL>", 5L, "x"));
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"transaction", "idempotent"})
  void columnFunctionThrowingAfterEarlierColumns_failsItsItemAlone_andNoTextOfItIsWritten(String mode)
      throws Exception {
    try (HikariDataSource pool = pool("postgres")) {
      IllegalStateException broken = new IllegalStateException("note of 2 broke");
      JdbcBatchSink<Note> sink = PgUnnest.<Note>sink(pool, "INSERT INTO secured SELECT * FROM"
              + " unnest(?::bigint[], ?::text[], ?::text[])"
              + (mode.equals("idempotent") ? " ON CONFLICT (id) DO NOTHING" : ""))
          .column("bigint", Note::id).column("text", Note::payload)
          .column("text", n -> {
            if (n.id() == 2 || n.id() == 5) {
              throw broken;
            }
            return n.note();
          }).build();
      JdbcBatchSink<Note> used = mode.equals("idempotent") ? sink.idempotent() : sink;
      RecordingBatch<Note, Integer> batch = RecordingBatch.of(new Note(1, "a", "one"), new Note(2, "b", "two"),
          new Note(3, "c", null), new Note(4, "d", "four"), new Note(5, "e", "five"));

      used.write(batch);

      assertThat(batch.failed()).containsOnlyKeys(1, 4);
      assertThat(batch.failed().get(1)).isSameAs(broken);
      assertThat(batch.completed()).isEqualTo(Map.of(0, 1, 2, 1, 3, 1));
      assertThat(notes()).isEqualTo(Map.of(1L, "one", 3L, "<SQL NULL>", 4L, "four"));
    }
  }

  /**
   * The reply to the idempotent autocommit statement is lost on a connection whose session has array_nulls off: the
   * statement ran (and committed) there, the sink runs it again on a fresh connection, whose session must be set
   * up again: every row is in the table once, its null a SQL NULL, and every caller told written.
   */
  @Test
  void idempotent_lostStatementReply_withArrayNullsOff_rowsWrittenOnce_nullsStayNull() throws Exception {
    try (ReplyDroppingProxy proxy = new ReplyDroppingProxy(postgres.getPort(), "unnest(", () -> false);
         HikariDataSource pool = pool(proxy.port(), "postgres")) {
      JdbcBatchSink<Note> sink = sink(pool, "idempotent");
      RecordingBatch<Note, Integer> batch = RecordingBatch.of(new Note(1, "a", null), new Note(2, "b", "NULL"));

      proxy.dropNext(1);
      sink.write(batch);

      assertThat(proxy.dropped()).isEqualTo(1);
      assertThat(batch.failed()).isEmpty();
      assertThat(batch.completed()).containsOnlyKeys(0, 1);
      assertThat(notes()).isEqualTo(Map.of(1L, "<SQL NULL>", 2L, "NULL"));
    }
  }

  @Test
  void column_withANullFunction_isRefused_andLeavesTheBuilderAsItWas() throws Exception {
    try (HikariDataSource pool = pool("postgres")) {
      PgUnnest.Builder<Note> builder = PgUnnest.<Note>sink(pool,
          "INSERT INTO secured (id, payload) SELECT * FROM unnest(?::bigint[], ?::text[])")
          .column("bigint", Note::id).column("text", Note::payload);

      assertThatThrownBy(() -> builder.column("text", null))
          .isExactlyInstanceOf(NullPointerException.class).hasMessage("value");
      JdbcBatchSink<Note> sink = builder.build();
      RecordingBatch<Note, Integer> batch = RecordingBatch.of(new Note(1, "a", null));
      sink.write(batch);

      assertThat(batch.failed()).isEmpty();
      assertThat(batch.completed()).isEqualTo(Map.of(0, 1));
      assertThat(sink.toString()).contains("PgUnnest[bigint, text]").doesNotContain("text, text");
    }
  }
}
