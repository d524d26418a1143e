package dev.ringbatch.jmh.report;

import static dev.ringbatch.jmh.report.AdaptiveReport.micros;
import static dev.ringbatch.jmh.report.BenchmarkReport.fmt;

import dev.ringbatch.jmh.report.AdaptiveReport.BatchLogLine;
import dev.ringbatch.jmh.report.AdaptiveReport.Cell;
import dev.ringbatch.jmh.report.AdaptiveReport.Config;
import dev.ringbatch.jmh.report.AdaptiveReport.StepLine;
import java.time.LocalDate;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.openjdk.jmh.results.RunResult;

/** The report's tables: the grid against its targets, and the load steps. */
final class AdaptiveTables {
  private static final int CALLS = 50;
  private final List<Config> configs;
  private final List<Cell> cells;
  private final Map<String, List<BatchLogLine>> batchLogs;
  private final List<StepLine> steps;
  private int throughputMet;
  private int throughputCells;
  private int latencyMet;
  private int latencyCells;

  AdaptiveTables(List<Config> configs, List<Cell> cells, Map<String, List<BatchLogLine>> batchLogs,
      List<StepLine> steps) {
    this.configs = configs;
    this.cells = cells;
    this.batchLogs = batchLogs;
    this.steps = steps;
  }

  String markdown(int forks, double minutes, String args, String charts, LocalDate date, String commit,
      String machine) {
    StringBuilder s = new StringBuilder("# Issue 24: adaptive limits against static ones\n\n")
        .append("Generated ").append(date).append(" at ").append(commit).append(" on ").append(machine).append(", ")
        .append(forks).append(" forks per figure, 2 × 1 s warm-up and 3 × 1 s measured per fork (load steps: 3 + 6 ")
        .append("iterations of 1 s), ").append(fmt(minutes, 0)).append(" minutes. Command: `mvn -q -B package ")
        .append("-Preport -DskipTests -pl jmh -am -Dreport.main=dev.ringbatch.jmh.report.AdaptiveReport ")
        .append("-Dreport.args=\"").append(args).append("\"`.\n\n")
        .append("`AdaptiveLimitsBenchmark`: K callers in a closed loop (`submit(x).join()`, 50 calls each per ")
        .append("invocation) into a sink that waits F + 500 ns per item. Calls/s are medians over forks; p99 is ")
        .append("the median over forks of each fork's p99 round trip. *Best static* is the best of the default ")
        .append("(maxBatchSize 256, no linger) and maxBatchSize 4,096 with a linger of 0, 20, 100 or 500 µs. ")
        .append("Targets (issue 24): throughput mode ≥ 95 % of the best static, and above the default wherever the ")
        .append("best static is (by 5 % or more); latency mode (p99 target ").append(micros(Double.parseDouble(
            AdaptiveReport.GRID_P99_MICROS))).append(") p99 within 10 % of the target and ≥ 90 % of the best ")
        .append("static configuration whose p99 meets it. ✗ marks a miss.\n\n");
    Map<String, List<Cell>> groups = cells.stream().collect(Collectors.groupingBy(
        c -> "JDK " + c.feature() + ", " + c.threads() + " callers", TreeMap::new, Collectors.toList()));
    for (Map.Entry<String, List<Cell>> group : groups.entrySet()) {
      s.append("## ").append(group.getKey()).append("\n\n| F | K | default | best static | throughput mode | ")
          .append("latency mode |\n|---|---|---|---|---|---|\n");
      for (Cell cell : group.getValue()) {
        row(s, cell);
      }
      s.append('\n');
    }
    s.append("Throughput mode meets its target in ").append(throughputMet).append(" of ").append(throughputCells)
        .append(" cells; latency mode in ").append(latencyMet).append(" of ").append(latencyCells).append(".\n\n");
    stepTable(s);
    s.append("\n## Over time\n").append(charts);
    return s.toString();
  }

  private void row(StringBuilder s, Cell cell) {
    int k = Integer.parseInt(cell.callers());
    double target = Double.parseDouble(AdaptiveReport.GRID_P99_MICROS);
    String best = null;
    double bestCalls = 0;
    String bestWithin = null;
    double bestWithinCalls = 0;
    for (Config config : configs) {
      RunResult run = cell.runs().get(config.label());
      if (config.adaptive() || run == null) {
        continue;
      }
      double calls = calls(run, k);
      if (calls > bestCalls) {
        best = config.label();
        bestCalls = calls;
      }
      if (p99(cell, config) <= target && calls > bestWithinCalls) {
        bestWithin = config.label();
        bestWithinCalls = calls;
      }
    }
    Config defaults = configs.get(0);
    double defaultCalls = calls(cell.runs().get(defaults.label()), k);
    s.append("| ").append(micros(Double.parseDouble(cell.fixedMicros()))).append(" | ").append(k).append(" | ")
        .append(fmt(defaultCalls, 0)).append(", p99 ").append(micros(p99(cell, defaults))).append(" | ")
        .append(best).append(": ").append(fmt(bestCalls, 0)).append(" |");
    Config throughput = configs.get(configs.size() - 2);
    RunResult t = cell.runs().get(throughput.label());
    if (t != null) {
      double calls = calls(t, k);
      boolean met = calls >= 0.95 * bestCalls && (bestCalls < 1.05 * defaultCalls || calls > defaultCalls);
      throughputCells++;
      throughputMet += met ? 1 : 0;
      s.append(' ').append(fmt(calls, 0)).append(" = ").append(fmt(calls / bestCalls, 2)).append("× best, ")
          .append(fmt(calls / defaultCalls, 2)).append("× default, p99 ").append(micros(p99(cell, throughput)))
          .append(met ? "" : " ✗").append(" |");
    }
    Config latency = configs.get(configs.size() - 1);
    RunResult l = cell.runs().get(latency.label());
    if (l != null) {
      double calls = calls(l, k);
      double p99 = p99(cell, latency);
      boolean met = p99 <= 1.1 * target && (bestWithin == null || calls >= 0.9 * bestWithinCalls);
      latencyCells++;
      latencyMet += met ? 1 : 0;
      s.append(" p99 ").append(micros(p99)).append(", ").append(fmt(calls, 0)).append(bestWithin == null
          ? " (no static meets the target)" : " = " + fmt(calls / bestWithinCalls, 2) + "× " + bestWithin)
          .append(met ? "" : " ✗").append(" |");
    }
    s.append('\n');
  }

  private static double calls(RunResult run, int callers) {
    return VariantsReport.median(VariantsReport.forkScores(run)) * callers * CALLS;
  }

  /** The median over forks of the p99 the batch log holds for this cell and configuration. */
  private double p99(Cell cell, Config config) {
    String key = "adaptive/F=" + cell.fixedMicros() + "us/c=500ns/" + cell.threads() + "/" + tail(config);
    double[] values = batchLogs.getOrDefault(cell.java(), List.of()).stream()
        .filter(l -> l.key().equals(key) && l.callers() == Integer.parseInt(cell.callers()))
        .mapToDouble(BatchLogLine::p99).sorted().toArray();
    return values.length == 0 ? Double.NaN : VariantsReport.median(values);
  }

  /** The benchmark key's tail for {@code config} (see AdaptiveLimitsBenchmark.key). */
  static String tail(Config config) {
    Map<String, String> p = new TreeMap<>();
    for (int i = 0; i + 1 < config.params().length; i += 2) {
      p.put(config.params()[i], config.params()[i + 1]);
    }
    String limits = p.get("limits");
    return limits.equals("static") ? "max=" + p.get("maxBatch") + "/linger=" + p.get("lingerMicros") + "us"
        : limits + (limits.equals("latency") ? "=" + p.get("p99Micros") + "us" : "") + "/max=" + p.get("maxBatch");
  }

  private void stepTable(StringBuilder s) {
    s.append("## Load steps (").append(AdaptiveReport.STEPS).append(" callers, virtual threads)\n\n")
        .append("Each iteration runs one load; the table gives, per configuration and load, the medians over the ")
        .append("measured iterations of all forks (two per load per fork): calls/s, p99, mean batch and its ")
        .append("coefficient of variation (oscillation), and the linger and size limit in force at the ")
        .append("iteration's end.\n\n| F | configuration | K | calls/s | p99 | mean batch | CV | linger | size |\n")
        .append("|---|---|---|---|---|---|---|---|---|\n");
    Map<String, List<StepLine>> byKey = steps.stream().filter(StepLine::measured).filter(l -> l.key().endsWith("/steps"))
        .collect(Collectors.groupingBy(StepLine::key, TreeMap::new, Collectors.toList()));
    for (Map.Entry<String, List<StepLine>> e : byKey.entrySet()) {
      Map<Integer, List<StepLine>> byLoad = e.getValue().stream().collect(Collectors.groupingBy(StepLine::load,
          TreeMap::new, Collectors.toList()));
      String[] parts = e.getKey().replace("/steps", "").split("/", 5);
      for (Map.Entry<Integer, List<StepLine>> load : byLoad.entrySet()) {
        List<StepLine> ls = load.getValue();
        s.append("| ").append(parts[1]).append(" | ").append(parts.length == 5 ? parts[4] : e.getKey())
            .append(" | ").append(load.getKey()).append(" | ")
            .append(fmt(median(ls, StepLine::callsPerSecond), 0)).append(" | ")
            .append(micros(median(ls, StepLine::p99))).append(" | ")
            .append(fmt(median(ls, StepLine::meanBatch), 1)).append(" | ")
            .append(fmt(median(ls, StepLine::batchCv), 2)).append(" | ")
            .append(micros(median(ls, StepLine::lingerMicros))).append(" | ")
            .append(fmt(median(ls, l -> l.sizeLimit()), 0)).append(" |\n");
      }
    }
  }

  private static double median(List<StepLine> lines, java.util.function.ToDoubleFunction<StepLine> f) {
    double[] v = lines.stream().mapToDouble(f).sorted().toArray();
    return v.length == 0 ? Double.NaN : VariantsReport.median(v);
  }
}
