package dev.ringbatch.examples;

import com.zaxxer.hikari.HikariDataSource;
import dev.ringbatch.Adaptive;
import dev.ringbatch.BatchSink;
import dev.ringbatch.postgresql.OverlappingCopySink;
import dev.ringbatch.postgresql.PgCopySink;
import dev.ringbatch.postgresql.PgUnnest;
import dev.ringbatch.sink.JdbcBatchSink;
import java.io.PrintStream;
import java.io.StringReader;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.LongStream;
import org.jspecify.annotations.Nullable;
import org.postgresql.PGConnection;

/**
 * C concurrent callers insert rows one per call into PostgreSQL: first each call as its own autocommit
 * {@code INSERT} through a HikariCP pool (what a service does without batching), then each call through a
 * ringbatch sink, then through what a user would otherwise write (a {@link QueueBatcher} of
 * {@code --queue-batch} rows (default: the batcher's cap, 4,096), one {@code COPY} per batch, and the same with a rewritten multi-row
 * {@code INSERT}); last, one {@code COPY} of the same rows on a single connection, and the machine's bound for C
 * callers fitted in the same run ({@link CopyFit}). Checks after every run that the table holds exactly the rows
 * acknowledged, row by row ({@link TableCheck}), and ends with one {@code RESULT} line. {@code --baselines off} skips the queue batchers and the fit. The batched
 * runs ({@link BatchedRuns}) first write {@code --warmup} rows each untimed (default a fifth of the rows, at most
 * 20,000), so that none is timed while the JIT compiles the JDBC code they share; then {@code --rounds} timed rounds
 * (default 1), in an order that rotates from round to round, reported as medians.
 *
 * <p>Options: {@code --callers 64 --rows 100000 --pool 16 --sink copy|unnest|rows --shards 1 --connections 1
 * --jdbc-url URL --durability on|off --adaptive default|off|throughput|latency:MILLIS --queue-batch 4096 --baselines on|off --warmup 20000 --rounds 1}. With {@code --shards N}, N batchers keyed by row id write in parallel, one
 * connection each. With {@code --sink copy --connections N}, one batcher copies up to N batches at once (one is
 * copied while another commits). With {@code --bad-percent P}, P rows in every hundred break a {@code CHECK}
 * constraint: each run must fail exactly those, and write the others. {@code --adaptive default} (the default)
 * sets nothing on the batcher but the connections, as a user who tunes nothing; {@code off} fixes a ring of
 * {@code max(4096, callers)} and a cap of 4,096 with no linger, the tuned demo of earlier releases; the others
 * keep that ring and cap and choose the mode.
 */
final class JdbcDemo {
  static final String OPTIONS = "--callers --rows --pool --sink --shards --connections --bad-percent --jdbc-url"
      + " --durability --threads --adaptive --queue-batch --baselines --warmup --rounds";

  /** The batcher's ring and batch cap, and the queue batchers' cap unless {@code --queue-batch} says otherwise. */
  static final int BATCH_CAP = 4096;

  private JdbcDemo() {}

  /** {@code off}, {@code throughput}, or {@code latency:<millis>}: the limits mode of a tuned batcher. */
  static @Nullable Adaptive adaptive(String mode) {
    if (mode.equals("off")) {
      return null;
    }
    if (mode.equals("throughput")) {
      return Adaptive.throughput();
    }
    if (mode.startsWith("latency:")) {
      try {
        return Adaptive.latency(Duration.ofMillis(Long.parseLong(mode.substring("latency:".length()))));
      } catch (NumberFormatException e) {
        // falls through to the message below
      }
    }
    throw new IllegalArgumentException("--adaptive must be default, off, throughput or latency:<millis> but was '" + mode
        + "'");
  }

  /** One generated row: a caller's event. */
  record Event(long id, int caller, String payload) {}

  static String run(DemoOptions options, PrintStream out) throws Exception {
    int callers = options.intValue("callers", 64);
    int rows = options.intValue("rows", 100_000);
    int poolSize = options.intValue("pool", Math.min(callers, 64)); // a pool sized for the callers, within max_connections
    String sinkMode = options.stringValue("sink", "copy");
    int shards = options.intValue("shards", 1);
    int connections = options.intValue("connections", 1);
    int badPercent = options.intValue("bad-percent", 0, 0);
    String jdbcUrl = options.stringValue("jdbc-url", "");
    String durability = options.stringValue("durability", "on");
    String threads = options.stringValue("threads", "platform"); // platform, or virtual on JDK 21+
    String limits = options.stringValue("adaptive", "default");
    Adaptive adaptive = limits.equals("default") ? null : adaptive(limits);
    int queueBatch = options.intValue("queue-batch", BATCH_CAP); // the same cap as the batcher's
    String baselines = options.stringValue("baselines", "on");
    int warmup = options.intValue("warmup", Math.min(20_000, rows / 5), 0); // rows untimed per batched run
    int rounds = options.intValue("rounds", 1, 1); // timed rounds of the batched runs, their order rotating
    CallerHarness.threads(threads); // a bad value or an old JDK fails here, before the database starts
    options.requireAllUsed(OPTIONS);
    if (badPercent > 100) {
      throw new IllegalArgumentException("--bad-percent must be at most 100 but was " + badPercent);
    }
    if (!List.of("copy", "unnest", "rows").contains(sinkMode)) {
      throw new IllegalArgumentException("--sink must be 'copy', 'unnest' or 'rows' but was '" + sinkMode + "'");
    }
    if (!baselines.equals("on") && !baselines.equals("off")) {
      throw new IllegalArgumentException("--baselines must be 'on' or 'off' but was '" + baselines + "'");
    }
    if (connections > 1 && (!sinkMode.equals("copy") || shards > 1)) {
      throw new IllegalArgumentException("--connections " + connections + " needs --sink copy and --shards 1");
    }
    out.printf("jdbc demo: %d callers on %s threads insert %,d rows one per call; unbatched pool of %d"
        + " connections, ringbatch %s sink, %d shard(s), %d connection(s) each%n", callers, threads, rows, poolSize,
        sinkMode, shards, connections);

    try (DemoDatabase database = DemoDatabase.start(jdbcUrl, durability, out);
         HikariDataSource pool = database.pool("ringbatch-demo", poolSize);
         HikariDataSource rewriting = database.pool("queue-rewrite", 1, "reWriteBatchedInserts", "true")) {
      DemoDatabase.execute(pool, "DROP TABLE IF EXISTS demo_events");
      DemoDatabase.execute(pool, "CREATE TABLE demo_events (id BIGINT PRIMARY KEY, caller INT NOT NULL,"
          + " payload TEXT NOT NULL CHECK (payload <> 'bad'))");

      TableCheck unbatchedCheck = new TableCheck(rows);
      CallerHarness.Outcome unbatched = CallerHarness.run("unbatched", callers, rows, (caller, i) -> {
        try (Connection c = pool.getConnection();
             PreparedStatement ps = c.prepareStatement(
                 "INSERT INTO demo_events (id, caller, payload) VALUES (?, ?, ?)")) {
          Event e = event(caller, i, badPercent);
          ps.setLong(1, e.id());
          ps.setInt(2, e.caller());
          ps.setString(3, e.payload());
          ps.executeUpdate();
        }
        unbatchedCheck.written(i);
      }, out, threads);
      long unbatchedWrong = unbatchedCheck.wrongRowsThenEmpty(pool);

      BatchedRuns.Result runs = BatchedRuns.run(new BatchedRuns.Setup(pool, rewriting, callers, badPercent, threads,
          sinkMode, shards, connections, limits, adaptive, queueBatch, baselines.equals("on")), rows, warmup, rounds, out);
      BatchedRuns.Arm batched = runs.ringbatch();
      BatchedRuns.Arm queueCopy = runs.queueCopy();
      BatchedRuns.Arm queueRewrite = runs.queueRewrite();

      CopyFit fit = null;
      if (baselines.equals("on")) {
        CopyFit copyFit = CopyFit.measure("COPY", pool, JdbcDemo::copyRows, id -> event(0, id, 0));
        DemoDatabase.execute(pool, "TRUNCATE demo_events");
        CopyFit insertFit = CopyFit.measure("multi-row INSERT", rewriting, JdbcDemo::insertRows, id -> event(0, id, 0));
        DemoDatabase.execute(pool, "TRUNCATE demo_events");
        out.println(copyFit.describe(callers));
        out.println(insertFit.describe(callers));
        fit = copyFit.boundRowsPerSecond(callers) >= insertFit.boundRowsPerSecond(callers) ? copyFit : insertFit;
      }

      TableCheck copyCheck = new TableCheck(rows);
      double copySeconds = copy(pool, rows, badPercent, copyCheck);
      long copyWrong = copyCheck.wrongRowsThenEmpty(pool);

      long badRows = LongStream.range(0, rows).filter(i -> bad(i, badPercent)).count();
      long goodRows = rows - badRows;
      long lost = unbatchedWrong + copyWrong + batched.lost + queueCopy.lost + queueRewrite.lost;
      double bound = fit == null ? Double.NaN : fit.boundRowsPerSecond(callers);
      double copyPerSecond = goodRows / copySeconds;
      out.println();
      out.println("                      rows/s    p50 µs    p99 µs   mean batch"
          + (rounds > 1 ? "   (batched: medians of " + rounds + " rounds)" : ""));
      row(out, "unbatched (autocommit)", unbatched.perSecond(), unbatched.p50Micros(), unbatched.p99Micros(), 1);
      for (BatchedRuns.Arm arm : List.of(batched, queueCopy, queueRewrite)) {
        if (arm.ran()) {
          row(out, arm.writer.label, arm.perSecond(), arm.p50Micros(), arm.p99Micros(), arm.meanBatch());
        }
      }
      row(out, "COPY, one connection", copyPerSecond, Double.NaN, Double.NaN, rows);
      if (fit != null) {
        row(out, "bound for " + callers + " callers", bound, Double.NaN, Double.NaN, callers);
        out.println("the bound is the better method's: " + fit.method());
      }
      out.printf(Locale.ROOT, "rows missing, extra or changed in the table after every run: %d; ringbatch failed %d calls"
          + " a round (%d rows are bad)%n", lost, batched.failed, badRows);
      out.printf(Locale.ROOT, "ringbatch sink: %d batches, %.0f µs per batch, busy %.0f%% of the run%n",
          batched.batches, batched.sinkNanos / 1e3 / Math.max(1, batched.batches), 100 * batched.sinkBusy());
      String result = String.format(Locale.ROOT, "RESULT jdbc sink=%s callers=%d threads=%s rows=%d shards=%d"
              + " connections=%d"
              + " unbatched_rows_per_s=%.0f batched_rows_per_s=%.0f speedup=%.2f copy_rows_per_s=%.0f copy_ratio=%.2f mean_batch=%.1f"
              + " sink_busy=%.2f bad_rows=%d failed=%d lost=%d"
              + " queue_copy_rows_per_s=%.0f queue_copy_batch=%.1f queue_copy_failed=%d"
              + " queue_rewrite_rows_per_s=%.0f queue_rewrite_batch=%.1f"
              + " vs_best_queue=%.2f bound_rows_per_s=%.0f vs_bound=%.2f warmup_rows=%d rounds=%d",
          sinkMode, callers, threads, rows, shards, connections, unbatched.perSecond(), batched.perSecond(),
          batched.perSecond() / unbatched.perSecond(), copyPerSecond, batched.perSecond() / copyPerSecond,
          batched.meanBatch(), batched.sinkBusy(), badRows, batched.failed, lost,
          queueCopy.perSecond(), queueCopy.meanBatch(), queueCopy.failed, queueRewrite.perSecond(),
          queueRewrite.meanBatch(), runs.vsBestQueue(), bound, batched.perSecond() / bound, warmup, rounds);
      out.println(result);
      return result;
    }
  }

  /** One {@code COPY} of {@code rows} as CSV: what a user writes with pgjdbc's {@code CopyManager}. */
  static void copyRows(Connection connection, List<Event> rows) throws java.sql.SQLException {
    copyIn(connection, csv(rows));
  }

  private static String csv(List<Event> rows) {
    StringBuilder csv = new StringBuilder(rows.size() * 40);
    for (Event e : rows) {
      csv.append(e.id()).append(',').append(e.caller()).append(',').append(e.payload()).append('\n');
    }
    return csv.toString();
  }

  private static void copyIn(Connection connection, String csv) throws java.sql.SQLException {
    try {
      connection.unwrap(PGConnection.class).getCopyAPI()
          .copyIn("COPY demo_events (id, caller, payload) FROM STDIN (FORMAT csv)", new StringReader(csv));
    } catch (java.io.IOException e) {
      throw new java.sql.SQLException("COPY failed", e);
    }
  }

  /** One {@code executeBatch}; on a pool with {@code reWriteBatchedInserts=true}, multi-row {@code INSERT}s. */
  static void insertRows(Connection connection, List<Event> rows) throws java.sql.SQLException {
    try (PreparedStatement ps = connection.prepareStatement(
        "INSERT INTO demo_events (id, caller, payload) VALUES (?, ?, ?)")) {
      for (Event e : rows) {
        ps.setLong(1, e.id());
        ps.setInt(2, e.caller());
        ps.setString(3, e.payload());
        ps.addBatch();
      }
      ps.executeBatch();
    }
  }

  static Event event(int caller, long index, int badPercent) {
    String payload = bad(index, badPercent) ? "bad" : "event " + index + " from caller " + caller;
    return new Event(index, caller, payload);
  }

  /** Whether row {@code index} breaks the table's CHECK constraint: the first P rows of every hundred. */
  private static boolean bad(long index, int badPercent) {
    return index % 100 < badPercent;
  }

  static BatchSink<Event, Integer> sink(HikariDataSource pool, String mode) {
    if (mode.equals("copy")) {
      // tag::copy[]
      return PgCopySink.<Event>into(pool, "demo_events")
          .column("id", Event::id)
          .column("caller", Event::caller)
          .column("payload", Event::payload)
          .build();
      // end::copy[]
    }
    if (mode.equals("rows")) {
      // tag::jdbc-rows[]
      return JdbcBatchSink.of(pool, "INSERT INTO demo_events (id, caller, payload) VALUES (?, ?, ?)", (ps, e) -> {
        ps.setLong(1, e.id());
        ps.setInt(2, e.caller());
        ps.setString(3, e.payload());
      });
      // end::jdbc-rows[]
    }
    // tag::jdbc-unnest[]
    return PgUnnest.<Event>sink(pool, "INSERT INTO demo_events (id, caller, payload)"
            + " SELECT * FROM unnest(?::bigint[], ?::int[], ?::text[])")
        .column("bigint", Event::id)
        .column("int", Event::caller)
        .column("text", Event::payload)
        .build();
    // end::jdbc-unnest[]
  }

  static OverlappingCopySink<Event> overlappingCopySink(HikariDataSource pool, int connections) {
    return PgCopySink.<Event>into(pool, "demo_events")
        .column("id", Event::id)
        .column("caller", Event::caller)
        .column("payload", Event::payload)
        .buildOverlapping(connections);
  }

  /** The ceiling: all rows in one COPY on one connection, the data prepared beforehand. */
  private static double copy(HikariDataSource pool, int rows, int badPercent, TableCheck check) throws Exception {
    List<Event> good = new ArrayList<>(rows);
    for (int i = 0; i < rows; i++) {
      if (!bad(i, badPercent)) { // one refused row would fail the whole COPY: the ceiling copies the good rows only
        good.add(event(i % 64, i, 0));
      }
    }
    String data = csv(good);
    double seconds;
    try (Connection c = pool.getConnection()) {
      long t0 = System.nanoTime();
      copyIn(c, data);
      seconds = (System.nanoTime() - t0) / 1e9;
    }
    good.forEach(e -> check.written(e.id()));
    return seconds;
  }

  private static void row(PrintStream out, String label, double perSecond, double p50, double p99, double batch) {
    String size = String.format(Locale.ROOT, batch == Math.rint(batch) ? "%.0f" : "%.1f", batch);
    out.printf(Locale.ROOT, "%-22s %9.0f %9s %9s %12s%n", label, perSecond, micros(p50), micros(p99), size);
  }

  private static String micros(double value) {
    return Double.isNaN(value) ? "-" : String.format(Locale.ROOT, "%.0f", value);
  }
}
