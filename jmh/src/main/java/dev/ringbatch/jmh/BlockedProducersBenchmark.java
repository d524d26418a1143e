package dev.ringbatch.jmh;

import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.OverflowPolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
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

/**
 * CPU burnt by callers blocked on a full ring (issue 14): {@code callers} platform threads submit into a ring
 * that a stalled sink keeps full, and wait under {@code BLOCK}; one invocation watches them for
 * {@code seconds} and reports the process CPU time used meanwhile ({@code cpuMillis}; the goal is under 5% of
 * one core: 250 ms over 5 s for 200 callers). The sleep is the measurement window.
 *
 * <p>Run: {@code java -jar jmh/target/benchmarks.jar BlockedProducersBenchmark -f 3}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 1)
@Measurement(iterations = 3)
@Fork(1)
public class BlockedProducersBenchmark {
  @Param({"200"})
  public int callers;

  @Param({"5"})
  public int seconds;

  private final CountDownLatch stall = new CountDownLatch(1);
  private final List<Thread> blocked = new ArrayList<>();
  private Batcher<Long, Void> batcher;

  /** What one window measured. */
  @State(Scope.Thread)
  @AuxCounters(AuxCounters.Type.EVENTS)
  public static class Cpu {
    public long cpuMillis;
  }

  @Setup(Level.Trial)
  public void block() throws InterruptedException {
    CountDownLatch entered = new CountDownLatch(1);
    batcher = Batcher.of("blocked", BatcherConfig.builder().ringSize(64).maxBatchSize(64)
        .overflowPolicy(OverflowPolicy.BLOCK).submitTimeout(BatcherConfig.NO_TIMEOUT).build(),
        BatchSink.noResult(items -> {
          entered.countDown();
          stall.await();
        }));
    batcher.offer(0L);
    entered.await();
    for (int i = 0; i < 64; i++) {
      batcher.offer((long) i); // the ring is full from here on
    }
    for (int c = 0; c < callers; c++) {
      Thread t = new Thread(() -> batcher.offer(1L), "blocked-" + c);
      t.setDaemon(true);
      blocked.add(t);
      t.start();
    }
  }

  @TearDown(Level.Trial)
  public void release() throws InterruptedException {
    stall.countDown();
    batcher.close(Duration.ofSeconds(30));
  }

  @Benchmark
  public void window(Cpu cpu) throws InterruptedException {
    long before = ClosedLoopBenchmark.processCpuNanos();
    TimeUnit.SECONDS.sleep(seconds); // the window: the blocked callers should use no CPU in it
    cpu.cpuMillis += TimeUnit.NANOSECONDS.toMillis(ClosedLoopBenchmark.processCpuNanos() - before);
  }
}
