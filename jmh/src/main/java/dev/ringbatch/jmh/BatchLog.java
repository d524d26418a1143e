package dev.ringbatch.jmh;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Locale;

/**
 * Where a forked benchmark records the mean batch size it saw: a file named by the system property
 * {@code ringbatch.jmh.batchLog}, one line {@code target threads meanBatch} per trial. Without the property
 * (a plain JMH run) it does nothing.
 */
public final class BatchLog {
  public static final String PROPERTY = "ringbatch.jmh.batchLog";

  private BatchLog() {}

  static void append(String target, int threads, double meanBatch) throws IOException {
    String file = System.getProperty(PROPERTY);
    if (file != null) {
      Files.writeString(Path.of(file), String.format(Locale.ROOT, "%s %d %.2f%n", target, threads, meanBatch),
          StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }
  }
}
