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
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import me.tongfei.progressbar.ProgressBar;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.runner.options.VerboseMode;

/**
 * Where services live: the cells with a target against the {@code ArrayBlockingQueue} batcher, measured on
 * every given JVM, each with a young ring and with the ring promoted by a full GC before every iteration (JMH
 * {@code -gc true}), side by side in one run. Writes {@code benchmarks-variants.md} beside the main report.
 *
 * <p>Run: {@code mvn -q -B package -Preport -DskipTests -pl jmh -am
 * -Dreport.main=dev.ringbatch.jmh.report.VariantsReport
 * -Dreport.args="--jvms=/usr/lib/jvm/java-17-openjdk-amd64/bin/java,/usr/lib/jvm/temurin-25-jdk-amd64/bin/java"}
 * (add {@code -Dreport.publish} to write under {@code docs/}; {@code --forks=N}, default 3; {@code --smoke}).
 */
public final class VariantsReport {

  private VariantsReport() {}

  /** One JVM and whether every iteration starts with a full GC. */
  record Variant(String java, int feature, boolean gc) {
    String label() {
      return "JDK " + feature + (gc ? " -gc true" : "");
    }
  }

  /**
   * One cell: a benchmark, its parameters, the target ratio against abq; {@code lowerIsBetter} for average-time
   * benchmarks; {@code virtual} cells need JDK 21.
   */
  record Cell(String name, String include, double target, boolean lowerIsBetter, boolean virtual, String... params) {}

  public static void main(String[] args) throws Exception {
    ReportArgs parsed = ReportArgs.parse(args);
    boolean smoke = parsed.smoke();
    int forks = parsed.forks();
    List<Variant> variants = new ArrayList<>();
    for (String java : parsed.jvms()) {
      int feature = feature(java);
      variants.add(new Variant(java, feature, false));
      variants.add(new Variant(java, feature, true));
    }
    Path docs = parsed.out("docs");
    Path batchLog = Files.createTempFile("ringbatch-batches", ".txt");
    List<Cell> cells = cells();
    RunResult[][][] results = new RunResult[cells.size()][variants.size()][2];
    long started = System.nanoTime();
    try (ProgressBar bar = BenchmarkReport.progressBar(cells.size() * variants.size())) {
      for (int v = 0; v < variants.size(); v++) {
        for (int c = 0; c < cells.size(); c++) {
          Cell cell = cells.get(c);
          bar.setExtraMessage(" " + variants.get(v).label() + " " + cell.name());
          if (!cell.virtual() || variants.get(v).feature() >= 21) {
            Collection<RunResult> runs = run(cell, variants.get(v), forks, smoke, batchLog);
            for (RunResult run : runs) {
              results[c][v][run.getParams().getParam("target").equals("ringbatch") ? 0 : 1] = run;
            }
          }
          bar.step();
        }
      }
    }
    double minutes = (System.nanoTime() - started) / 60e9;
    String markdown = write(cells, variants, results, forks, minutes, parsed.command());
    Files.writeString(docs.resolve("benchmarks-variants.md"), markdown, StandardCharsets.UTF_8);
    System.out.println("wrote " + docs.resolve("benchmarks-variants.md"));
  }

  static List<Cell> cells() {
    List<Cell> cells = new ArrayList<>();
    cells.add(new Cell("P1 offer, 1 producer", "ThroughputBenchmark.offer$", 2.0, false, false));
    cells.add(new Cell("P2 submit, 1 producer", "ThroughputBenchmark.submit$", 1.0, false, false));
    for (String sink : WaitingCallersReport.SINKS) {
      for (int k : WaitingCallersReport.PLATFORM_K) {
        cells.add(new Cell("P3 platform K=" + k + " " + sink, "ClosedLoopBenchmark.callers$", 1.0, false, false,
            "threads", "platform", "sink", sink, "callers", String.valueOf(k)));
      }
      for (int k : WaitingCallersReport.VIRTUAL_K) {
        cells.add(new Cell("P3 virtual K=" + k + " " + sink, "ClosedLoopBenchmark.callers$", k >= 1_024 ? 1.3 : 1.0,
            false, true, "threads", "virtual", "sink", sink, "callers", String.valueOf(k)));
      }
    }
    for (String batch : new String[] {"64", "1024"}) {
      cells.add(new Cell("P9 bursts, batches of " + batch, "BurstBenchmark.submitThenJoinAll$", 1.5, true, false,
          "maxBatch", batch));
    }
    return cells;
  }

  private static Collection<RunResult> run(Cell cell, Variant variant, int forks, boolean smoke, Path batchLog)
      throws RunnerException {
    TimeValue iteration = smoke ? TimeValue.milliseconds(200) : TimeValue.seconds(1);
    ChainedOptionsBuilder options = new OptionsBuilder()
        .include(cell.include())
        .jvm(variant.java())
        .shouldDoGC(variant.gc())
        .threads(1)
        .forks(smoke ? 1 : forks)
        .warmupIterations(smoke ? 1 : 2)
        .warmupTime(iteration)
        .measurementIterations(smoke ? 1 : 3)
        .measurementTime(iteration)
        .param("target", "ringbatch", "abq")
        .jvmArgsAppend("-D" + BatchLog.PROPERTY + "=" + batchLog)
        .shouldFailOnError(true)
        .verbosity(VerboseMode.SILENT);
    for (int i = 0; i + 1 < cell.params().length; i += 2) {
      options.param(cell.params()[i], cell.params()[i + 1]);
    }
    return new Runner(options.build()).run();
  }

  private static String write(List<Cell> cells, List<Variant> variants, RunResult[][][] results, int forks,
      double minutes, String args) {
    StringBuilder s = new StringBuilder("# Where services live: JDK 17 and 25, young and promoted rings\n\n")
        .append("Generated ").append(LocalDate.now(ZoneOffset.UTC)).append(" at ").append(Machine.commit())
        .append(" on ").append(Machine.describe()).append(" (that JVM runs the report; the forks run on the ")
        .append("JVMs the columns name), ").append(forks).append(" forks per figure, 2 × 1 s ")
        .append("warm-up and 3 × 1 s measured per fork, ").append(fmt(minutes, 0)).append(" minutes. Command: ")
        .append("`mvn -q -B package -Preport -DskipTests -pl jmh -am ")
        .append("-Dreport.main=dev.ringbatch.jmh.report.VariantsReport -Dreport.args=\"").append(args)
        .append("\"`.\n\nEach figure is ringbatch / the `ArrayBlockingQueue` batcher (higher is better; bursts: the ")
        .append("queue's time / ringbatch's), medians over forks, and in brackets ringbatch's lowest and highest ")
        .append("fork against the queue's median. `-gc true` runs a full GC before every iteration, which ")
        .append("promotes the ring (or ")
        .append("queue) to the old generation as in any long-running service. P3 adds the CPU per call, ")
        .append("ringbatch / abq (lower is better; the target is ≤ 1). ✗ marks a figure that misses its target; ")
        .append("— a cell the JVM cannot run ")
        .append("(virtual threads need JDK 21).\n\n| cell | target |");
    StringBuilder rule = new StringBuilder("|---|---|");
    for (Variant variant : variants) {
      s.append(' ').append(variant.label()).append(" |");
      rule.append("---|");
    }
    s.append('\n').append(rule).append('\n');
    int missed = 0;
    int cpuMissed = 0;
    int measured = 0;
    for (int c = 0; c < cells.size(); c++) {
      Cell cell = cells.get(c);
      s.append("| ").append(cell.name()).append(" | ≥ ").append(fmt(cell.target(), 1)).append("× |");
      for (int v = 0; v < variants.size(); v++) {
        RunResult ring = results[c][v][0];
        RunResult abq = results[c][v][1];
        if (ring == null || abq == null) {
          s.append(" — |");
          continue;
        }
        double[] ratios = ratios(ring, abq, cell.lowerIsBetter());
        double median = ratios[0];
        measured++;
        boolean miss = median < cell.target();
        missed += miss ? 1 : 0;
        s.append(' ').append(fmt(median, 2)).append("× [").append(fmt(ratios[1], 2)).append('–')
            .append(fmt(ratios[2], 2)).append(']');
        if (cell.include().startsWith("ClosedLoop")) {
          double cpu = cpuPerCall(ring) / cpuPerCall(abq);
          s.append(", CPU ").append(fmt(cpu, 2)).append('×').append(cpu > 1 ? " ✗" : "");
          cpuMissed += cpu > 1 ? 1 : 0;
        }
        s.append(miss ? " ✗ |" : " |");
      }
      s.append('\n');
    }
    s.append("\n").append(measured - missed).append(" of ").append(measured)
        .append(" throughput figures meet their target; ").append(cpuMissed)
        .append(" closed-loop figures use more CPU per call than the queue.\n");
    return s.toString();
  }

  /**
   * The ratio of the two medians over forks, then the ratios of ringbatch's lowest and highest fork to the queue's
   * median: what a reader of one fork could have seen.
   */
  static double[] ratios(RunResult ring, RunResult abq, boolean lowerIsBetter) {
    double[] ringForks = forkScores(ring);
    double abqMedian = median(forkScores(abq));
    double[] ratios = {median(ringForks), ringForks[0], ringForks[ringForks.length - 1]};
    for (int i = 0; i < ratios.length; i++) {
      ratios[i] = lowerIsBetter ? abqMedian / ratios[i] : ratios[i] / abqMedian;
    }
    Arrays.sort(ratios, 1, 3);
    return ratios;
  }

  static double median(double[] sorted) {
    int n = sorted.length;
    return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  }

  /** Each fork's score, sorted. */
  static double[] forkScores(RunResult run) {
    return forkScores(run, Integer.MAX_VALUE);
  }

  /** The scores of the first {@code limit} forks in the order they ran (merged runs keep it), sorted. */
  static double[] forkScores(RunResult run, int limit) {
    return run.getBenchmarkResults().stream()
        .limit(limit)
        .mapToDouble(result -> result.getPrimaryResult().getScore())
        .sorted()
        .toArray();
  }

  private static double cpuPerCall(RunResult run) {
    return ReportData.secondary(run, "cpuNanos") / ReportData.secondary(run, "calls");
  }

  static String option(List<String> args, String prefix, String fallback) {
    return args.stream().filter(a -> a.startsWith(prefix)).map(a -> a.substring(prefix.length())).findFirst()
        .orElse(fallback);
  }

  /** The feature release of the JVM at {@code java}, from its {@code -version} banner. */
  static int feature(String java) throws IOException, InterruptedException {
    Process process = new ProcessBuilder(java, "-version").redirectErrorStream(true).start();
    String banner = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    process.waitFor();
    Matcher matcher = Pattern.compile("version \"(1\\.)?(\\d+)").matcher(banner);
    if (!matcher.find()) {
      throw new IllegalArgumentException("--jvms: cannot read the version of " + java + " from: " + banner);
    }
    return Integer.parseInt(matcher.group(2));
  }
}
