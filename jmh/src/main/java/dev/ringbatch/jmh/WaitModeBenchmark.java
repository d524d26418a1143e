package dev.ringbatch.jmh;

import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.OverflowPolicy;
import dev.ringbatch.WaitMode;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Group;
import org.openjdk.jmh.annotations.GroupThreads;
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
 * Which {@link WaitMode} should be the default: fire-and-forget throughput with 1 and 2 producers into a
 * no-op sink. Each iteration ends with a {@code flush()}, so what is measured reached the sink.
 *
 * <p>Run: {@code java -jar jmh/target/benchmarks.jar WaitModeBenchmark RawRingBenchmark}
 */
@State(Scope.Group)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class WaitModeBenchmark {
  private static final Long ITEM = 42L;

  @Param({"BLOCKING", "YIELDING", "BUSY_SPIN"})
  public WaitMode waitMode;

  private Batcher<Long, Void> batcher;

  @Setup(Level.Trial)
  public void start() {
    BatchSink<Long, Void> sink = new CountingSink<>();
    batcher = Batcher.of("bench", BatcherConfig.builder()
        .ringSize(16384)
        .overflowPolicy(OverflowPolicy.BLOCK)
        .submitTimeout(BatcherConfig.NO_TIMEOUT)
        .waitMode(waitMode)
        .build(), sink);
  }

  @TearDown(Level.Iteration)
  public void drain() {
    batcher.flush().join();
  }

  @TearDown(Level.Trial)
  public void stop() {
    batcher.close(Duration.ofSeconds(10));
  }

  @Benchmark
  @Group("offer_1producer")
  @GroupThreads(1)
  public boolean offer1() {
    return batcher.offer(ITEM);
  }

  @Benchmark
  @Group("offer_2producers")
  @GroupThreads(2)
  public boolean offer2() {
    return batcher.offer(ITEM);
  }
}
