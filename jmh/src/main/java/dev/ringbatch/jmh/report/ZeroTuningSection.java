package dev.ringbatch.jmh.report;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Section P11 of {@code benchmarks.md}: the zero-tuning grid that {@link DefaultsReport} publishes as
 * {@code docs/results/issue37-defaults.md}. The grid takes about two hours, so it has its own command; this
 * copies its latest published run into {@code benchmarks.md}, as the last section, whenever either report writes.
 * A rerun of either one therefore regenerates P11 without dropping it.
 *
 * <p>Run alone ({@code mvn -q -B package -Preport -DskipTests -pl jmh -am
 * -Dreport.main=dev.ringbatch.jmh.report.ZeroTuningSection}) it copies the published grid into
 * {@code docs/benchmarks.md} without running anything.
 */
public final class ZeroTuningSection {
  static final String HEADING = "## P11: nothing set against the best static limits";
  /** Where {@link DefaultsReport} publishes the grid. */
  static final Path PUBLISHED = Path.of("docs/results/issue37-defaults.md");

  private ZeroTuningSection() {}

  public static void main(String[] args) throws IOException {
    splice(Path.of("docs/benchmarks.md"), PUBLISHED);
    System.out.println("wrote section P11 of docs/benchmarks.md from " + PUBLISHED);
  }

  /**
   * Replaces the P11 section of {@code benchmarks} (or appends one) with the grid in {@code grid}; does nothing
   * when the grid was never published.
   */
  static void splice(Path benchmarks, Path grid) throws IOException {
    if (!Files.exists(grid) || !Files.exists(benchmarks)) {
      return;
    }
    String report = Files.readString(benchmarks, StandardCharsets.UTF_8);
    int start = report.indexOf("\n" + HEADING + "\n");
    String kept = start < 0 ? report.stripTrailing() : report.substring(0, start).stripTrailing();
    Path from = benchmarks.toAbsolutePath().getParent();
    String images = from.relativize(grid.toAbsolutePath().getParent()).toString().replace('\\', '/');
    String section = section(Files.readString(grid, StandardCharsets.UTF_8), images.isEmpty() ? "" : images + "/");
    Files.writeString(benchmarks, kept + "\n\n" + section, StandardCharsets.UTF_8);
  }

  /**
   * The grid's markdown as a section: its title becomes {@link #HEADING}, its headings go one level down, and its
   * charts are linked through {@code imagePrefix}.
   */
  static String section(String grid, String imagePrefix) {
    String body = grid.substring(grid.indexOf('\n') + 1); // the grid's own title
    return HEADING + "\n\nIssue 37's zero-tuning grid has its own run, about two hours on 2 cores, so this section is"
        + " copied from its latest published run (`docs/results/issue37-defaults.md`, command below) each time"
        + " either report is written.\n"
        + body.replace("\n## ", "\n### ").replace("](issue37-", "](" + imagePrefix + "issue37-").stripTrailing()
        + "\n";
  }
}
