package dev.ringbatch.jmh;

import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.OverflowPolicy;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
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
 * Pipelined async sinks: a simulated remote bulk API that takes 2 ms per batch whatever its size (a
 * network round trip), batches of at most 256 items, and 1 to 8 batches in flight. One producer offers as
 * fast as the batcher takes items; each iteration ends when every item has been acknowledged.
 *
 * <p>Run: {@code java -jar jmh/target/benchmarks.jar AsyncSinkBenchmark}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(1)
public class AsyncSinkBenchmark {
  private static final Long ITEM = 1L;

  @Param({"1", "2", "4", "8"})
  public int inFlight;

  private ScheduledExecutorService remote;
  private Batcher<Long, Void> batcher;

  @Setup(Level.Trial)
  public void start() {
    remote = Executors.newScheduledThreadPool(2);
    batcher = Batcher.ofAsync("remote", BatcherConfig.builder().ringSize(16_384).maxBatchSize(256)
        .maxInFlightBatches(inFlight).overflowPolicy(OverflowPolicy.BLOCK).submitTimeout(BatcherConfig.NO_TIMEOUT)
        .build(), batch -> {
          CompletableFuture<Void> response = new CompletableFuture<>();
          remote.schedule(() -> response.complete(null), 2, TimeUnit.MILLISECONDS);
          return response.thenRun(() -> batch.completeRemaining(null));
        });
  }

  @TearDown(Level.Iteration)
  public void drain() {
    batcher.flush().join();
  }

  @TearDown(Level.Trial)
  public void stop() {
    batcher.close(Duration.ofSeconds(10));
    remote.shutdownNow();
  }

  @Benchmark
  public boolean offer() {
    return batcher.offer(ITEM);
  }
}
