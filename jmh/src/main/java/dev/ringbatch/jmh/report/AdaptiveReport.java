package dev.ringbatch.jmh.report;

import static dev.ringbatch.jmh.report.BenchmarkReport.fmt;

import dev.ringbatch.jmh.BatchLog;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import me.tongfei.progressbar.ProgressBar;
import org.openjdk.jmh.results.BenchmarkResult;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.runner.options.VerboseMode;

/**
 * Adaptive limits against static ones (issue 24), with {@code AdaptiveLimitsBenchmark}: a grid of static
 * (maxBatchSize, linger) configurations beside the two adaptive modes for each sink cost F and load K, and runs
 * whose load steps through 10, 2,000 and 100 callers with the time series behind the charts. Writes
 * {@code issue24-adaptive.md} and its charts ({@link AdaptiveCharts}) into {@code docs/results} with
 * {@code -Dreport.publish}, else into {@code jmh/target/report}.
 *
 * <p>Run: {@code mvn -q -B package -Preport -DskipTests -pl jmh -am
 * -Dreport.main=dev.ringbatch.jmh.report.AdaptiveReport
 * -Dreport.args="--jvms=/usr/lib/jvm/temurin-25-jdk-amd64/bin/java,/usr/lib/jvm/java-17-openjdk-amd64/bin/java"}
 * ({@code --forks=N}, default 3; {@code --smoke}: one short fork per cell, to check the report itself).
 */
public final class AdaptiveReport {
  static final String INCLUDE = "AdaptiveLimitsBenchmark.callers$";
  static final String[] STATIC_LINGERS = {"0", "20", "100", "500"};
  /** The latency mode's target in the grid: binding where natural batching splits the callers in two cohorts. */
  static final String GRID_P99_MICROS = "5000";
  static final String STEPS = "10>2000>100";

  private AdaptiveReport() {}

  /** One configuration of the grid: its label, and the benchmark's parameters that make it. */
  record Config(String label, boolean adaptive, String... params) {}

  /** One cell of the grid on one JVM: the callers' threads, F and K; and each configuration's run. */
  record Cell(String java, int feature, String threads, String fixedMicros, String callers,
      Map<String, RunResult> runs) {}

  public static void main(String[] args) throws Exception {
    ReportArgs parsed = ReportArgs.parse(args);
    boolean smoke = parsed.smoke();
    int forks = parsed.forks();
    String[] jvms = parsed.jvms();
    Path out = parsed.out("docs/results");
    Map<String, Path> batchLogs = new LinkedHashMap<>(); // one per JVM: its lines name no JVM
    for (String java : jvms) {
      batchLogs.put(java, Files.createTempFile("ringbatch-adaptive-batches", ".txt"));
    }
    Path stepLog = Files.createTempFile("ringbatch-adaptive-steps", ".txt");
    Path series = Files.createTempFile("ringbatch-adaptive-series", ".txt");
    List<Config> configs = configs();
    List<Cell> cells = new ArrayList<>();
    long started = System.nanoTime();
    int steps = 0;
    for (String java : jvms) {
      steps += (VariantsReport.feature(java) >= 21 ? 2 : 1) * configs.size();
    }
    steps += 4 * 2;
    try (ProgressBar bar = BenchmarkReport.progressBar(steps)) {
      String stepsJava = jvms[0];
      for (String java : jvms) {
        int feature = VariantsReport.feature(java);
        for (String threads : feature >= 21 ? new String[] {"virtual", "platform"} : new String[] {"platform"}) {
          String[] fixed = threads.equals("virtual") ? new String[] {"20", "500", "2000"} : new String[] {"20", "2000"};
          String[] callers = threads.equals("virtual") ? new String[] {"10", "100", "2000"} : new String[] {"10", "100"};
          Path batchLog = batchLogs.get(java);
          runGrid(() -> options(java, forks, smoke, batchLog, stepLog, null), new Cell(java, feature, threads, "",
              "", Map.of()), fixed, callers, configs, cells, bar);
        }
        if (feature >= 21) {
          stepsJava = java;
        }
      }
      List<RunResult> stepRuns = new ArrayList<>();
      for (String f : new String[] {"20", "2000"}) {
        for (String[] mode : stepModes(f)) {
          bar.setExtraMessage(" steps F=" + f + " " + mode[0]);
          ChainedOptionsBuilder options = options(stepsJava, forks, smoke, batchLogs.get(stepsJava), stepLog, series)
              .param("threads", "virtual").param("fixedMicros", f).param("callers", STEPS)
              .warmupIterations(smoke ? 3 : 3).measurementIterations(smoke ? 3 : 6);
          for (int i = 1; i + 1 < mode.length; i += 2) {
            options.param(mode[i], mode[i + 1]);
          }
          stepRuns.addAll(run(options));
          bar.step();
        }
      }
      double minutes = (System.nanoTime() - started) / 60e9;
      Map<String, List<BatchLogLine>> logs = new LinkedHashMap<>();
      for (Map.Entry<String, Path> log : batchLogs.entrySet()) {
        logs.put(log.getKey(), BatchLogLine.read(log.getValue()));
      }
      AdaptiveTables tables = new AdaptiveTables(configs, cells, logs, StepLine.read(stepLog));
      String charts = AdaptiveCharts.write(out, SeriesLine.read(series));
      String markdown = tables.markdown(forks, minutes, parsed.command(), charts, LocalDate.now(ZoneOffset.UTC), Machine.commit(),
          Machine.describe());
      Files.writeString(out.resolve("issue24-adaptive.md"), markdown, StandardCharsets.UTF_8);
      System.out.println("wrote " + out.resolve("issue24-adaptive.md") + " (" + stepRuns.size() + " step runs)");
    }
  }

  /**
   * Runs each configuration over the cells F x K of one JVM and thread kind ({@code like}'s), one JMH run per
   * configuration, and adds the cells, with their runs by configuration label, to {@code cells}.
   */
  /** Benchmark parameters with several default values that a configuration may leave unset. */
  private static final Map<String, String> PINNED = Map.of("maxBatch", "4096", "lingerMicros", "0");

  static void runGrid(Supplier<ChainedOptionsBuilder> options, Cell like, String[] fixed, String[] callers,
      List<Config> configs, List<Cell> cells, ProgressBar bar) throws RunnerException {
    Map<String, Cell> byKey = new LinkedHashMap<>();
    for (String f : fixed) {
      for (String k : callers) {
        Cell cell = cells.stream().filter(c -> c.java().equals(like.java()) && c.threads().equals(like.threads())
            && c.fixedMicros().equals(f) && c.callers().equals(k)).findFirst().orElse(null);
        if (cell == null) { // else a later round of the same grid: its forks join the cell's
          cell = new Cell(like.java(), like.feature(), like.threads(), f, k, new LinkedHashMap<>());
          cells.add(cell);
        }
        byKey.put(f + "/" + k, cell);
      }
    }
    for (Config config : configs) {
      bar.setExtraMessage(" JDK " + like.feature() + " " + like.threads() + " " + config.label());
      ChainedOptionsBuilder run = options.get().param("threads", like.threads()).param("fixedMicros", fixed)
          .param("callers", callers);
      List<String> params = List.of(config.params());
      for (int i = 0; i + 1 < params.size(); i += 2) {
        run.param(params.get(i), params.get(i + 1));
      }
      // A parameter the configuration ignores is pinned: else JMH runs the configuration once per default value
      PINNED.forEach((name, value) -> {
        if (!params.contains(name)) {
          run.param(name, value);
        }
      });
      for (RunResult result : run(run)) {
        String key = result.getParams().getParam("fixedMicros") + "/" + result.getParams().getParam("callers");
        byKey.get(key).runs().merge(config.label(), result, AdaptiveReport::joined);
      }
      bar.step();
    }
  }

  /** Two runs of one configuration in one cell as one, their forks together: rounds of an interleaved grid. */
  static RunResult joined(RunResult earlier, RunResult later) {
    List<BenchmarkResult> forks = new ArrayList<>(earlier.getBenchmarkResults());
    forks.addAll(later.getBenchmarkResults());
    return new RunResult(earlier.getParams(), forks);
  }

  /** The grid's configurations: the default, four static lingers under a cap of 4,096, and the two modes. */
  static List<Config> configs() {
    List<Config> configs = new ArrayList<>();
    configs.add(new Config("default (256, 0)", false, "limits", "static", "maxBatch", "256", "lingerMicros", "0"));
    for (String linger : STATIC_LINGERS) {
      configs.add(new Config("static (4096, " + linger + " µs)", false, "limits", "static", "maxBatch", "4096",
          "lingerMicros", linger));
    }
    configs.add(new Config("adaptive throughput", true, "limits", "throughput", "maxBatch", "4096"));
    configs.add(new Config("adaptive latency " + Integer.parseInt(GRID_P99_MICROS) / 1000 + " ms", true,
        "limits", "latency", "maxBatch", "4096", "p99Micros", GRID_P99_MICROS));
    return configs;
  }

  /** The step runs' modes: a label, then parameters. */
  static List<String[]> stepModes(String fixedMicros) {
    String target = fixedMicros.equals("20") ? "2000" : "5000";
    return List.of(
        new String[] {"default (256, 0)", "limits", "static", "maxBatch", "256", "lingerMicros", "0"},
        new String[] {"static (4096, 100 µs)", "limits", "static", "maxBatch", "4096", "lingerMicros", "100"},
        new String[] {"adaptive throughput", "limits", "throughput", "maxBatch", "4096"},
        new String[] {"adaptive latency", "limits", "latency", "maxBatch", "4096", "p99Micros", target});
  }

  static ChainedOptionsBuilder options(String java, int forks, boolean smoke, Path batchLog, Path stepLog,
      Path series) {
    TimeValue iteration = smoke ? TimeValue.milliseconds(300) : TimeValue.seconds(1);
    String args = "-D" + BatchLog.PROPERTY + "=" + batchLog + " -Dringbatch.jmh.steps=" + stepLog
        + (series == null ? "" : " -Dringbatch.jmh.series=" + series);
    return new OptionsBuilder().include(INCLUDE).jvm(java).threads(1).forks(smoke ? 1 : forks)
        .warmupIterations(smoke ? 1 : 2).warmupTime(iteration).measurementIterations(smoke ? 1 : 3)
        .measurementTime(iteration).jvmArgsAppend(args.split(" ")).shouldFailOnError(true)
        .verbosity(VerboseMode.SILENT);
  }

  static Collection<RunResult> run(ChainedOptionsBuilder options) throws RunnerException {
    return new Runner(options.build()).run();
  }

  /** A line of the batch log: the benchmark's key, K, the mean batch, p50 and p99 in microseconds. */
  record BatchLogLine(String key, int callers, double meanBatch, double p50, double p99) {
    static List<BatchLogLine> read(Path file) throws IOException {
      List<BatchLogLine> lines = new ArrayList<>();
      for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
        String[] f = line.trim().split("\\s+");
        if (f.length >= 5 && f[0].startsWith("adaptive/")) {
          lines.add(new BatchLogLine(f[0], Integer.parseInt(f[1]), Double.parseDouble(f[2]),
              Double.parseDouble(f[3]), Double.parseDouble(f[4])));
        }
      }
      return lines;
    }
  }

  /** A line of the step log (see {@code StepLog}). */
  record StepLine(String key, long pid, int index, boolean measured, int load, double callsPerSecond, double p50,
      double p99, double meanBatch, double batchCv, double lingerMicros, int sizeLimit) {
    static List<StepLine> read(Path file) throws IOException {
      List<StepLine> lines = new ArrayList<>();
      for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
        String[] f = line.trim().split("\\s+");
        if (f.length == 12) {
          lines.add(new StepLine(f[0], Long.parseLong(f[1]), Integer.parseInt(f[2]), f[3].equals("measure"),
              Integer.parseInt(f[4]), Double.parseDouble(f[5]), Double.parseDouble(f[6]), Double.parseDouble(f[7]),
              Double.parseDouble(f[8]), Double.parseDouble(f[9]), Double.parseDouble(f[10]),
              Integer.parseInt(f[11])));
        }
      }
      return lines;
    }
  }

  /** A line of the time series (see {@code StepLog}). */
  record SeriesLine(String key, long pid, long millis, int load, double callsPerSecond, double p99Micros,
      double meanBatch, double lingerMicros, int sizeLimit) {
    static List<SeriesLine> read(Path file) throws IOException {
      List<SeriesLine> lines = new ArrayList<>();
      for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
        String[] f = line.trim().split("\\s+");
        if (f.length == 9) {
          lines.add(new SeriesLine(f[0], Long.parseLong(f[1]), Long.parseLong(f[2]), Integer.parseInt(f[3]),
              Double.parseDouble(f[4]), Double.parseDouble(f[5]), Double.parseDouble(f[6]),
              Double.parseDouble(f[7]), Integer.parseInt(f[8])));
        }
      }
      return lines;
    }
  }

  static String micros(double value) {
    return value >= 10_000 ? fmt(value / 1000, 1) + " ms" : fmt(value, 0) + " µs";
  }
}
