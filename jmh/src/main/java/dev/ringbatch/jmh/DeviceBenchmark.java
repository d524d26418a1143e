package dev.ringbatch.jmh;

import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.OverflowPolicy;
import dev.ringbatch.sink.ByteSink;
import java.io.IOException;
import java.io.OutputStream;
import java.time.Duration;
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

/**
 * Byte coalescing (P8) against a simulated device that costs 80 ns per write call and 8 µs per flush, like a
 * socket or a file with a syscall per write and a sync per flush. {@code direct}: each producer writes and
 * flushes its own 100-byte message under a lock, as without a write buffer. {@code ringbatch}: producers
 * {@code offer} messages; a {@link ByteSink} coalesces each batch into 128 KiB writes and flushes once per
 * batch. Items per second; each iteration ends when the device has seen every accepted message.
 *
 * <p>Run: {@code java -jar jmh/target/benchmarks.jar DeviceBenchmark -t 2}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@Threads(2)
public class DeviceBenchmark {
  private static final byte[] MESSAGE = new byte[100];

  @Param({"ringbatch", "direct"})
  public String target;

  private SimulatedDevice device;
  private Batcher<byte[], Long> batcher;

  /** 80 ns per write call, 8 µs per flush, spent spinning so that timings hold on any scheduler. */
  static final class SimulatedDevice extends OutputStream {
    private volatile long bytes;

    @Override
    public void write(int b) {
      write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] b, int off, int len) {
      spin(80);
      bytes += len;
    }

    @Override
    public void flush() {
      spin(8_000);
    }

    private static void spin(long nanos) {
      long until = System.nanoTime() + nanos;
      while (System.nanoTime() < until) {
        Thread.onSpinWait();
      }
    }
  }

  @Setup(Level.Trial)
  public void start() throws IOException {
    device = new SimulatedDevice();
    if (target.equals("ringbatch")) {
      ByteSink<byte[]> sink = ByteSink.<byte[]>toStream(device, (message, buffer) -> buffer.put(message)).build();
      batcher = Batcher.of("device", BatcherConfig.builder().ringSize(16_384).maxBatchSize(4_096)
          .overflowPolicy(OverflowPolicy.BLOCK).submitTimeout(BatcherConfig.NO_TIMEOUT).build(), sink);
    }
  }

  @TearDown(Level.Iteration)
  public void drain() {
    if (batcher != null) {
      batcher.flush().join();
    }
  }

  @TearDown(Level.Trial)
  public void stop() {
    if (batcher != null) {
      batcher.close(Duration.ofSeconds(10));
    }
  }

  @Benchmark
  public void write() {
    if (batcher != null) {
      batcher.offer(MESSAGE);
    } else {
      synchronized (device) {
        device.write(MESSAGE, 0, MESSAGE.length);
        device.flush();
      }
    }
  }
}
