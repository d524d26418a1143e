package dev.ringbatch.jmh;

import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * A closed loop: K caller threads, each submitting one item and waiting for its result before the next,
 * into a no-op sink. This is the ceiling of the demos' callers: every call ends with a thread wake-up.
 * K is JMH's thread count, 64 by default.
 *
 * <p>Run: {@code java -jar jmh/target/benchmarks.jar ClosedLoopBenchmark -t 64} (or {@code -t 16}, ...)
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
@Threads(64)
public class ClosedLoopBenchmark {
  private final Long item = 1L;
  private Batcher<Long, Void> batcher;

  @Setup(Level.Trial)
  public void start() {
    batcher = Batcher.of("closed-loop", BatcherConfig.builder().ringSize(4096).maxBatchSize(4096).build(),
        new CountingSink<>());
  }

  @TearDown(Level.Trial)
  public void stop() {
    batcher.close(Duration.ofSeconds(10));
  }

  @Benchmark
  public Void submitJoin() {
    return batcher.submit(item).join();
  }
}
