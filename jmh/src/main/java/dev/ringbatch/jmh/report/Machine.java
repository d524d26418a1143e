package dev.ringbatch.jmh.report;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/** What the report ran on, from the JVM and, on Linux, /proc. */
final class Machine {
  private Machine() {}

  static String describe() {
    String cpu = firstValue(Path.of("/proc/cpuinfo"), "model name");
    String memory = firstValue(Path.of("/proc/meminfo"), "MemTotal");
    return String.format(Locale.ROOT, "%d cores (%s), %s memory, %s %s, %s %s",
        Runtime.getRuntime().availableProcessors(), cpu == null ? "cpu unknown" : cpu,
        memory == null ? "unknown" : memory, System.getProperty("os.name"), System.getProperty("os.version"),
        System.getProperty("java.vm.name"), System.getProperty("java.runtime.version"));
  }

  /** The java this report runs on (and so its JMH forks): what {@code -Dreport.java} names to run it again. */
  static String java() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }

  /** The commit measured, read once: a report calls {@link #commit()} before it runs, and writes files after. */
  private static volatile String measured;

  /**
   * The commit measured, from git in the working directory, "(uncommitted changes)" when the tree is dirty; read
   * at the first call (the start of a run), so that the report's own output files do not make the tree dirty.
   */
  static String commit() {
    String known = measured;
    if (known == null) {
      known = readCommit();
      measured = known;
    }
    return known;
  }

  private static String readCommit() {
    String head = git("rev-parse", "--short=12", "HEAD");
    if (head == null) {
      return "commit unknown (no git)";
    }
    String status = git("status", "--porcelain", "--untracked-files=no");
    return "commit " + head + (status == null || status.isEmpty() ? "" : " (uncommitted changes)");
  }

  /** The collectors of this JVM: the forks run with the same defaults unless the JVM flags name another. */
  static String gc() {
    List<String> names = new java.util.ArrayList<>();
    for (java.lang.management.GarbageCollectorMXBean gc : java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()) {
      names.add(gc.getName());
    }
    return String.join(", ", names);
  }

  private static String git(String... args) {
    List<String> command = new java.util.ArrayList<>(List.of("git"));
    command.addAll(List.of(args));
    try {
      Process git = new ProcessBuilder(command).redirectErrorStream(true).start();
      String out = new String(git.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).trim();
      return git.waitFor() == 0 ? out : null;
    } catch (IOException e) {
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
  }

  private static String firstValue(Path file, String key) {
    try {
      List<String> lines = Files.readAllLines(file);
      for (String line : lines) {
        if (line.startsWith(key)) {
          return line.substring(line.indexOf(':') + 1).trim();
        }
      }
    } catch (IOException | RuntimeException e) {
      return null;
    }
    return null;
  }
}
