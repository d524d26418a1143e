package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@link JdbcBatchSink} on H2: quick checks of results, isolation and connection handling. */
class JdbcBatchSinkTest {
  private final String url = "jdbc:h2:mem:" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1";
  private final UrlDataSource dataSource = new UrlDataSource(url);
  private Connection keepAlive;

  record Row(long id, String name) {}

  @BeforeEach
  void createTable() throws SQLException {
    keepAlive = DriverManager.getConnection(url);
    try (Statement s = keepAlive.createStatement()) {
      s.execute("CREATE TABLE rows_t (id BIGINT PRIMARY KEY, name VARCHAR(20) NOT NULL)");
    }
  }

  @AfterEach
  void dropDatabase() throws SQLException {
    try (Statement s = keepAlive.createStatement()) {
      s.execute("SHUTDOWN");
    }
  }

  private JdbcBatchSink<Row> sink() {
    return JdbcBatchSink.of(dataSource, "INSERT INTO rows_t (id, name) VALUES (?, ?)", (ps, row) -> {
      ps.setLong(1, row.id());
      ps.setString(2, row.name());
    });
  }

  @Test
  void write_allRowsCommittedWithTheirUpdateCounts() throws Exception {
    try (JdbcBatchSink<Row> sink = sink()) {
      RecordingBatch<Row, Integer> batch = RecordingBatch.of(new Row(1, "a"), new Row(2, "b"), new Row(3, "c"));

      sink.write(batch);

      assertThat(batch.completed()).containsEntry(0, 1).containsEntry(1, 1).containsEntry(2, 1);
      assertThat(batch.failed()).isEmpty();
    }
    assertThat(ids()).containsExactly(1L, 2L, 3L);
  }

  @Test
  void write_duplicateKeys_onlyThoseRowsFailAndTheRestAreCommitted() throws Exception {
    try (JdbcBatchSink<Row> sink = sink()) {
      RecordingBatch<Row, Integer> batch = RecordingBatch.of(new Row(1, "a"), new Row(1, "dup"),
          new Row(2, "b"), new Row(2, "dup"), new Row(3, "c"));

      sink.write(batch);

      assertThat(batch.failed()).containsOnlyKeys(1, 3);
      assertThat(batch.failed().get(1)).isInstanceOf(SQLException.class);
      assertThat(batch.completed()).containsOnlyKeys(0, 2, 4);
    }
    assertThat(ids()).containsExactly(1L, 2L, 3L);
  }

  @Test
  void write_binderThrows_onlyThatItemFails() throws Exception {
    JdbcBatchSink<Row> sink = JdbcBatchSink.of(dataSource, "INSERT INTO rows_t (id, name) VALUES (?, ?)",
        (ps, row) -> {
          if (row.name() == null) {
            throw new IllegalArgumentException("row " + row.id() + " has no name");
          }
          ps.setLong(1, row.id());
          ps.setString(2, row.name());
        });
    RecordingBatch<Row, Integer> batch = RecordingBatch.of(new Row(1, "a"), new Row(2, null), new Row(3, "c"));

    sink.write(batch);
    sink.close();

    assertThat(batch.failed()).containsOnlyKeys(1);
    assertThat(batch.failed().get(1)).hasMessage("row 2 has no name");
    assertThat(ids()).containsExactly(1L, 3L);
  }

  @Test
  void write_borrowsAConnectionPerBatchAndGivesItBack() throws Exception {
    JdbcBatchSink<Row> sink = sink();
    for (int i = 0; i < 5; i++) {
      sink.write(RecordingBatch.of(new Row(i, "r" + i)));
      assertThat(dataSource.handedOut).as("connections still held after batch %s", i)
          .allMatch(JdbcBatchSinkTest::isClosed);
    }
    assertThat(dataSource.opened).hasValue(5); // a pool makes each borrow cheap; a plain DataSource opens anew
    assertThat(ids()).containsExactly(0L, 1L, 2L, 3L, 4L);
  }

  private static boolean isClosed(java.sql.Connection c) {
    try {
      return c.isClosed();
    } catch (java.sql.SQLException e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void write_connectionUnavailable_throwsForTheWholeBatchAndTriesAgainNextTime() {
    UrlDataSource broken = new UrlDataSource("jdbc:h2:mem:" + UUID.randomUUID() + ";IFEXISTS=TRUE");
    JdbcBatchSink<Row> sink = JdbcBatchSink.of(broken, "INSERT INTO rows_t (id, name) VALUES (?, ?)",
        (ps, row) -> ps.setLong(1, row.id()));
    RecordingBatch<Row, Integer> first = RecordingBatch.of(new Row(1, "a"), new Row(2, "b"));
    RecordingBatch<Row, Integer> second = RecordingBatch.of(new Row(3, "c"));

    // Nothing was committed, so the whole batch fails as one: a RetryPolicy may safely write it again.
    assertThatThrownBy(() -> sink.write(first)).isInstanceOf(SQLException.class);
    assertThatThrownBy(() -> sink.write(second)).isInstanceOf(SQLException.class);

    assertThat(first.failed()).isEmpty();
    assertThat(first.completed()).isEmpty();
    assertThat(broken.opened).hasValue(2); // a fresh attempt per batch, not a cached failure
  }

  @Test
  void batcher_manyCallers_everyRowOnce() throws Exception {
    List<Thread> callers = new ArrayList<>();
    try (JdbcBatchSink<Row> sink = sink();
         Batcher<Row, Integer> batcher = Batcher.of("rows", BatcherConfig.ofDefaults(), sink)) {
      for (int c = 0; c < 8; c++) {
        int caller = c;
        Thread t = new Thread(() -> {
          for (int i = 0; i < 250; i++) {
            batcher.submit(new Row(caller * 1000L + i, "x")).join();
          }
        });
        callers.add(t);
        t.start();
      }
      for (Thread t : callers) {
        t.join(Duration.ofSeconds(30).toMillis());
      }
      assertThat(batcher.close(Duration.ofSeconds(10)).written()).isEqualTo(2000);
    }
    assertThat(ids()).hasSize(2000).doesNotHaveDuplicates();
  }

  @Test
  void of_blankSql_rejected() {
    assertThatThrownBy(() -> JdbcBatchSink.of(dataSource, " ", (ps, row) -> { }))
        .isExactlyInstanceOf(IllegalArgumentException.class)
        .hasMessage("sql must not be blank but was ' '");
  }

  private List<Long> ids() throws SQLException {
    List<Long> ids = new ArrayList<>();
    try (Statement s = keepAlive.createStatement(); ResultSet rs = s.executeQuery("SELECT id FROM rows_t ORDER BY id")) {
      while (rs.next()) {
        ids.add(rs.getLong(1));
      }
    }
    return ids;
  }

  /** Throws a checked exception its signature does not declare, as Lombok's {@code @SneakyThrows} does. */
  @SuppressWarnings("unchecked")
  private static <E extends Throwable> void sneakyThrow(Throwable e) throws E {
    throw (E) e;
  }

  @org.junit.jupiter.params.ParameterizedTest
  @org.junit.jupiter.params.provider.ValueSource(strings = {"rows", "unnest"})
  void binderThrowingAnErrorOrASneakyCheckedException_failsThatItemOnly_othersWritten(String mode)
      throws Exception {
    java.util.function.Function<Row, Object> name = row -> {
      if (row.id() == 2) {
        throw new AssertionError("binder assertion on row 2");
      }
      if (row.id() == 3) {
        sneakyThrow(new java.io.IOException("sneaky on row 3"));
      }
      return row.name();
    };
    JdbcBatchSink<Row> sink = mode.equals("rows")
        ? JdbcBatchSink.of(dataSource, "INSERT INTO rows_t (id, name) VALUES (?, ?)", (ps, row) -> {
          ps.setLong(1, row.id());
          ps.setString(2, (String) name.apply(row));
        })
        : TextArrays.<Row>sink(dataSource, "INSERT INTO rows_t (id, name) SELECT * FROM UNNEST(?, ?)")
            .column("BIGINT", Row::id).column("VARCHAR", name).build();
    RecordingBatch<Row, Integer> batch = RecordingBatch.of(new Row(1, "a"), new Row(2, "b"), new Row(3, "c"),
        new Row(4, "d"));

    sink.write(batch);

    assertThat(batch.failed()).containsOnlyKeys(1, 2);
    assertThat(batch.failed().get(1)).isInstanceOf(AssertionError.class).hasMessage("binder assertion on row 2");
    assertThat(batch.failed().get(2)).isInstanceOf(java.io.IOException.class).hasMessage("sneaky on row 3");
    assertThat(batch.completed()).containsOnlyKeys(0, 3);
    assertThat(ids()).containsExactly(1L, 4L);
  }

  @Test
  void statementThatCannotBePrepared_failsTheWholeBatchAtOnceWithTheDatabaseError_noRecursion() {
    JdbcBatchSink<Row> sink = JdbcBatchSink.of(dataSource, "INSERT INTO no_such_table (id, name) VALUES (?, ?)",
        (ps, row) -> {
          ps.setLong(1, row.id());
          ps.setString(2, row.name());
        });
    Row[] rows = new Row[64];
    for (int i = 0; i < rows.length; i++) {
      rows[i] = new Row(i, "r" + i);
    }
    RecordingBatch<Row, Integer> batch = RecordingBatch.of(rows);

    assertThatThrownBy(() -> sink.write(batch)).isInstanceOf(SQLException.class)
        .hasMessageContaining("NO_SUCH_TABLE");
    assertThat(batch.failed()).as("thrown for the whole batch, which the batcher fails as one").isEmpty();
    assertThat(batch.completed()).isEmpty();
  }
}
