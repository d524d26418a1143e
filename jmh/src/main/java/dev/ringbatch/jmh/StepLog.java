package dev.ringbatch.jmh;

import dev.ringbatch.BatchLimits;
import dev.ringbatch.Batcher;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Locale;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.Histogram;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.runner.IterationType;

/**
 * What {@link AdaptiveLimitsBenchmark} records beside JMH's score: with {@code -Dringbatch.jmh.steps=FILE}, one
 * line per iteration ({@code key pid iteration kind load calls/s p50 p99 meanBatch batchCv lingerMicros
 * sizeLimit}); with {@code -Dringbatch.jmh.series=FILE}, one line every 20 ms from a sampler thread ({@code key pid
 * millis load calls/s p99 meanBatch lingerMicros sizeLimit}). Without the properties it records nothing.
 */
final class StepLog implements AutoCloseable {
  static final String STEPS = "ringbatch.jmh.steps";
  static final String SERIES = "ringbatch.jmh.series";
  private static final long SAMPLE_NANOS = 20_000_000;

  private final String key;
  private final Batcher<?, ?> batcher;
  private final CallerLoop loop;
  private final long pid = ProcessHandle.current().pid();
  /** The series sampler, or null without {@link #SERIES}. */
  private final Thread sampler;
  private final long started = System.nanoTime();
  private volatile int load;
  private volatile boolean closed;
  private int index;
  private long beginNanos;
  private long beginBatches;
  private long beginItems;
  private long beginSquares;

  StepLog(String key, Batcher<?, ?> batcher, CallerLoop loop) {
    this.key = key;
    this.batcher = batcher;
    this.loop = loop;
    String series = System.getProperty(SERIES);
    if (series == null) {
      sampler = null;
    } else {
      sampler = new Thread(() -> sample(Path.of(series)), "adaptive-bench-sampler");
      sampler.setDaemon(true);
      sampler.start();
    }
  }

  void begin(int load, long batches, long items, long squares) {
    this.load = load;
    beginNanos = System.nanoTime();
    beginBatches = batches;
    beginItems = items;
    beginSquares = squares;
  }

  void end(IterationParams params, Histogram roundTrips, long batches, long items, long squares) throws IOException {
    String file = System.getProperty(STEPS);
    index++;
    if (file == null) {
      return;
    }
    double seconds = (System.nanoTime() - beginNanos) / 1e9;
    long n = batches - beginBatches;
    double mean = n == 0 ? 0 : (double) (items - beginItems) / n;
    double variance = n == 0 ? 0 : Math.max(0, (double) (squares - beginSquares) / n - mean * mean);
    BatchLimits limits = batcher.limits();
    String line = String.format(Locale.ROOT, "%s %d %d %s %d %.0f %.1f %.1f %.2f %.3f %.1f %d%n", key, pid, index,
        params.getType() == IterationType.MEASUREMENT ? "measure" : "warmup", load, (items - beginItems) / seconds,
        roundTrips.getValueAtPercentile(50) / 1e3, roundTrips.getValueAtPercentile(99) / 1e3, mean,
        mean == 0 ? 0 : Math.sqrt(variance) / mean, limits.linger().toNanos() / 1e3, limits.maxBatchSize());
    Files.writeString(Path.of(file), line, StandardCharsets.UTF_8, StandardOpenOption.CREATE,
        StandardOpenOption.APPEND);
  }

  private void sample(Path file) {
    long lastCalls = 0;
    long lastBatches = 0;
    long last = System.nanoTime();
    StringBuilder lines = new StringBuilder();
    while (!closed) {
      LockSupport.parkNanos(SAMPLE_NANOS);
      long now = System.nanoTime();
      var stats = batcher.stats();
      Histogram window = loop.window();
      long calls = stats.written() - lastCalls;
      long batches = stats.batches() - lastBatches;
      BatchLimits limits = batcher.limits();
      lines.append(String.format(Locale.ROOT, "%s %d %d %d %.0f %.1f %.2f %.1f %d%n", key, pid,
          (now - started) / 1_000_000, load, calls / ((now - last) / 1e9), window.getValueAtPercentile(99) / 1e3,
          batches == 0 ? 0 : (double) calls / batches, limits.linger().toNanos() / 1e3, limits.maxBatchSize()));
      lastCalls = stats.written();
      lastBatches = stats.batches();
      last = now;
      if (lines.length() > 16_384) {
        flush(file, lines);
      }
    }
    flush(file, lines);
  }

  private static void flush(Path file, StringBuilder lines) {
    try {
      Files.writeString(file, lines, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    lines.setLength(0);
  }

  @Override
  public void close() {
    closed = true;
    Thread t = sampler;
    if (t != null) {
      try {
        t.join(1_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
