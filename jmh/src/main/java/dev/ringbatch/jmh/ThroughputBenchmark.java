package dev.ringbatch.jmh;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
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

/**
 * Open-loop throughput into a counting sink, producers never waiting for results: {@code offer} (fire and
 * forget, P1) and {@code submit} (a future per item, P2). The producer count is JMH's thread count; each
 * iteration ends when the sink has seen every accepted item.
 *
 * <p>Run: {@code java -jar jmh/target/benchmarks.jar ThroughputBenchmark -t 2 -p target=ringbatch,abq}
 * (add {@code -p capacity=1024,16384 -p maxBatch=64,1024} to vary the ring and the batch limit; the report's
 * full suite does).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class ThroughputBenchmark {
  private static final Long ITEM = 42L;

  @Param({"ringbatch", "abq", "lbq", "direct"})
  public String target;

  /** Ring or queue capacity; {@code -p capacity=1024,16384} to compare. */
  @Param({"16384"})
  public int capacity;

  /** The batch limit; {@code -p maxBatch=64,1024} to compare. */
  @Param({"1024"})
  public int maxBatch;

  private Target impl;

  @Setup(Level.Trial)
  public void start() {
    impl = Target.create(target, capacity, maxBatch);
  }

  @TearDown(Level.Iteration)
  public void drain() throws InterruptedException {
    impl.drain();
  }

  @TearDown(Level.Trial)
  public void stop() throws InterruptedException {
    impl.close();
  }

  @Benchmark
  public void offer() throws InterruptedException {
    impl.offer(ITEM);
  }

  @Benchmark
  public CompletableFuture<?> submit() throws InterruptedException {
    return impl.submit(ITEM);
  }
}
