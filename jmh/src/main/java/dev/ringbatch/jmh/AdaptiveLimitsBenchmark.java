package dev.ringbatch.jmh;

import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.BatcherStats;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.IterationParams;

/**
 * The landscape adaptive limits must find their way in (issue 24): K callers in a closed loop ({@code
 * submit(x).join()}) into a sink whose every call costs a fixed {@code F} plus {@code c} per item, spent waiting
 * as a remote call or a commit does (parked, then spun for the last 60 µs so that short costs stay exact), under a
 * static {@code (maxBatchSize, linger)}. The score is calls per second (score x callers x calls); each fork logs
 * its mean batch size and the p50/p99 of a call's round trip through {@link BatchLog}. A grid over the static
 * limits for each (F, K) is the yardstick an adaptive mode is measured against.
 *
 * <p>Run: {@code java -jar jmh/target/benchmarks.jar AdaptiveLimitsBenchmark -p fixedMicros=20,2000
 * -p callers=10,2000 -p maxBatch=256,4096 -p lingerMicros=0,20,100,2000 -f 3}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(1)
public class AdaptiveLimitsBenchmark {
  private static final Long ITEM = 1L;
  /** Below this the remote cost is spun rather than parked: parkNanos overshoots by tens of microseconds. */
  private static final long SPIN_NANOS = 60_000;

  /** The sink's fixed cost per call, F, in microseconds. */
  @Param({"20", "2000"})
  public long fixedMicros;

  /** The sink's cost per item, c, in nanoseconds. */
  @Param({"500"})
  public long perItemNanos;

  /** Callers in the closed loop, K (virtual threads on JDK 21+, platform threads before). */
  @Param({"10", "2000"})
  public int callers;

  /** The static limit on a batch's size. */
  @Param({"256", "4096"})
  public int maxBatch;

  /** The static linger in microseconds: 0 is natural batching. */
  @Param({"0", "2000"})
  public long lingerMicros;

  /** Calls each caller makes per invocation. */
  @Param({"50"})
  public int calls;

  private Batcher<Long, Void> batcher;
  private ExecutorService pool;
  private final CallerLoop loop = new CallerLoop();

  @Setup(Level.Trial)
  public void start() {
    long linger = lingerMicros * 1_000;
    BatcherConfig config = BatcherConfig.builder().ringSize(16_384).maxBatchSize(maxBatch)
        .linger(Duration.ofNanos(linger)).build();
    batcher = Batcher.of("adaptive-bench", config, BatchSink.noResult(this::write));
    pool = Runtime.version().feature() >= 21 ? VirtualThreads.perTaskExecutor()
        : Executors.newFixedThreadPool(callers);
  }

  /** The remote call: F + c * n of waiting. */
  private void write(List<Long> batch) {
    long until = System.nanoTime() + fixedMicros * 1_000 + perItemNanos * batch.size();
    long left;
    while ((left = until - System.nanoTime()) > SPIN_NANOS) {
      LockSupport.parkNanos(left - SPIN_NANOS);
    }
    while (until - System.nanoTime() > 0) {
      Thread.onSpinWait();
    }
  }

  /** Keeps the round trips of measurement iterations only. */
  @TearDown(Level.Iteration)
  public void collect(IterationParams iteration) {
    loop.collect(iteration);
  }

  @TearDown(Level.Trial)
  public void stop() throws IOException {
    BatcherStats stats = batcher.stats();
    double meanBatch = stats.batches() == 0 ? 0 : (double) stats.written() / stats.batches();
    BatchLog.append("adaptive/F=" + fixedMicros + "us/c=" + perItemNanos + "ns/max=" + maxBatch + "/linger="
        + lingerMicros + "us", callers, meanBatch, loop.micros(50), loop.micros(99));
    pool.shutdownNow();
    batcher.close(Duration.ofSeconds(10));
  }

  @Benchmark
  public void callers() throws Exception {
    loop.run(pool, callers, calls, () -> batcher.submit(ITEM));
  }
}
