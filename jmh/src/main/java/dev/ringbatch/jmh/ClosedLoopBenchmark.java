package dev.ringbatch.jmh;

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
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.BenchmarkParams;

/**
 * A closed loop (P3), in sample-time mode so that it yields percentiles: K caller threads, each submitting one item and waiting for its result before the next,
 * into a counting sink; K is JMH's thread count (64 unless {@code -t} says otherwise). Every call ends with a
 * thread wake-up, so this is the ceiling of request threads that wait for their writes. Reports the mean
 * batch size through {@link BatchLog} (JMH's auxiliary counters do not work in sample-time mode).
 *
 * <p>Run: {@code java -jar jmh/target/benchmarks.jar ClosedLoopBenchmark -t 16 -p target=ringbatch,abq}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@Threads(64)
public class ClosedLoopBenchmark {
  private static final Long ITEM = 1L;

  @Param({"ringbatch", "abq"})
  public String target;

  private Target impl;

  @Setup(Level.Trial)
  public void start() {
    impl = Target.create(target);
  }

  @TearDown(Level.Trial)
  public void stop(BenchmarkParams params) throws Exception {
    BatchLog.append(target, params.getThreads(), impl.meanBatchSize());
    impl.close();
  }

  @Benchmark
  public Object submitJoin() throws InterruptedException {
    return impl.submit(ITEM).join();
  }
}
