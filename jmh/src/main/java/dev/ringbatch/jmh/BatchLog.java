package dev.ringbatch.jmh;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Locale;

/**
 * Where a forked benchmark records what JMH's own results cannot carry: a file named by the system property
 * {@code ringbatch.jmh.batchLog}, one line {@code key threads meanBatch [figures...]} per trial (so one per
 * fork), e.g. a closed loop's p50 and p99 in microseconds. Without the property (a plain JMH run) it does
 * nothing.
 */
public final class BatchLog {
  public static final String PROPERTY = "ringbatch.jmh.batchLog";

  private BatchLog() {}

  static void append(String key, int threads, double meanBatch, double... figures) throws IOException {
    String file = System.getProperty(PROPERTY);
    if (file != null) {
      StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "%s %d %.2f", key, threads, meanBatch));
      for (double figure : figures) {
        line.append(String.format(Locale.ROOT, " %.2f", figure));
      }
      Files.writeString(Path.of(file), line.append(System.lineSeparator()), StandardCharsets.UTF_8,
          StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }
  }
}
