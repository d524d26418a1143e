package dev.ringbatch.examples;

import com.lmax.disruptor.util.Util;
import com.zaxxer.hikari.HikariDataSource;
import dev.ringbatch.Adaptive;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.BatcherStats;
import dev.ringbatch.examples.JdbcDemo.Event;
import dev.ringbatch.stats.StatsRecorder;
import java.io.OutputStream;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.Histogram;
import org.jspecify.annotations.Nullable;

/**
 * The JDBC demo's batched runs, side by side: ringbatch and the two hand-written queue batchers ({@link QueueBatcher}
 * with one {@code COPY}, and with one rewritten multi-row {@code INSERT}, per batch). Each first writes a warm-up of
 * untimed rows, so that none is timed while the JIT compiles the JDBC code they share; then come the timed rounds,
 * each arm once per round, the order rotating from round to round (ringbatch first in the first round, the queue +
 * {@code COPY} batcher first in the second, ...), so that no arm always runs first on a machine whose speed drifts
 * within a run. An arm's rows/s is the median of its rounds, its latencies are over all of them, and ringbatch's
 * ratio is its median over the better queue batcher's median. After every run, the warm-up's too, the table must hold
 * exactly the rows that run told "written", by id, each with the payload its caller passed; every row it has wrong
 * counts as lost.
 */
final class BatchedRuns {
  /** What the demo's options say about the batched runs. */
  record Setup(HikariDataSource pool, HikariDataSource rewriting, int callers, int badPercent, String threads,
      String sinkMode, int shards, int connections, String limits, @Nullable Adaptive adaptive, int queueBatch,
      boolean baselines) {}

  /** The writers compared. */
  enum Writer {
    RINGBATCH("ringbatch"), QUEUE_COPY("queue + COPY"), QUEUE_REWRITE("queue + rewrite");

    final String label;

    Writer(String label) {
      this.label = label;
    }
  }

  /** One arm's timed rounds. */
  static final class Arm {
    final Writer writer;
    private final List<Double> perSecond = new ArrayList<>();
    private final List<Double> meanBatch = new ArrayList<>();
    private final Histogram latencyNanos = new Histogram(3);
    /** The most calls any round failed: each round fails the same bad rows. */
    long failed;
    /**
     * Rows wrong in the table after a run, summed over the runs (the warm-up's included): an acknowledged row missing,
     * a row nobody was told was written, or a row whose payload is not the one its caller passed.
     */
    long lost;
    /** ringbatch only: the sink's time and the batches, summed over the rounds, and the sink's busy share per round. */
    long sinkNanos;
    long batches;
    private final List<Double> sinkBusy = new ArrayList<>();

    Arm(Writer writer) {
      this.writer = writer;
    }

    void add(CallerHarness.Outcome run, double batch, long wrong) {
      perSecond.add(run.perSecond());
      meanBatch.add(batch);
      latencyNanos.add(run.latencyNanos());
      failed = Math.max(failed, run.failed());
      lost += wrong;
    }

    boolean ran() {
      return !perSecond.isEmpty();
    }

    double perSecond() {
      return median(perSecond);
    }

    double meanBatch() {
      return median(meanBatch);
    }

    double sinkBusy() {
      return median(sinkBusy);
    }

    double perSecondInRound(int round) {
      return round < perSecond.size() ? perSecond.get(round) : Double.NaN;
    }

    double p50Micros() {
      return ran() ? latencyNanos.getValueAtPercentile(50) / 1e3 : Double.NaN;
    }

    double p99Micros() {
      return ran() ? latencyNanos.getValueAtPercentile(99) / 1e3 : Double.NaN;
    }
  }

  /** The three arms after every round, and ringbatch's median rows/s over the better queue batcher's. */
  record Result(Arm ringbatch, Arm queueCopy, Arm queueRewrite, double vsBestQueue) {}

  private BatchedRuns() {}

  /** Runs the warm-up ({@code warmup} rows per arm, none if 0), then {@code rounds} timed rounds of {@code rows}. */
  static Result run(Setup setup, int rows, int warmup, int rounds, PrintStream out) throws Exception {
    PrintStream quiet = new PrintStream(OutputStream.nullOutputStream());
    Arm ringbatch = new Arm(Writer.RINGBATCH);
    Arm queueCopy = new Arm(Writer.QUEUE_COPY);
    Arm queueRewrite = new Arm(Writer.QUEUE_REWRITE);
    List<Arm> order = new ArrayList<>(setup.baselines() ? List.of(ringbatch, queueCopy, queueRewrite)
        : List.of(ringbatch));
    if (warmup > 0) {
      for (Arm arm : order) {
        Arm untimed = new Arm(arm.writer);
        run(setup, untimed, warmup, quiet);
        arm.lost += untimed.lost; // a warm-up is checked as every run is
      }
      out.printf("warm-up: ringbatch and each queue batcher wrote %,d rows first, not timed (--warmup 0 skips)%n",
          warmup);
    }
    for (int round = 0; round < rounds; round++) {
      for (Arm arm : order) {
        run(setup, arm, rows, out);
      }
      if (rounds > 1) {
        StringBuilder line = new StringBuilder("round ").append(round + 1).append(':');
        for (Arm arm : order) {
          line.append(String.format(Locale.ROOT, " %s %.0f rows/s;", arm.writer.label, arm.perSecondInRound(round)));
        }
        out.println(line.substring(0, line.length() - 1));
      }
      Collections.rotate(order, -1); // the next round starts with the arm that ran second in this one
    }
    // The medians' ratio, as the table shows them: a median of each round's ratio to the better of two noisy queue
    // figures would lean against ringbatch
    double vsBestQueue = ringbatch.perSecond() / Math.max(queueCopy.perSecond(), queueRewrite.perSecond());
    return new Result(ringbatch, queueCopy, queueRewrite, vsBestQueue);
  }

  private static void run(Setup setup, Arm arm, int rows, PrintStream out) throws Exception {
    switch (arm.writer) {
      case RINGBATCH -> ringbatch(setup, arm, rows, out);
      case QUEUE_COPY -> queue(setup, arm, setup.pool(), JdbcDemo::copyRows, rows, out);
      case QUEUE_REWRITE -> queue(setup, arm, setup.rewriting(), JdbcDemo::insertRows, rows, out);
    }
  }

  private static void ringbatch(Setup setup, Arm arm, int rows, PrintStream out) throws Exception {
    TableCheck check = new TableCheck(rows);
    LongAdder sinkNanos = new LongAdder();
    List<AutoCloseable> sinks = new ArrayList<>();
    BatcherConfig config = config(setup);
    HikariDataSource pool = setup.pool();
    CallerHarness.Outcome run;
    BatcherStats stats;
    try (Batcher<Event, Integer> batcher = setup.connections() > 1
        ? Batcher.ofAsync("demo-events", config, opened(sinks, JdbcDemo.overlappingCopySink(pool, setup.connections())))
        : setup.shards() == 1
        ? Batcher.of("demo-events", config, opened(sinks, JdbcDemo.sink(pool, setup.sinkMode())))
        : Batcher.sharded("demo-events", config, setup.shards(), Event::id,
            shard -> opened(sinks, JdbcDemo.sink(pool, setup.sinkMode())))) {
      batcher.addStatsRecorder(new StatsRecorder() {
        @Override
        public void recordBatch(int size, long weight, long writeNanos, int failed) {
          sinkNanos.add(writeNanos);
        }
      });
      run = CallerHarness.run(arm.writer.label, setup.callers(), rows, (caller, i) -> {
        batcher.submitAndWait(JdbcDemo.event(caller, i, setup.badPercent()));
        check.written(i);
      }, out, setup.threads());
      if (config.adaptive() != null) {
        out.println("adaptive limits (" + config.adaptive() + ", --adaptive " + setup.limits() + ") at the end: "
            + batcher.limits());
      }
      stats = batcher.close(Duration.ofSeconds(30)).stats();
    } finally {
      for (AutoCloseable sink : sinks) {
        sink.close();
      }
    }
    arm.add(run, stats.meanBatchSize(), check.wrongRowsThenEmpty(pool));
    arm.sinkNanos += sinkNanos.sum();
    arm.batches += stats.batches();
    arm.sinkBusy.add(sinkNanos.sum() / 1e9 / run.seconds() / setup.shards() / setup.connections()); // per connection
  }

  /**
   * The batcher's config: only the connections unless {@code --adaptive} tunes it, as a user who tunes nothing; tuned,
   * room for every caller, as the queue batcher's queue has ({@code max(cap, callers)}: a ring is a power of two).
   */
  private static BatcherConfig config(Setup setup) {
    BatcherConfig.Builder builder = BatcherConfig.builder().maxInFlightBatches(setup.connections());
    if (!setup.limits().equals("default")) {
      builder.ringSize(Util.ceilingNextPowerOfTwo(Math.max(JdbcDemo.BATCH_CAP, setup.callers())))
          .maxBatchSize(JdbcDemo.BATCH_CAP);
      if (setup.adaptive() == null) {
        builder.linger(Duration.ZERO);
      } else {
        builder.adaptive(setup.adaptive());
      }
    }
    return builder.build();
  }

  /** The same callers through a hand-written {@link QueueBatcher}. */
  private static void queue(Setup setup, Arm arm, HikariDataSource pool, QueueBatcher.Writer<Event> writer, int rows,
      PrintStream out) throws Exception {
    TableCheck check = new TableCheck(rows);
    double meanBatch;
    CallerHarness.Outcome run;
    try (QueueBatcher<Event> batcher = new QueueBatcher<>("queue-batcher", Math.max(setup.queueBatch(),
        setup.callers()), setup.queueBatch(), pool, writer)) {
      run = CallerHarness.run(arm.writer.label, setup.callers(), rows, (caller, i) -> {
        batcher.submitAndWait(JdbcDemo.event(caller, i, setup.badPercent()));
        check.written(i);
      }, out, setup.threads());
      meanBatch = batcher.meanBatchSize();
    }
    arm.add(run, meanBatch, check.wrongRowsThenEmpty(setup.pool()));
  }

  private static <S> S opened(List<AutoCloseable> sinks, S sink) {
    if (sink instanceof AutoCloseable closeable) {
      sinks.add(closeable);
    }
    return sink;
  }

  private static double median(List<Double> values) {
    if (values.isEmpty()) {
      return Double.NaN;
    }
    List<Double> sorted = new ArrayList<>(values);
    Collections.sort(sorted);
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }
}
