package dev.ringbatch.examples;

import java.io.Console;
import java.io.PrintStream;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import me.tongfei.progressbar.DelegatingProgressBarConsumer;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;
import org.HdrHistogram.Histogram;

/**
 * Runs {@code callers} threads that together make {@code calls} calls, each caller waiting for its call
 * to return before it makes the next (a closed loop, as request threads do), and measures throughput and
 * each call's latency. Shows a progress bar: animated on a terminal, one plain line per update otherwise.
 */
final class CallerHarness {

  /** One call; {@code index} runs from 0 to {@code calls - 1}, each exactly once. */
  @FunctionalInterface
  interface Call {
    void run(int caller, long index) throws Exception;
  }

  /** What a run measured. */
  record Outcome(String label, long calls, long failed, double seconds, Histogram latencyNanos) {
    double perSecond() {
      return (calls - failed) / seconds;
    }

    double p50Micros() {
      return latencyNanos.getValueAtPercentile(50) / 1e3;
    }

    double p99Micros() {
      return latencyNanos.getValueAtPercentile(99) / 1e3;
    }
  }

  private static final int PROGRESS_CHUNK = 256;

  private CallerHarness() {}

  static Outcome run(String label, int callers, long calls, Call call, PrintStream out) throws InterruptedException {
    return run(label, callers, calls, call, out, "platform");
  }

  /**
   * The callers' threads: {@code platform} daemon threads, or {@code virtual} threads (JDK 21+, reached by
   * reflection from this Java 17 build).
   */
  static ThreadFactory threads(String kind) {
    if (kind.equals("platform")) {
      return runnable -> {
        Thread thread = new Thread(runnable);
        thread.setDaemon(true);
        return thread;
      };
    }
    if (!kind.equals("virtual")) {
      throw new IllegalArgumentException("--threads must be platform or virtual but was '" + kind + "'");
    }
    try {
      Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
      return (ThreadFactory) Class.forName("java.lang.Thread$Builder").getMethod("factory").invoke(builder);
    } catch (ReflectiveOperationException e) {
      throw new IllegalArgumentException("--threads virtual needs JDK 21 or later; this is " + Runtime.version(), e);
    }
  }

  static Outcome run(String label, int callers, long calls, Call call, PrintStream out, String threadKind)
      throws InterruptedException {
    ThreadFactory factory = threads(threadKind);
    // Per-caller histograms and progress in chunks: a shared recorder or a per-call progress step would make
    // the callers contend on the harness itself (progressbar's step is synchronized).
    Histogram[] latencies = new Histogram[callers];
    AtomicLong next = new AtomicLong();
    AtomicLong failed = new AtomicLong();
    AtomicReference<Throwable> firstFailure = new AtomicReference<>();
    CountDownLatch start = new CountDownLatch(1);
    CountDownLatch done = new CountDownLatch(callers);
    try (ProgressBar bar = progressBar(label, calls, out)) {
      for (int c = 0; c < callers; c++) {
        int caller = c;
        Histogram histogram = new Histogram(3);
        latencies[c] = histogram;
        Thread thread = factory.newThread(() -> {
          int unreported = 0;
          try {
            start.await();
            long index;
            while ((index = next.getAndIncrement()) < calls) {
              long t0 = System.nanoTime();
              try {
                call.run(caller, index);
              } catch (Exception e) {
                failed.incrementAndGet();
                firstFailure.compareAndSet(null, e);
              }
              histogram.recordValue(System.nanoTime() - t0);
              if (++unreported == PROGRESS_CHUNK) {
                bar.stepBy(unreported);
                unreported = 0;
              }
            }
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          } finally {
            bar.stepBy(unreported);
            done.countDown();
          }
        });
        thread.setName(label + "-caller-" + c);
        thread.start();
      }
      long t0 = System.nanoTime();
      start.countDown();
      if (!done.await(30, TimeUnit.MINUTES)) {
        throw new IllegalStateException(label + ": callers did not finish within 30 minutes");
      }
      double seconds = (System.nanoTime() - t0) / 1e9;
      if (firstFailure.get() != null) {
        out.println(label + ": " + failed.get() + " call(s) failed; first: " + firstFailure.get());
      }
      Histogram all = new Histogram(3);
      for (Histogram histogram : latencies) {
        all.add(histogram);
      }
      return new Outcome(label, calls, failed.get(), seconds, all);
    }
  }

  static ProgressBar progressBar(String label, long max, PrintStream out) {
    return progressBar(label, max, out, onTerminal());
  }

  /** On a terminal an animated bar; elsewhere (a pipe, a CI log) plain ASCII lines, no escape codes. */
  static ProgressBar progressBar(String label, long max, PrintStream out, boolean terminal) {
    ProgressBarBuilder builder = new ProgressBarBuilder().setTaskName(label).setInitialMax(max)
        .showSpeed().setUnit(" calls", 1);
    if (!terminal) {
      builder.setStyle(ProgressBarStyle.ASCII).setConsumer(new DelegatingProgressBarConsumer(out::println))
          .setUpdateIntervalMillis(2_000);
    }
    return builder.build();
  }

  /**
   * Whether the output is a terminal. From JDK 22 on every JVM has a {@code Console}, a pipe's too, so
   * {@code System.console() != null} no longer says it: ask {@code Console.isTerminal()} where it exists.
   */
  static boolean onTerminal() {
    Console console = System.console();
    if (console == null) {
      return false;
    }
    try {
      return (Boolean) Console.class.getMethod("isTerminal").invoke(console);
    } catch (NoSuchMethodException beforeJdk22) {
      return true; // JDK 17-21: a console exists only for a terminal
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("Console.isTerminal() failed", e);
    }
  }
}
