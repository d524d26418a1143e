package dev.ringbatch.jmh.report;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * A report's command line, parsed once: Maven hands {@code -Dreport.args} over as one argument, so it is split
 * here. {@code --smoke} (one short fork per cell, into {@code jmh/target/report-smoke}), {@code --publish=true}
 * (set by {@code -Dreport.publish}: into the docs), {@code --forks=N} (default 3), {@code --jvms=a,b} (default
 * {@code java}), and a report's own {@link #option}s. Parsing also fixes the commit measured ({@link Machine#commit})
 * before the run writes anything, and makes charts headless.
 */
record ReportArgs(List<String> list, boolean smoke, boolean publish, int forks, String[] jvms) {

  static ReportArgs parse(String[] args) {
    System.setProperty("java.awt.headless", "true");
    Machine.commit(); // the tree as measured, before the run writes anything
    List<String> list = List.of(String.join(" ", args).trim().split("\\s+"));
    return new ReportArgs(list, list.contains("--smoke"), list.contains("--publish=true"),
        Integer.parseInt(VariantsReport.option(list, "--forks=", "3")),
        VariantsReport.option(list, "--jvms=", "java").split(","));
  }

  /** The value of {@code --name=value}, or {@code fallback}. */
  String option(String prefix, String fallback) {
    return VariantsReport.option(list, prefix, fallback);
  }

  /** The folder to write into, made if missing: {@code published} with {@code --publish=true}. */
  Path out(String published) throws IOException {
    Path out = Path.of(smoke ? "jmh/target/report-smoke" : publish ? published : "jmh/target/report");
    Files.createDirectories(out);
    return out;
  }

  /** The arguments as a reader would retype them: without the publish flag. */
  String command() {
    return String.join(" ", list).replace(" --publish=true", "").replace(" --publish=false", "");
  }
}
