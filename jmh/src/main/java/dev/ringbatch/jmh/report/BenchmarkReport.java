package dev.ringbatch.jmh.report;

import dev.ringbatch.jmh.BatchLog;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import me.tongfei.progressbar.DelegatingProgressBarConsumer;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import org.openjdk.jmh.profile.GCProfiler;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.results.format.ResultFormatFactory;
import org.openjdk.jmh.results.format.ResultFormatType;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.runner.options.VerboseMode;

/**
 * Runs a fixed suite of the benchmarks side by side and writes {@code jmh/target/report/benchmarks.md}
 * (tables with the ratios against each baseline and the project's targets), PNG charts under
 * {@code benchmarks/} beside it, the JMH JSON, the machine, JVM, JMH version and commit it ran on. With
 * {@code --publish=true} ({@code -Dreport.publish} on the Maven command) it writes under {@code docs/} instead,
 * replacing the committed report. {@code --short} (the default, about 22 minutes on 2 cores), {@code --full}
 * (more iterations and 8 producers) or {@code --smoke} (one 200 ms iteration each, written under
 * {@code jmh/target/report-smoke}, to check the pipeline).
 *
 * <p>Run: {@code mvn -q -B package -Preport -DskipTests -pl jmh -am} (add {@code -Dreport.args=--full} for the
 * full suite, {@code -Dreport.publish} to update {@code docs/}).
 */
public final class BenchmarkReport {

  private BenchmarkReport() {}

  /**
   * One JMH invocation of the suite; {@code sizes} also varies the ring size and the batch limit; {@code params}
   * are further {@code -p name=values} pairs, e.g. {@code "callers", "1,4,16"}.
   */
  record Experiment(String goal, String include, int threads, String[] targets, boolean gc, boolean sizes,
      String... params) {
    Experiment(String goal, String include, int threads, String[] targets, boolean gc) {
      this(goal, include, threads, targets, gc, false);
    }
  }

  /** Virtual threads arrived in JDK 21: on an older JDK the report leaves their cells out and says so. */
  static final boolean VIRTUAL_THREADS = Runtime.version().feature() >= 21;

  /** Forks per figure: JMH's error then includes fork-to-fork variation, which one fork hides. */
  static final int FORKS = 3;
  /** Forks per closed-loop (P3) figure: its cells are the noisiest and the issue's targets ask for five. */
  static final int CLOSED_LOOP_FORKS = 5;

  public static void main(String[] args) throws Exception {
    ReportArgs parsed = ReportArgs.parse(args);
    boolean full = parsed.list().contains("--full");
    boolean smoke = parsed.smoke();
    // The report goes to target/ unless asked (-Dreport.publish) to replace the committed one under docs/;
    // --smoke checks the pipeline in well under a minute and is never published.
    Path docs = parsed.out("docs");
    Path resultsDir = docs.resolve("benchmarks");
    Files.createDirectories(resultsDir);
    Path batchLog = Files.createTempFile("ringbatch-batches", ".txt");

    List<Experiment> suite = suite(full);
    List<RunResult> all = new ArrayList<>();
    Map<Experiment, Collection<RunResult>> byExperiment = new LinkedHashMap<>();
    long started = System.nanoTime();
    try (ProgressBar bar = progressBar(suite.size())) {
      for (Experiment experiment : suite) {
        bar.setExtraMessage(" " + experiment.goal() + " " + experiment.include() + " t=" + experiment.threads());
        Collection<RunResult> results = run(experiment, full, smoke, batchLog);
        byExperiment.put(experiment, results);
        all.addAll(results);
        bar.step();
      }
    }
    double minutes = (System.nanoTime() - started) / 60e9;

    Path json = resultsDir.resolve("results.json");
    try (PrintStream out = new PrintStream(Files.newOutputStream(json), true, StandardCharsets.UTF_8)) {
      ResultFormatFactory.getInstance(ResultFormatType.JSON, out).writeOut(all);
    }
    ReportData data = new ReportData(byExperiment, BatchSizes.read(batchLog));
    String markdown = new ReportWriter(data, resultsDir, full, minutes, Machine.describe(),
        LocalDate.now(ZoneOffset.UTC)).write();
    Files.writeString(docs.resolve("benchmarks.md"), markdown, StandardCharsets.UTF_8);
    ZeroTuningSection.splice(docs.resolve("benchmarks.md"), ZeroTuningSection.PUBLISHED); // P11 has its own run
    System.out.println("wrote " + docs.resolve("benchmarks.md") + ", " + resultsDir + "/*.png and " + json);
  }

  static List<Experiment> suite(boolean full) {
    String[] queues = {"ringbatch", "abq", "lbq", "direct"};
    List<Experiment> suite = new ArrayList<>();
    // Throughput without profilers; allocation measured apart (P7), since -prof gc perturbs the timing.
    suite.add(new Experiment("P1", "ThroughputBenchmark.offer$", 1, queues, false));
    suite.add(new Experiment("P1", "RawRingBenchmark.publish_1producer$", 1, new String[0], false));
    int[] producers = full ? new int[] {1, 2, 4, 8} : new int[] {1, 2, 4};
    for (int p : producers) {
      suite.add(new Experiment("P2", "ThroughputBenchmark.submit$", p, queues, false));
    }
    suite.add(new Experiment("P7", "ThroughputBenchmark", 1, new String[] {"ringbatch"}, true));
    String[] batchers = {"ringbatch", "abq", "lbq"};
    for (String sink : WaitingCallersReport.SINKS) {
      suite.add(new Experiment("P3", "ClosedLoopBenchmark.callers$", 1, batchers, false, false,
          "threads", "platform", "sink", sink, "callers", WaitingCallersReport.join(WaitingCallersReport.PLATFORM_K)));
      if (VIRTUAL_THREADS) {
        suite.add(new Experiment("P3", "ClosedLoopBenchmark.callers$", 1, batchers, false, false,
            "threads", "virtual", "sink", sink, "callers", WaitingCallersReport.join(WaitingCallersReport.VIRTUAL_K)));
      }
    }
    suite.add(new Experiment("P9", "BurstBenchmark.submitThenJoinAll$", 1, batchers, false));
    suite.add(new Experiment("P10", "BlockedProducersBenchmark.window$", 1, new String[0], false));
    suite.add(new Experiment("P4", "RoundTripBenchmark", 1, new String[0], false));
    suite.add(new Experiment("P8", "DeviceBenchmark.write$", 2, new String[] {"ringbatch", "direct"}, false));
    if (full) {
      suite.add(new Experiment("sizes", "ThroughputBenchmark.submit$", 2, new String[] {"ringbatch", "abq"},
          false, true));
      suite.add(new Experiment("waits", "WaitModeBenchmark", 1, new String[0], false));
      suite.add(new Experiment("P1", "RawRingBenchmark.publish_2producers$", 2, new String[0], false));
    }
    return suite;
  }

  private static Collection<RunResult> run(Experiment experiment, boolean full, boolean smoke, Path batchLog)
      throws RunnerException {
    TimeValue iteration = smoke ? TimeValue.milliseconds(200) : TimeValue.seconds(1);
    ChainedOptionsBuilder options = new OptionsBuilder()
        .include(experiment.include())
        .threads(experiment.threads())
        .forks(smoke ? 1 : experiment.goal().equals("P3") ? CLOSED_LOOP_FORKS : FORKS)
        .warmupIterations(smoke ? 1 : full ? 5 : 2)
        .warmupTime(iteration)
        .measurementIterations(smoke ? 1 : full ? 10 : 3)
        .measurementTime(iteration)
        .jvmArgsAppend("-D" + BatchLog.PROPERTY + "=" + batchLog)
        .shouldFailOnError(true)
        .verbosity(VerboseMode.SILENT);
    if (experiment.targets().length > 0) {
      options.param("target", experiment.targets());
    }
    if (experiment.include().startsWith("RoundTrip")) {
      options.param("waitMode", "BLOCKING");
    }
    if (experiment.include().startsWith("RawRing")) {
      options.param("strategy", "LiteBlockingWaitStrategy", "BlockingWaitStrategy");
    }
    if (experiment.sizes()) {
      options.param("capacity", "1024", "16384").param("maxBatch", "64", "1024");
    }
    for (int i = 0; i + 1 < experiment.params().length; i += 2) {
      options.param(experiment.params()[i], experiment.params()[i + 1].split(","));
    }
    if (experiment.include().startsWith("BlockedProducers")) { // single shots of 5 s each
      options.warmupIterations(smoke ? 0 : 1).measurementIterations(smoke ? 1 : 2);
      if (smoke) {
        options.param("seconds", "1");
      }
    }
    if (experiment.gc()) {
      options.addProfiler(GCProfiler.class);
    }
    return new Runner(options.build()).run();
  }

  static ProgressBar progressBar(int steps) {
    ProgressBarBuilder builder = new ProgressBarBuilder().setTaskName("benchmarks").setInitialMax(steps);
    if (System.console() == null) {
      builder.setConsumer(new DelegatingProgressBarConsumer(System.out::println)).setUpdateIntervalMillis(10_000);
    }
    return builder.build();
  }

  /** Formats a number for the tables. */
  static String fmt(double value, int decimals) {
    return String.format(Locale.ROOT, "%." + decimals + "f", value);
  }

  /**
   * What the forks logged through {@link BatchLog}: per key ({@code target/threads/sink}) and caller count,
   * one row per fork of mean batch size and any further figures (a closed loop's p50 and p99 in µs).
   */
  static final class BatchSizes {
    private final Map<String, List<double[]>> rows;

    private BatchSizes(Map<String, List<double[]>> rows) {
      this.rows = rows;
    }

    static BatchSizes read(Path file) throws IOException {
      Map<String, List<double[]>> rows = new LinkedHashMap<>();
      for (String line : Files.readAllLines(file)) {
        String[] parts = line.trim().split(" ");
        if (parts.length >= 3) {
          double[] row = new double[parts.length - 2];
          for (int i = 2; i < parts.length; i++) {
            row[i - 2] = Double.parseDouble(parts[i]);
          }
          rows.computeIfAbsent(parts[0] + "/" + parts[1], k -> new ArrayList<>()).add(row);
        }
      }
      return new BatchSizes(rows);
    }

    /** Every fork's row for {@code key} at {@code threads} callers; empty if none was logged. */
    List<double[]> forks(String key, int threads) {
      return rows.getOrDefault(key + "/" + threads, List.of());
    }
  }
}
