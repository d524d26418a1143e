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
 * One producer submits a burst of {@code burst} items without waiting, then joins all their futures (issue
 * 14): a request that fans out many writes. Score: time per burst; items per second = burst / score.
 *
 * <p>Run: {@code java -jar jmh/target/benchmarks.jar BurstBenchmark -f 3}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class BurstBenchmark {
  private static final Long ITEM = 1L;

  @Param({"ringbatch", "abq"})
  public String target;

  @Param({"10000"})
  public int burst;

  @Param({"64"})
  public int maxBatch;

  private Target impl;
  private CompletableFuture<?>[] futures;

  @Setup(Level.Trial)
  public void start() {
    impl = Target.create(target, 16_384, maxBatch);
    futures = new CompletableFuture<?>[burst];
  }

  @TearDown(Level.Trial)
  public void stop() throws InterruptedException {
    impl.close();
  }

  @Benchmark
  public void submitThenJoinAll() throws InterruptedException {
    for (int i = 0; i < futures.length; i++) {
      futures[i] = impl.submit(ITEM);
    }
    for (CompletableFuture<?> f : futures) {
      f.join();
    }
  }
}
