package dev.ringbatch.examples;

import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.BatcherStats;
import dev.ringbatch.CloseReport;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The quick start: many threads write lines one by one; ringbatch turns them into few batches, and every
 * caller still gets its own result. The sink stands for any write that is cheaper in bulk (a JDBC batch, a
 * file append): it costs a fixed 50 µs per call plus a little per line.
 *
 * <p>Run: {@code mvn -q -B package -Pdemo -DskipTests -pl examples -am -Ddemo.args="quickstart"} (32 callers,
 * 2,000 lines each).
 */
public final class QuickStart {

  private QuickStart() {}

  public static void main(String[] args) throws Exception {
    int callers = args.length > 0 ? Integer.parseInt(args[0]) : 32;
    int linesPerCaller = args.length > 1 ? Integer.parseInt(args[1]) : 2_000;
    run(callers, linesPerCaller, System.out);
  }

  /** Runs the demo and returns the final stats; the smoke test calls it with small sizes. */
  static BatcherStats run(int callers, int linesPerCaller, PrintStream out) throws Exception {
    AtomicLong sinkCalls = new AtomicLong();
    BatchSink<String, Integer> sink = BatchSink.withResults(lines -> {
      sinkCalls.incrementAndGet();
      simulateBulkWrite(lines.size());                  // one expensive call for the whole batch
      List<Integer> lengths = new ArrayList<>(lines.size());
      for (String line : lines) {
        lengths.add(line.length());                     // a result per item
      }
      return lengths;
    });

    try (Batcher<String, Integer> batcher = Batcher.of("lines", BatcherConfig.ofDefaults(), sink)) {
      int length = batcher.submitAndWait("hello, ringbatch"); // blocking view: 16
      CompletableFuture<Integer> later = batcher.submit("async view");
      batcher.offer("fire and forget");
      out.printf("submitAndWait -> %d, submit -> %d%n", length, later.join());
      long start = System.nanoTime();
      runCallers(batcher, callers, linesPerCaller);
      double seconds = (System.nanoTime() - start) / 1e9;
      batcher.flush().join();
      BatcherStats stats = batcher.stats();
      long lines = (long) callers * linesPerCaller;
      out.printf("%d callers wrote %,d lines in %.2f s: %,.0f lines/s, %,d sink calls, mean batch %.1f%n",
          callers, lines, seconds, lines / seconds, sinkCalls.get(), stats.meanBatchSize());
      CloseReport report = batcher.close(java.time.Duration.ofSeconds(10));
      out.println(report);
      return report.stats();
    }
  }

  private static void runCallers(Batcher<String, Integer> batcher, int callers, int linesPerCaller)
      throws InterruptedException {
    ExecutorService pool = Executors.newFixedThreadPool(callers);
    CountDownLatch done = new CountDownLatch(callers);
    for (int c = 0; c < callers; c++) {
      int caller = c;
      pool.execute(() -> {
        try {
          for (int i = 0; i < linesPerCaller; i++) {
            batcher.submitAndWait("caller " + caller + " line " + i);
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        } finally {
          done.countDown();
        }
      });
    }
    done.await();
    pool.shutdown();
  }

  /** 50 µs per call plus 100 ns per line, spent spinning so that the timing holds on any scheduler. */
  private static void simulateBulkWrite(int lines) {
    long until = System.nanoTime() + 50_000 + 100L * lines;
    while (System.nanoTime() < until) {
      Thread.onSpinWait();
    }
  }
}
