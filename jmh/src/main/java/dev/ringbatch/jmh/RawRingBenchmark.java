package dev.ringbatch.jmh;

import com.lmax.disruptor.BlockingWaitStrategy;
import com.lmax.disruptor.EventHandler;
import com.lmax.disruptor.LiteBlockingWaitStrategy;
import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.WaitStrategy;
import com.lmax.disruptor.dsl.Disruptor;
import com.lmax.disruptor.dsl.ProducerType;
import com.lmax.disruptor.util.DaemonThreadFactory;
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
 * The ceiling: a raw Disruptor multi-producer ring of the same size with a handler that only counts, under
 * the Disruptor's own blocking strategies. Each iteration ends when the handler has seen every event.
 *
 * <p>Run: {@code java -jar jmh/target/benchmarks.jar RawRingBenchmark}
 */
@State(Scope.Group)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class RawRingBenchmark {

  /** The ring's event. */
  public static final class LongEvent {
    long value;
  }

  @Param({"LiteBlockingWaitStrategy", "BlockingWaitStrategy"})
  public String strategy;

  private Disruptor<LongEvent> disruptor;
  private RingBuffer<LongEvent> ring;
  private volatile long seen;

  @Setup(Level.Trial)
  public void start() {
    WaitStrategy wait = strategy.equals("BlockingWaitStrategy")
        ? new BlockingWaitStrategy() : new LiteBlockingWaitStrategy();
    disruptor = new Disruptor<>(LongEvent::new, 16384, DaemonThreadFactory.INSTANCE, ProducerType.MULTI, wait);
    EventHandler<LongEvent> handler = (event, sequence, endOfBatch) -> seen = sequence;
    disruptor.handleEventsWith(handler);
    ring = disruptor.start();
  }

  @TearDown(Level.Iteration)
  public void drain() {
    long last = ring.getCursor();
    while (seen < last) {
      Thread.onSpinWait();
    }
  }

  @TearDown(Level.Trial)
  public void stop() {
    disruptor.halt();
  }

  @Benchmark
  @Group("publish_1producer")
  @GroupThreads(1)
  public void publish1() {
    publish();
  }

  @Benchmark
  @Group("publish_2producers")
  @GroupThreads(2)
  public void publish2() {
    publish();
  }

  private void publish() {
    long sequence = ring.next();
    ring.get(sequence).value = sequence;
    ring.publish(sequence);
  }
}
