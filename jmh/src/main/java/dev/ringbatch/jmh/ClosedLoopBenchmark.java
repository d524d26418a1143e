package dev.ringbatch.jmh;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.AuxCounters;
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
 * A closed loop (P3, issue 14): K callers, on platform or virtual threads, each calling
 * {@code submit(item).join()} in a loop, as request threads that wait for their own result do. One invocation
 * runs every caller for {@code calls} calls and waits for all, so calls per second are the score times
 * {@code callers * calls}. The auxiliary counters {@code calls} and {@code cpuNanos} (process CPU time) are
 * totals over the measured iterations (JMH sums event counters), and their ratio is the CPU time per call;
 * each fork logs its mean batch size and the p50/p99 of a call's round trip (measurement iterations only)
 * through {@link BatchLog}. Virtual threads need JDK 21+ (the benchmark fails with that message on 17).
 *
 * <p>Run: {@code java -jar jmh/target/benchmarks.jar ClosedLoopBenchmark -p threads=virtual -p callers=1024
 * -p sink=db -f 3}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class ClosedLoopBenchmark {
  private static final Long ITEM = 1L;

  @Param({"ringbatch", "abq", "lbq"})
  public String target;

  @Param({"platform", "virtual"})
  public String threads;

  @Param({"64"})
  public int callers;

  @Param({"noop", "db"})
  public String sink;

  /** Ring (or queue) slots: the harness used 65,536; a smaller ring keeps the slots in cache. */
  @Param({"65536"})
  public int capacity;

  /** Calls each caller makes per invocation: enough that starting the callers is a small share. */
  @Param({"200"})
  public int calls;

  private Target impl;
  private ExecutorService pool;
  private final CallerLoop loop = new CallerLoop();

  /** What one iteration measured, reported by JMH next to the score. */
  @State(Scope.Thread)
  @AuxCounters(AuxCounters.Type.EVENTS)
  public static class Counters {
    public long calls;
    public long cpuNanos;
    private long cpuAtStart;

    @Setup(Level.Iteration)
    public void begin() {
      calls = 0;
      cpuAtStart = processCpuNanos();
    }

    @TearDown(Level.Iteration)
    public void end() {
      cpuNanos = processCpuNanos() - cpuAtStart;
    }
  }

  @Setup(Level.Trial)
  public void start() {
    impl = Target.create(target, capacity, Math.min(4_096, capacity), SimulatedDatabase.named(sink));
    pool = threads.equals("virtual") ? VirtualThreads.perTaskExecutor() : Executors.newFixedThreadPool(callers);
  }

  /** Keeps the round trips of measurement iterations only. */
  @TearDown(Level.Iteration)
  public void collect(IterationParams iteration) {
    loop.collect(iteration);
  }

  @TearDown(Level.Trial)
  public void stop() throws Exception {
    log();
    pool.shutdownNow();
    impl.close();
  }

  private void log() throws IOException {
    BatchLog.append(target + "/" + threads + "/" + sink, callers, impl.meanBatchSize(), loop.micros(50),
        loop.micros(99));
  }

  @Benchmark
  public void callers(Counters counters) throws Exception {
    loop.run(pool, callers, calls, () -> impl.submit(ITEM));
    counters.calls += (long) callers * calls;
  }

  static long processCpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
        .getProcessCpuTime();
  }
}
