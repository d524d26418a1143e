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
 * replacing the committed report. {@code --short} (the default, a few minutes on 2 cores), {@code --full}
 * (more iterations and 8 producers) or {@code --smoke} (one 200 ms iteration each, written under
 * {@code jmh/target/report-smoke}, to check the pipeline).
 *
 * <p>Run: {@code mvn -q -B package -Preport -DskipTests -pl jmh -am} (add {@code -Dreport.args=--full} for the
 * full suite, {@code -Dreport.publish} to update {@code docs/}).
 */
public final class BenchmarkReport {

  private BenchmarkReport() {}

  /** One JMH invocation of the suite; {@code sizes} also varies the ring size and the batch limit. */
  record Experiment(String goal, String include, int threads, String[] targets, boolean gc, boolean sizes) {
    Experiment(String goal, String include, int threads, String[] targets, boolean gc) {
      this(goal, include, threads, targets, gc, false);
    }
  }

  /** Forks per figure: JMH's error then includes fork-to-fork variation, which one fork hides. */
  static final int FORKS = 3;

  public static void main(String[] args) throws Exception {
    System.setProperty("java.awt.headless", "true");
    boolean full = List.of(args).contains("--full");
    boolean smoke = List.of(args).contains("--smoke");
    boolean publish = List.of(args).contains("--publish=true");
    // The report goes to target/ unless asked (-Dreport.publish) to replace the committed one under docs/;
    // --smoke checks the pipeline in well under a minute and is never published.
    Path docs = smoke ? Path.of("jmh/target/report-smoke") : publish ? Path.of("docs") : Path.of("jmh/target/report");
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
    for (int k : new int[] {1, 4, 16, 64}) {
      suite.add(new Experiment("P3", "ClosedLoopBenchmark.submitJoin$", k, new String[] {"ringbatch", "abq"}, false));
    }
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
        .forks(smoke ? 1 : FORKS)
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
    if (experiment.gc()) {
      options.addProfiler(GCProfiler.class);
    }
    return new Runner(options.build()).run();
  }

  private static ProgressBar progressBar(int steps) {
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

  /** Mean batch sizes logged by the closed-loop benchmark, by target and thread count. */
  static final class BatchSizes {
    private final Map<String, Double> sizes;

    private BatchSizes(Map<String, Double> sizes) {
      this.sizes = sizes;
    }

    static BatchSizes read(Path file) throws IOException {
      Map<String, Double> sizes = new LinkedHashMap<>();
      for (String line : Files.readAllLines(file)) {
        String[] parts = line.trim().split(" ");
        if (parts.length == 3) {
          sizes.put(parts[0] + "/" + parts[1], Double.parseDouble(parts[2]));
        }
      }
      return new BatchSizes(sizes);
    }

    double get(String target, int threads) {
      return sizes.getOrDefault(target + "/" + threads, Double.NaN);
    }
  }
}
