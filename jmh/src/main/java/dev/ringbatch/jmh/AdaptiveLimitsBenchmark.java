package dev.ringbatch.jmh;

import dev.ringbatch.Adaptive;
import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.BatcherStats;
import java.io.IOException;
import java.time.Duration;
import java.util.Arrays;
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
 * Adaptive limits against static ones (issue 24): K callers in a closed loop ({@code submit(x).join()}) into a sink
 * whose every call costs a fixed {@code F} plus {@code c} per item, spent waiting as a remote call or a commit does
 * (parked, then spun for the last 60 µs so that short costs stay exact). {@code limits} is {@code static} (the
 * given {@code maxBatch} and {@code lingerMicros}), {@code defaults} (nothing set: the default ring, cap and mode
 * a user gets), {@code throughput} or {@code latency} ({@link Adaptive}, capped
 * at {@code maxBatch}, p99 target {@code p99Micros}). The score is invocations per second: calls per second =
 * score x callers x calls. Each fork logs its mean batch size and the p50/p99 of a call's round trip through
 * {@link BatchLog}.
 *
 * <p>{@code callers} may be a sequence of loads, {@code 10>2000>100}: iteration i (warm-up ones included) runs the
 * load {@code i mod n}, so a run of n x m iterations steps through the loads m times. Each iteration then appends a
 * line to {@link StepLog} (load, calls per second, p99, mean batch and its coefficient of variation, the linger and
 * size limit in force at its end), and with {@code -Dringbatch.jmh.series=FILE} a sampler writes the limits and
 * the load every 20 ms, for the report's charts.
 *
 * <p>Run: {@code java -jar jmh/target/benchmarks.jar AdaptiveLimitsBenchmark -p fixedMicros=20,2000
 * -p callers=10,2000 -p maxBatch=256,4096 -p lingerMicros=0,20,100 -p limits=static,throughput -f 3}
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

  /** Callers in the closed loop, K; or loads that follow one another per iteration, {@code 10>2000>100}. */
  @Param({"10", "2000"})
  public String callers;

  /** Whether callers are {@code virtual} threads (JDK 21+) or {@code platform} threads. */
  @Param({"virtual"})
  public String threads;

  /** {@code static}, or the adaptive mode: {@code throughput} or {@code latency}. */
  @Param({"static"})
  public String limits;

  /** The static limit on a batch's size, and the adaptive modes' cap. */
  @Param({"256", "4096"})
  public int maxBatch;

  /** The static linger in microseconds: 0 is natural batching. Ignored by the adaptive modes. */
  @Param({"0", "2000"})
  public long lingerMicros;

  /** The ring of the static and adaptive configurations; {@code defaults} keeps the default ring. */
  @Param({"16384"})
  public int ringSize;

  /** The latency mode's p99 target, in microseconds. */
  @Param({"5000"})
  public long p99Micros;

  /** Calls each caller makes per invocation. */
  @Param({"50"})
  public int calls;

  private Batcher<Long, Void> batcher;
  private ExecutorService pool;
  private final CallerLoop loop = new CallerLoop();
  private int[] loads;
  private int iteration;
  private int load;
  private StepLog steps;
  /** The sink's batches, sizes and squared sizes: consumer thread, read between iterations. */
  private volatile long batches;
  private volatile long items;
  private volatile long itemsSquared;

  @Setup(Level.Trial)
  public void start() throws IOException {
    loads = Arrays.stream(callers.split(">")).mapToInt(Integer::parseInt).toArray();
    BatcherConfig.Builder config = limits.equals("defaults") ? BatcherConfig.builder()
        : BatcherConfig.builder().ringSize(ringSize).maxBatchSize(maxBatch);
    switch (limits) {
      case "defaults" -> { } // nothing set: the ring, the cap and the mode a user gets
      case "static" -> config.linger(Duration.ofNanos(lingerMicros * 1_000));
      case "throughput" -> config.adaptive(Adaptive.throughput());
      case "latency" -> config.adaptive(Adaptive.latency(Duration.ofNanos(p99Micros * 1_000)));
      default -> throw new IllegalArgumentException("limits must be defaults, static, throughput or latency but was "
          + limits);
    }
    batcher = Batcher.of("adaptive-bench", config.build(), BatchSink.noResult(this::write));
    boolean virtual = switch (threads) {
      case "virtual" -> Runtime.version().feature() >= 21;
      case "platform" -> false;
      default -> throw new IllegalArgumentException("threads must be virtual or platform but was " + threads);
    };
    pool = virtual ? VirtualThreads.perTaskExecutor() : Executors.newCachedThreadPool();
    steps = new StepLog(key(), batcher, loop);
  }

  private String key() {
    String mode = limits.equals("static") ? "max=" + maxBatch + "/linger=" + lingerMicros + "us"
        : limits + (limits.equals("latency") ? "=" + p99Micros + "us" : "") + "/max=" + maxBatch;
    return "adaptive/F=" + fixedMicros + "us/c=" + perItemNanos + "ns/" + threads + "/" + mode
        + (ringSize != 16_384 && !limits.equals("defaults") ? "/ring=" + ringSize : "")
        + (loads.length > 1 ? "/steps" : "");
  }

  /** The remote call: F + c * n of waiting. */
  private void write(List<Long> batch) {
    int n = batch.size();
    long until = System.nanoTime() + fixedMicros * 1_000 + perItemNanos * n;
    long left;
    while ((left = until - System.nanoTime()) > SPIN_NANOS) {
      LockSupport.parkNanos(left - SPIN_NANOS);
    }
    while (until - System.nanoTime() > 0) {
      Thread.onSpinWait();
    }
    batches++; // one writer thread: plain increments of volatiles are exact
    items += n;
    itemsSquared += (long) n * n;
  }

  /** Picks this iteration's load. */
  @Setup(Level.Iteration)
  public void step(IterationParams params) {
    load = loads[iteration++ % loads.length];
    steps.begin(load, batches, items, itemsSquared);
  }

  /** Keeps the round trips of measurement iterations only; logs the step. */
  @TearDown(Level.Iteration)
  public void collect(IterationParams iteration) throws IOException {
    steps.end(iteration, loop.collect(iteration), batches, items, itemsSquared);
  }

  @TearDown(Level.Trial)
  public void stop() throws IOException {
    BatcherStats stats = batcher.stats();
    double meanBatch = stats.batches() == 0 ? 0 : (double) stats.written() / stats.batches();
    BatchLog.append(key(), loads[0], meanBatch, loop.micros(50), loop.micros(99));
    steps.close();
    pool.shutdownNow();
    batcher.close(Duration.ofSeconds(10));
  }

  @Benchmark
  public void callers() throws Exception {
    loop.run(pool, load, calls, () -> batcher.submit(ITEM));
  }
}
