package dev.ringbatch.jmh.report;

import dev.ringbatch.jmh.report.AdaptiveReport.SeriesLine;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.ToDoubleFunction;
import java.util.stream.Collectors;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * The charts of the load-step runs: for each sink cost F, the calls per second, the batch size, the linger in force
 * and the window p99 over time, one line per configuration (its first fork), as the load steps through 10, 2,000 and
 * 100 callers. PNGs beside the report; returns the Markdown that shows them.
 */
final class AdaptiveCharts {
  private AdaptiveCharts() {}

  static String write(Path dir, List<SeriesLine> series) throws IOException {
    Map<String, List<SeriesLine>> byF = series.stream().filter(l -> l.key().endsWith("/steps")).collect(Collectors.groupingBy(
        l -> l.key().split("/")[1], TreeMap::new, Collectors.toList()));
    StringBuilder md = new StringBuilder();
    for (Map.Entry<String, List<SeriesLine>> f : byF.entrySet()) {
      Map<String, List<SeriesLine>> byMode = firstForks(f.getValue());
      String tag = f.getKey().replace("=", "").replace("us", "us");
      md.append("\n").append(f.getKey().replace("us", " µs")).append(", loads ").append(AdaptiveReport.STEPS)
          .append(" (virtual callers, first fork of each configuration):\n\n");
      md.append(chart(dir, "issue24-" + tag + "-calls.png", "calls per second", "calls/s", byMode,
          SeriesLine::callsPerSecond, false));
      md.append(chart(dir, "issue24-" + tag + "-batch.png", "mean batch per 20 ms", "items", byMode,
          SeriesLine::meanBatch, true));
      md.append(chart(dir, "issue24-" + tag + "-linger.png", "linger in force", "µs", byMode,
          SeriesLine::lingerMicros, false));
      md.append(chart(dir, "issue24-" + tag + "-p99.png", "p99 round trip per 20 ms", "ms", byMode,
          l -> l.p99Micros() / 1000, true));
    }
    return md.toString();
  }

  /** For each configuration, the samples of its first fork (the lowest pid), in time order. */
  private static Map<String, List<SeriesLine>> firstForks(List<SeriesLine> lines) {
    Map<String, List<SeriesLine>> byKey = lines.stream().collect(Collectors.groupingBy(SeriesLine::key,
        TreeMap::new, Collectors.toList()));
    Map<String, List<SeriesLine>> first = new TreeMap<>();
    for (Map.Entry<String, List<SeriesLine>> e : byKey.entrySet()) {
      long pid = e.getValue().stream().mapToLong(SeriesLine::pid).min().orElse(0);
      first.put(label(e.getKey()), e.getValue().stream().filter(l -> l.pid() == pid)
          .sorted(Comparator.comparingLong(SeriesLine::millis)).toList());
    }
    return first;
  }

  /** "adaptive/F=2000us/c=500ns/virtual/throughput/max=4096" -> "throughput/max=4096". */
  static String label(String key) {
    String[] parts = key.replace("/steps", "").split("/", 5);
    return parts.length == 5 ? parts[4] : key;
  }

  private static String chart(Path dir, String file, String title, String unit, Map<String, List<SeriesLine>> modes,
      ToDoubleFunction<SeriesLine> value, boolean log) throws IOException {
    XYChart chart = new XYChartBuilder().width(900).height(320).title(title).xAxisTitle("s").yAxisTitle(unit)
        .build();
    chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE).setMarkerSize(0);
    chart.getStyler().setYAxisLogarithmic(log);
    for (Map.Entry<String, List<SeriesLine>> mode : modes.entrySet()) {
      List<Double> x = new ArrayList<>();
      List<Double> y = new ArrayList<>();
      for (SeriesLine l : mode.getValue()) {
        double v = value.applyAsDouble(l);
        if (!log || v > 0) {
          x.add(l.millis() / 1000.0);
          y.add(v);
        }
      }
      if (!x.isEmpty()) {
        XYSeries s = chart.addSeries(mode.getKey(), x, y);
        s.setMarker(SeriesMarkers.NONE);
      }
    }
    BitmapEncoder.saveBitmap(chart, dir.resolve(file).toString(), BitmapEncoder.BitmapFormat.PNG);
    return "![" + title + "](" + file + ")\n";
  }
}
