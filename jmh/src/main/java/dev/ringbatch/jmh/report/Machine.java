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
