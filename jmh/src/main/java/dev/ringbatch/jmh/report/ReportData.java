package dev.ringbatch.jmh.report;

import dev.ringbatch.jmh.report.BenchmarkReport.BatchSizes;
import dev.ringbatch.jmh.report.BenchmarkReport.Experiment;
import java.util.Collection;
import java.util.Map;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;

/** Looks up figures in the suite's results by benchmark, parameter and thread count. */
final class ReportData {
  private final Map<Experiment, Collection<RunResult>> results;
  private final BatchSizes batchSizes;

  ReportData(Map<Experiment, Collection<RunResult>> results, BatchSizes batchSizes) {
    this.results = results;
    this.batchSizes = batchSizes;
  }

  /** The result of {@code benchmark} (method name, e.g. "offer") with {@code param=value} at {@code threads}. */
  RunResult find(String benchmark, String param, String value, int threads) {
    for (Collection<RunResult> runs : results.values()) {
      for (RunResult run : runs) {
        String name = run.getParams().getBenchmark();
        if (name.endsWith("." + benchmark) && run.getParams().getThreads() == threads
            && (param == null || value.equals(run.getParams().getParam(param)))) {
          return run;
        }
      }
    }
    return null;
  }

  /** Every result of the experiments with {@code goal}, in run order. */
  java.util.List<RunResult> runs(String goal) {
    java.util.List<RunResult> all = new java.util.ArrayList<>();
    results.forEach((experiment, runs) -> {
      if (experiment.goal().equals(goal)) {
        all.addAll(runs);
      }
    });
    return all;
  }

  double score(String benchmark, String param, String value, int threads) {
    RunResult run = find(benchmark, param, value, threads);
    return run == null ? Double.NaN : run.getPrimaryResult().getScore();
  }

  double error(String benchmark, String param, String value, int threads) {
    RunResult run = find(benchmark, param, value, threads);
    return run == null ? Double.NaN : run.getPrimaryResult().getScoreError();
  }

  /**
   * Whether the figure is told apart from zero: its confidence half-width is known and smaller than the
   * mean. A target "met" on a figure that is not is reported as unclear instead.
   */
  boolean clear(String benchmark, String param, String value, int threads) {
    double error = error(benchmark, param, value, threads);
    return !Double.isNaN(error) && error < score(benchmark, param, value, threads);
  }

  /** The lowest and highest measurement iteration, as "min–max": single forks here can be bimodal. */
  String range(String benchmark, String param, String value, int threads) {
    RunResult run = find(benchmark, param, value, threads);
    if (run == null) {
      return "n/a";
    }
    double min = Double.MAX_VALUE;
    double max = -Double.MAX_VALUE;
    for (org.openjdk.jmh.results.BenchmarkResult b : run.getBenchmarkResults()) {
      for (org.openjdk.jmh.results.IterationResult i : b.getIterationResults()) {
        double score = i.getPrimaryResult().getScore();
        min = Math.min(min, score);
        max = Math.max(max, score);
      }
    }
    return BenchmarkReport.fmt(min, 1) + "–" + BenchmarkReport.fmt(max, 1);
  }

  /** A percentile of a sample-time result, in its unit. */
  double percentile(String benchmark, String param, String value, int threads, double percentile) {
    RunResult run = find(benchmark, param, value, threads);
    return run == null ? Double.NaN : run.getPrimaryResult().getStatistics().getPercentile(percentile);
  }

  /** Bytes allocated per operation, from the runs that had the GC profiler (the P7 experiment). */
  double allocation(String benchmark, String target, int threads) {
    for (RunResult run : runs("P7")) {
      if (run.getParams().getBenchmark().endsWith("." + benchmark) && run.getParams().getThreads() == threads
          && target.equals(run.getParams().getParam("target"))) {
        Result<?> alloc = run.getSecondaryResults().get("gc.alloc.rate.norm");
        return alloc == null ? Double.NaN : alloc.getScore();
      }
    }
    return Double.NaN;
  }

  /** An error bar for a chart: the error, or 0 where JMH has none (a single iteration). */
  double errorBar(String benchmark, String param, String value, int threads) {
    double error = error(benchmark, param, value, threads);
    return Double.isNaN(error) ? 0 : error;
  }

  /** Forks, warm-up and measurement iterations of the first result: the suite runs all alike. */
  String runShape() {
    RunResult run = first();
    if (run == null) {
      return "no results";
    }
    org.openjdk.jmh.infra.BenchmarkParams p = run.getParams();
    return p.getForks() + " JMH fork(s) each, " + p.getWarmup().getCount() + " × " + p.getWarmup().getTime()
        + " warm-up and " + p.getMeasurement().getCount() + " × " + p.getMeasurement().getTime() + " measurement";
  }

  /** The JMH version, as its runner reports itself. */
  String jmhVersion() {
    return "JMH " + org.openjdk.jmh.util.Version.getPlainVersion();
  }

  /** The forked JVM of the first result: its name and version. */
  String jvm() {
    return first() == null ? "unknown JVM" : first().getParams().getVmName() + " " + first().getParams().getVmVersion();
  }

  /** The forked JVMs' arguments (the same for every experiment). */
  String jvmFlags() {
    return first() == null || first().getParams().getJvmArgs().isEmpty() ? "none"
        : "`" + String.join(" ", first().getParams().getJvmArgs()) + "`";
  }

  private RunResult first() {
    for (Collection<RunResult> runs : results.values()) {
      for (RunResult run : runs) {
        return run;
      }
    }
    return null;
  }

  /** What each fork logged for {@code key} at {@code threads} (see {@link BatchSizes}). */
  java.util.List<double[]> forks(String key, int threads) {
    return batchSizes.forks(key, threads);
  }

  /**
   * The result of {@code benchmark} whose parameters include every {@code name, value} pair given, whatever the
   * thread count; null if the suite did not run it.
   */
  RunResult findWith(String benchmark, String... nameValues) {
    for (Collection<RunResult> runs : results.values()) {
      for (RunResult run : runs) {
        if (run.getParams().getBenchmark().endsWith("." + benchmark) && matches(run, nameValues)) {
          return run;
        }
      }
    }
    return null;
  }

  private static boolean matches(RunResult run, String... nameValues) {
    for (int i = 0; i + 1 < nameValues.length; i += 2) {
      if (!nameValues[i + 1].equals(run.getParams().getParam(nameValues[i]))) {
        return false;
      }
    }
    return true;
  }

  /** A secondary result's score (e.g. an auxiliary counter), or NaN if absent. */
  static double secondary(RunResult run, String name) {
    if (run == null) {
      return Double.NaN;
    }
    Result<?> result = run.getSecondaryResults().get(name);
    return result == null ? Double.NaN : result.getScore();
  }
}
