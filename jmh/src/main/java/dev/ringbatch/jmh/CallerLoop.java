package dev.ringbatch.jmh;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.runner.IterationType;

/**
 * The closed loop the closed-loop benchmarks share: K callers, each making {@code calls} calls of {@code
 * submit(x).join()} one after another, every call's round trip recorded, the measurement iterations' kept.
 */
final class CallerLoop {
  /** One call: submits an item and returns its future, which the caller joins. */
  interface Call {
    CompletableFuture<?> submit() throws Exception;
  }

  private final Recorder roundTrips = new Recorder(3);
  /** The same round trips, for a sampler's windows ({@link #window}). */
  private final Recorder windows = new Recorder(3);
  private final Histogram measured = new Histogram(3);

  /** Runs {@code callers} callers on {@code pool}, {@code calls} calls each, and waits for all of them. */
  void run(ExecutorService pool, int callers, int calls, Call call) throws Exception {
    List<Future<?>> running = new ArrayList<>(callers);
    for (int c = 0; c < callers; c++) {
      running.add(pool.submit(() -> {
        for (int i = 0; i < calls; i++) {
          long start = System.nanoTime();
          call.submit().join();
          long roundTrip = System.nanoTime() - start;
          roundTrips.recordValue(roundTrip);
          windows.recordValue(roundTrip);
        }
        return null;
      }));
    }
    for (Future<?> f : running) {
      f.get();
    }
  }

  /** Ends an iteration: keeps its round trips if it was a measurement iteration, and returns them. */
  Histogram collect(IterationParams iteration) {
    Histogram interval = roundTrips.getIntervalHistogram();
    if (iteration.getType() == IterationType.MEASUREMENT) {
      measured.add(interval);
    }
    return interval;
  }

  /** The round trips since the last call (a sampler's window). */
  Histogram window() {
    return windows.getIntervalHistogram();
  }

  /** The measured round trips' {@code percentile}, in microseconds. */
  double micros(double percentile) {
    return measured.getValueAtPercentile(percentile) / 1e3;
  }
}
