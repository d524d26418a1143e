package dev.ringbatch.jmh.report;

import static dev.ringbatch.jmh.report.BenchmarkReport.fmt;

import java.util.ArrayList;
import java.util.List;

/** The report's table of performance targets: one row per target, filled in by the sections that measure it. */
final class Goals {
  private final List<String[]> rows = new ArrayList<>();

  void add(String id, String what, double measured, String unit, String target, boolean met) {
    add(id, what, measured, unit, target, met, true);
  }

  /** {@code clear}: the figures behind it are told apart from the target; else "unclear", never "yes". */
  void add(String id, String what, double measured, String unit, String target, boolean met, boolean clear) {
    rows.add(new String[] {id, what, Double.isNaN(measured) ? "n/a" : fmt(measured, 2) + unit, target,
        Double.isNaN(measured) ? "n/a" : !clear ? "unclear (the errors leave it open)" : met ? "yes" : "**no**"});
  }

  /** A target whose measured value is text (e.g. a range), met or not. */
  void addText(String id, String what, String measured, String target, boolean met) {
    rows.add(new String[] {id, what, measured, target, met ? "yes" : "**no**"});
  }

  String table() {
    StringBuilder s = new StringBuilder("| target | what | measured | target | met |\n|---|---|---|---|---|\n");
    for (String[] row : rows) {
      s.append("| ").append(String.join(" | ", row)).append(" |\n");
    }
    return s.toString();
  }
}
