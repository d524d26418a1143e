package dev.ringbatch.jmh;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.ringbatch.Batch;
import dev.ringbatch.BatchSink;
import dev.ringbatch.postgresql.PgCopySink;
import dev.ringbatch.postgresql.PgUnnest;
import dev.ringbatch.sink.JdbcBatchSink;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.StringReader;
import java.sql.Connection;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.postgresql.PGConnection;

/**
 * What one batch costs each PostgreSQL sink, the WAL flush included: embedded PostgreSQL 18 with {@code fsync} and
 * {@code synchronous_commit} on, one batch of {@code rows} rows ({@code id bigint, caller int, payload text}, as in
 * the JDBC demo) written per operation, on one connection from a HikariCP pool. {@code rawCopy} is the ceiling:
 * the same rows in one autocommit {@code COPY} through pgjdbc's {@code CopyManager}, no per-row outcome.
 * {@code copyIdempotent} is {@code PgCopySink} with {@code idempotentOn("id")} on a table with a primary key.
 *
 * <p>Run: {@code java -jar jmh/target/benchmarks.jar PgSinkBenchmark -f 3}; the score is µs per batch (divide by
 * {@code rows} for µs per row).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 4, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(3)
public class PgSinkBenchmark {
  @Param({"copy", "copyIdempotent", "unnest", "rows", "rawCopy"})
  public String sink;

  @Param({"16", "64", "1024"})
  public int rows;

  private EmbeddedPostgres postgres;
  private HikariDataSource pool;
  private BatchSink<Event, Integer> writer;
  private List<Event> events;
  private String copyText;
  private long nextId;

  /** One row of the demo's table. */
  public record Event(long id, int caller, String payload) {}

  @Setup(Level.Trial)
  public void start() throws Exception {
    postgres = EmbeddedPostgres.builder().setServerConfig("fsync", "on").setServerConfig("synchronous_commit", "on")
        .start();
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(postgres.getJdbcUrl("postgres", "postgres"));
    config.setMaximumPoolSize(2);
    pool = new HikariDataSource(config);
    execute("CREATE TABLE events (id BIGINT" + (sink.equals("copyIdempotent") ? " PRIMARY KEY" : "")
        + ", caller INT NOT NULL, payload TEXT NOT NULL)");
    writer = switch (sink) {
      case "copy" -> PgCopySink.<Event>into(pool, "events").column("id", Event::id).column("caller", Event::caller)
          .column("payload", Event::payload).build();
      case "copyIdempotent" -> PgCopySink.<Event>into(pool, "events").column("id", Event::id)
          .column("caller", Event::caller).column("payload", Event::payload).idempotentOn("id").build();
      case "unnest" -> PgUnnest.<Event>sink(pool, "INSERT INTO events (id, caller, payload)"
              + " SELECT * FROM unnest(?::bigint[], ?::int[], ?::text[])")
          .column("bigint", Event::id).column("int", Event::caller).column("text", Event::payload).build();
      case "rows" -> JdbcBatchSink.of(pool, "INSERT INTO events (id, caller, payload) VALUES (?, ?, ?)",
          (ps, e) -> {
            ps.setLong(1, e.id());
            ps.setInt(2, e.caller());
            ps.setString(3, e.payload());
          });
      case "rawCopy" -> null;
      default -> throw new IllegalArgumentException("sink must be copy, copyIdempotent, unnest, rows or rawCopy but"
          + " was '" + sink + "'");
    };
  }

  @Setup(Level.Invocation)
  public void nextBatch() {
    // Fresh ids every batch (the idempotent sink would otherwise find every row already there); built outside the
    // measured call, as a batcher hands the sink items already made.
    events = new ArrayList<>(rows);
    StringBuilder text = new StringBuilder(rows * 40);
    for (int i = 0; i < rows; i++) {
      long id = nextId++;
      Event e = new Event(id, (int) (id % 64), "event " + id + " from caller " + id % 64);
      events.add(e);
      text.append(e.id()).append('\t').append(e.caller()).append('\t').append(e.payload()).append('\n');
    }
    copyText = text.toString();
  }

  @Benchmark
  public int writeOneBatch() throws Exception {
    if (writer == null) {
      try (Connection c = pool.getConnection()) {
        return (int) c.unwrap(PGConnection.class).getCopyAPI()
            .copyIn("COPY events (id, caller, payload) FROM STDIN", new StringReader(copyText));
      }
    }
    OutcomeArray batch = new OutcomeArray(events);
    writer.write(batch);
    return batch.written();
  }

  @TearDown(Level.Iteration)
  public void truncate() throws Exception {
    execute("TRUNCATE events");
  }

  @TearDown(Level.Trial)
  public void stop() throws Exception {
    pool.close();
    postgres.close();
  }

  private void execute(String sql) throws Exception {
    try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  /** The batch a sink is handed: items and an outcome each; fails the run if any row was not written. */
  static final class OutcomeArray implements Batch<Event, Integer> {
    private final List<Event> items;
    private int written;

    OutcomeArray(List<Event> items) {
      this.items = items;
    }

    @Override
    public int size() {
      return items.size();
    }

    @Override
    public Event item(int index) {
      return items.get(index);
    }

    @Override
    public List<Event> items() {
      return items;
    }

    @Override
    public long weight() {
      return 0;
    }

    @Override
    public void complete(int index, Integer result) {
      written++;
    }

    @Override
    public void fail(int index, Throwable cause) {
      throw new IllegalStateException("row " + index + " failed", cause);
    }

    int written() {
      if (written != items.size()) {
        throw new IllegalStateException(written + " of " + items.size() + " rows written");
      }
      return written;
    }
  }
}
