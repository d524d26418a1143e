package dev.ringbatch.jmh.report;

import static dev.ringbatch.jmh.report.BenchmarkReport.fmt;

import dev.ringbatch.BatcherConfig;
import dev.ringbatch.jmh.report.AdaptiveReport.Cell;
import dev.ringbatch.jmh.report.AdaptiveReport.Config;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;
import me.tongfei.progressbar.ProgressBar;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;

/**
 * Issue 37's grid: a batcher with nothing set ({@code AdaptiveLimitsBenchmark -p limits=defaults}: the default ring,
 * cap and mode) against the best static (maxBatchSize, linger) found in the same run and against the defaults of
 * before (256 items, no linger), for platform callers K = 1, 10, 100, 256 (JDK 17 and 21+) and virtual callers
 * K = 10, 100, 2,000, 10,000 (JDK 21+), sinks of fixed cost F = 0, 20 µs, 500 µs and 2 ms plus 500 ns per item.
 * Writes {@code issue37-defaults.md} and one chart per JVM and thread kind into {@code docs/results} with
 * {@code -Dreport.publish} (which also rewrites section P11 of {@code docs/benchmarks.md} from it), else into
 * {@code jmh/target/report}.
 *
 * <p>Run: {@code mvn -q -B package -Preport -DskipTests -pl jmh -am
 * -Dreport.main=dev.ringbatch.jmh.report.DefaultsReport
 * -Dreport.args="--jvms=/usr/lib/jvm/temurin-25-jdk-amd64/bin/java,/usr/lib/jvm/java-17-openjdk-amd64/bin/java"}
 * ({@code --forks=N}, default 3; {@code --rereads=N}, default 4: the rounds that read a missed cell again;
 * {@code --smoke}: one short fork per cell, no re-reads; {@code --fixed=..} and {@code --platform=..}/{@code
 * --virtual=..} narrow the grid, comma-separated). About two hours on 2 cores.
 */
public final class DefaultsReport {
  static final String OLD_DEFAULT = "before (256, 0)";
  static final String DEFAULTS = "nothing set";

  private DefaultsReport() {}

  public static void main(String[] args) throws Exception {
    ReportArgs parsed = ReportArgs.parse(args);
    boolean smoke = parsed.smoke();
    boolean publish = parsed.publish();
    int forks = parsed.forks();
    String[] jvms = parsed.jvms();
    String[] fixed = parsed.option("--fixed=", "0,20,500,2000").split(",");
    String[] platform = parsed.option("--platform=", "1,10,100,256").split(",");
    String[] virtual = parsed.option("--virtual=", "10,100,2000,10000").split(",");
    int rereads = Integer.parseInt(parsed.option("--rereads=", smoke ? "0" : "4"));
    Path out = parsed.out("docs/results");
    Path batchLog = Files.createTempFile("ringbatch-defaults-batches", ".txt");
    Path stepLog = Files.createTempFile("ringbatch-defaults-steps", ".txt");
    List<Config> configs = configs();
    List<Cell> cells = new ArrayList<>();
    long started = System.nanoTime();
    int steps = 0;
    int rounds = smoke ? 1 : forks;
    for (String java : jvms) {
      steps += rounds * (VariantsReport.feature(java) >= 21 ? 2 : 1) * configs.size();
    }
    try (ProgressBar bar = BenchmarkReport.progressBar(steps)) {
      // One fork of every configuration per round, the rounds one after another: a slow spell of the host falls on
      // every configuration alike, where a configuration's forks run back to back would all take it alone (nothing
      // set, run last: 0.76-0.82x the static limits there, 0.98-1.06x alternating; results/issue37-grid-rounds.txt).
      for (int round = 0; round < rounds; round++) {
        for (String java : jvms) {
          int feature = VariantsReport.feature(java);
          for (String threads : feature >= 21 ? new String[] {"platform", "virtual"} : new String[] {"platform"}) {
            AdaptiveReport.runGrid(() -> AdaptiveReport.options(java, 1, smoke, batchLog, stepLog, null),
                new Cell(java, feature, threads, "", "", Map.of()), fixed,
                threads.equals("virtual") ? virtual : platform, configs, cells, bar);
          }
        }
      }
      reread(cells, configs, rounds, rereads, bar,
          java -> AdaptiveReport.options(java, 1, smoke, batchLog, stepLog, null));
    }
    double minutes = (System.nanoTime() - started) / 60e9;
    String command = parsed.command();
    String markdown = markdown(cells, configs, rounds, rereads, minutes, command,
        charts(out, cells, configs, rounds), LocalDate.now(ZoneOffset.UTC), Machine.commit(), Machine.describe());
    Files.writeString(out.resolve("issue37-defaults.md"), markdown, StandardCharsets.UTF_8);
    if (publish) {
      ZeroTuningSection.splice(Path.of("docs/benchmarks.md"), out.resolve("issue37-defaults.md"));
    }
    System.out.println("wrote " + out.resolve("issue37-defaults.md")
        + (publish ? " and section P11 of docs/benchmarks.md" : ""));
  }

  /** The grid's configurations: the old defaults, four static lingers under a cap of 4,096, and nothing set. */
  static List<Config> configs() {
    List<Config> configs = new ArrayList<>();
    configs.add(new Config(OLD_DEFAULT, false, "limits", "static", "maxBatch", "256", "lingerMicros", "0"));
    for (String linger : AdaptiveReport.STATIC_LINGERS) {
      configs.add(new Config("static (4096, " + linger + " µs)", false, "limits", "static", "maxBatch", "4096",
          "lingerMicros", linger));
    }
    configs.add(new Config(DEFAULTS, true, "limits", "defaults"));
    return configs;
  }

  /**
   * Reads every cell that misses by the medians again: {@code rereads} more rounds, each one fork of nothing set, of
   * the best static the grid's {@code rounds} chose and of the defaults before, alternating. Two configurations that
   * run the same code read up to 6 % apart in three forks, and the best static is the best of five medians
   * (results/issue37-grid-first-rounds.txt): the misses of a few percent are read with more forks, the best static
   * kept as chosen so that its new forks are not chosen again.
   */
  static void reread(List<Cell> cells, List<Config> configs, int rounds, int rereads, ProgressBar bar,
      Function<String, ChainedOptionsBuilder> options) throws RunnerException {
    List<Cell> missed = new ArrayList<>();
    for (Cell cell : cells) {
      if (!met(cell, configs, rounds)) {
        missed.add(cell);
      }
    }
    List<List<Config>> reads = new ArrayList<>();
    for (Cell cell : missed) {
      List<Config> read = new ArrayList<>();
      String best = bestStatic(cell, configs, rounds);
      for (Config config : configs) {
        if (config.adaptive() || config.label().equals(best) || config.label().equals(OLD_DEFAULT)) {
          read.add(config);
        }
      }
      reads.add(read);
      bar.maxHint(bar.getMax() + (long) rereads * read.size());
    }
    for (int round = 0; round < rereads; round++) {
      for (int i = 0; i < missed.size(); i++) {
        Cell cell = missed.get(i);
        AdaptiveReport.runGrid(() -> options.apply(cell.java()), cell, new String[] {cell.fixedMicros()},
            new String[] {cell.callers()}, reads.get(i), cells, bar);
      }
    }
  }

  /** Whether nothing set meets both targets in {@code cell}, the best static chosen by the first {@code rounds}. */
  static boolean met(Cell cell, List<Config> configs, int rounds) {
    double now = calls(cell, DEFAULTS);
    return now >= 0.95 * calls(cell, bestStatic(cell, configs, rounds)) && now >= calls(cell, OLD_DEFAULT);
  }

  /** Calls per second of {@code label} in {@code cell}: the median over forks; NaN if it did not run. */
  static double calls(Cell cell, String label) {
    return calls(cell, label, Integer.MAX_VALUE);
  }

  /** The median calls per second of the first {@code limit} forks of {@code label} in {@code cell}, or NaN. */
  private static double calls(Cell cell, String label, int limit) {
    double[] forks = forks(cell, label, limit);
    return forks.length == 0 ? Double.NaN : VariantsReport.median(forks);
  }

  /** Calls per second of {@code label} in {@code cell}, one per fork, sorted; none if it did not run. */
  static double[] forks(Cell cell, String label) {
    return forks(cell, label, Integer.MAX_VALUE);
  }

  /** The first {@code limit} forks in the order they ran (the grid's rounds, then re-reads), as calls/s, sorted. */
  private static double[] forks(Cell cell, String label, int limit) {
    RunResult run = cell.runs().get(label);
    double[] forks = run == null ? new double[0] : VariantsReport.forkScores(run, limit);
    for (int i = 0; i < forks.length; i++) {
      forks[i] *= Integer.parseInt(cell.callers()) * 50; // a positive factor: still sorted
    }
    return forks;
  }

  /**
   * The label of the best static configuration of {@code cell} (the old defaults included), chosen by the medians
   * of its first {@code rounds} forks: the grid's, not a re-read's.
   */
  static String bestStatic(Cell cell, List<Config> configs, int rounds) {
    String best = OLD_DEFAULT;
    for (Config config : configs) {
      if (!config.adaptive() && calls(cell, config.label(), rounds) > calls(cell, best, rounds)) {
        best = config.label();
      }
    }
    return best;
  }

  static String markdown(List<Cell> cells, List<Config> configs, int forks, int rereads, double minutes,
      String args, String charts, LocalDate date, String commit, String machine) {
    StringBuilder s = new StringBuilder("# Issue 37: nothing set against the best static limits\n\n")
        .append("Generated ").append(date).append(" at ").append(commit).append(" on ").append(machine)
        .append(" (that JVM runs the report; the forks run on the JVMs the sections name), ").append(forks)
        .append(" forks per figure, run in rounds of one fork of every configuration (so that a slow spell of ")
        .append("the host falls on all of them alike), 2 × 1 s warm-up and 3 × 1 s measured per fork")
        .append(rereads == 0 ? ", no re-reads, " : "; then " + rereads + (rereads == 1 ? " round" : " rounds")
            + " that read each cell missed by the medians again (below), ")
        .append(fmt(minutes, 0)).append(" minutes. Command: `mvn -q -B package -Preport -DskipTests -pl jmh -am ")
        .append("-Dreport.main=dev.ringbatch.jmh.report.DefaultsReport -Dreport.args=\"").append(args)
        .append("\"`.\n\n`AdaptiveLimitsBenchmark`: K callers in a closed loop (`submit(x).join()`) into a sink that ")
        .append("waits F + 500 ns per item; calls/s are medians over forks. *Nothing set* is `BatcherConfig.builder()`")
        .append(" as is (ring ").append(String.format(Locale.ROOT, "%,d", BatcherConfig.ofDefaults().ringSize()))
        .append(", the limits tuning themselves); the static configurations run on a ring of 16,384")
        .append(". *Best static* is the best of the defaults before (256 items, no linger) and 4,096 items with a ")
        .append("linger of 0, 20, 100 or 500 µs. Targets (issue 37): nothing set ≥ 0.95× the best static and ≥ 1.0× ")
        .append("the defaults before, in every cell. ✗ marks a miss by the medians; ✗✗ a miss beyond the forks' ")
        .append("spread too (nothing set's best fork under 0.95× the best static's worst fork, or under the worst ")
        .append("fork of the defaults before). The range is nothing set's forks, over the best static's median.")
        .append(" A cell nothing set misses by the medians is read again: each round one fork of nothing set, ")
        .append("of its best static and of the defaults before, alternating; their figures are then the medians ")
        .append("of all their forks (their count in brackets), the best static kept as the grid's forks chose it. ")
        .append("Two configurations that run the same code read up to 6 % apart in three forks on this host, and ")
        .append("the best static is the best of five medians (results/issue37-grid-first-rounds.txt): a miss of a ")
        .append("few percent needs more forks than the grid's to tell.\n\n");
    int met = 0;
    int clear = 0;
    int all = 0;
    int reread = 0;
    String group = null;
    for (Cell cell : cells) {
      String name = "JDK " + cell.feature() + ", " + cell.threads() + " callers";
      if (!name.equals(group)) {
        group = name;
        s.append("\n## ").append(name).append("\n\n| F | K | before (256, 0) | best static | nothing set |\n")
            .append("|---|---|---|---|---|\n");
      }
      double old = calls(cell, OLD_DEFAULT);
      String best = bestStatic(cell, configs, forks);
      double bestCalls = calls(cell, best);
      double now = calls(cell, DEFAULTS);
      boolean ok = met(cell, configs, forks);
      double[] nowForks = forks(cell, DEFAULTS);
      double nowMax = nowForks[nowForks.length - 1];
      boolean clearMiss = nowMax < 0.95 * forks(cell, best)[0] || nowMax < forks(cell, OLD_DEFAULT)[0];
      boolean read = nowForks.length > forks;
      all++;
      reread += read ? 1 : 0;
      met += ok ? 1 : 0;
      clear += clearMiss ? 1 : 0;
      s.append("| ").append(AdaptiveReport.micros(Double.parseDouble(cell.fixedMicros()))).append(" | ")
          .append(cell.callers()).append(" | ").append(fmt(old, 0)).append(" | ").append(best).append(": ")
          .append(fmt(bestCalls, 0)).append(read ? " [" + forks(cell, best).length + "]" : "").append(" | ")
          .append(fmt(now, 0)).append(read ? " [" + nowForks.length + "]" : "").append(" = ")
          .append(fmt(now / bestCalls, 2))
          .append("× best (").append(fmt(nowForks[0] / bestCalls, 2)).append("–").append(fmt(nowMax / bestCalls, 2))
          .append("), ").append(fmt(now / old, 2)).append("× before").append(clearMiss ? " ✗✗" : ok ? "" : " ✗")
          .append(" |\n");
    }
    s.append("\nNothing set meets both targets in ").append(met).append(" of ").append(all)
        .append(" cells by the medians (").append(reread).append(" of them read again); it misses beyond the ")
        .append("forks' spread in ").append(clear).append(".\n\n")
        .append("## Charts\n\n").append(charts);
    return s.toString();
  }

  /** One bar chart per JVM and thread kind: nothing set and the defaults before, each over the best static. */
  static String charts(Path dir, List<Cell> cells, List<Config> configs, int rounds) throws IOException {
    Map<String, List<Cell>> groups = new LinkedHashMap<>();
    for (Cell cell : cells) {
      groups.computeIfAbsent("jdk" + cell.feature() + "-" + cell.threads(), g -> new ArrayList<>()).add(cell);
    }
    StringBuilder md = new StringBuilder();
    for (Map.Entry<String, List<Cell>> group : groups.entrySet()) {
      CategoryChart chart = new CategoryChartBuilder().width(900).height(320)
          .title(group.getKey() + ": calls/s over the best static").xAxisTitle("F / K").yAxisTitle("× best").build();
      chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
      chart.getStyler().setXAxisLabelRotation(45);
      List<String> x = new ArrayList<>();
      List<Double> now = new ArrayList<>();
      List<Double> old = new ArrayList<>();
      for (Cell cell : group.getValue()) {
        double best = calls(cell, bestStatic(cell, configs, rounds));
        x.add(cell.fixedMicros() + " µs / " + cell.callers());
        now.add(calls(cell, DEFAULTS) / best);
        old.add(calls(cell, OLD_DEFAULT) / best);
      }
      chart.addSeries(DEFAULTS, x, now);
      chart.addSeries(OLD_DEFAULT, x, old);
      String file = "issue37-defaults-" + group.getKey() + ".png";
      BitmapEncoder.saveBitmap(chart, dir.resolve(file).toString(), BitmapEncoder.BitmapFormat.PNG);
      md.append("![").append(group.getKey()).append("](").append(file).append(")\n");
    }
    return md.toString();
  }
}
