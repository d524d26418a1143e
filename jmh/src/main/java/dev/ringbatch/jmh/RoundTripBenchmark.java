package dev.ringbatch.jmh;

import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.WaitMode;
import java.time.Duration;
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

/**
 * A lone caller's round trip through an idle batcher ({@code submit(x).join()}), beside the floor it
 * cannot beat when the consumer sleeps: two thread wake-ups (the caller wakes a parked thread, which wakes
 * the caller back). A timer-based batcher would add its whole timer here.
 *
 * <p>Run: {@code java -jar jmh/target/benchmarks.jar RoundTripBenchmark}
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class RoundTripBenchmark {

  @Param({"BLOCKING", "YIELDING"})
  public WaitMode waitMode;

  private Batcher<Long, Void> batcher;
  private final Long item = 7L;

  @Setup(Level.Trial)
  public void start() {
    batcher = Batcher.of("roundtrip", BatcherConfig.builder().waitMode(waitMode).build(), new CountingSink<>());
  }

  @TearDown(Level.Trial)
  public void stop() {
    batcher.close(Duration.ofSeconds(10));
  }

  @Benchmark
  public Void submitJoin() {
    return batcher.submit(item).join();
  }

  /** A parked echo thread; each benchmark call wakes it and parks until it wakes the caller back. */
  @State(Scope.Thread)
  public static class Echo {
    private volatile Thread caller;
    private volatile long request;
    private volatile long response;
    private volatile boolean running = true;
    private Thread echo;

    @Setup(Level.Trial)
    public void start() {
      echo = new Thread(() -> {
        long answered = 0;
        while (running) {
          long r = request;
          if (r != answered) {
            answered = r;
            response = r;
            LockSupport.unpark(caller);
          } else {
            LockSupport.park(this);
          }
        }
      }, "echo");
      echo.setDaemon(true);
      echo.start();
    }

    @TearDown(Level.Trial)
    public void stop() throws InterruptedException {
      running = false;
      LockSupport.unpark(echo);
      echo.join(1000);
    }

    long roundTrip() {
      caller = Thread.currentThread();
      long r = request + 1;
      request = r;
      LockSupport.unpark(echo);
      while (response != r) {
        LockSupport.park(this);
      }
      return r;
    }
  }

  @Benchmark
  public long twoThreadWakeups(Echo echo) {
    return echo.roundTrip();
  }
}
