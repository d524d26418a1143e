package dev.ringbatch.internal;

import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import dev.ringbatch.BatchLimits;
import dev.ringbatch.BatchSink;
import dev.ringbatch.RetryPolicy;
import dev.ringbatch.Ticker;
import dev.ringbatch.WaitMode;
import java.time.Duration;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.JJ_Result;

/**
 * Runtime reconfiguration vs the consumer ({@link CoalescingConsumer#setLimits}). Invariant: the consumer
 * reads either the old limits or the new ones as a whole, never the item limit of one with the byte limit of
 * the other: {@code setLimits} publishes one immutable {@link BatchLimits} through a volatile field.
 */
@JCStressTest
@Outcome(id = "256, 9223372036854775807", expect = Expect.ACCEPTABLE, desc = "The consumer read the old limits.")
@Outcome(id = "8, 4096", expect = Expect.ACCEPTABLE, desc = "The consumer read the new limits.")
@Outcome(expect = Expect.FORBIDDEN, desc = "A mix of old and new limits.")
@State
public class LimitsSwapStress {
  private static final BatchLimits NEW = BatchLimits.of(8, 4096, Duration.ofMillis(1));

  private final CoalescingConsumer<Object, Void> consumer;

  public LimitsSwapStress() {
    SelfClock selfClock = new SelfClock();
    ConsumerWaitStrategy wait = new ConsumerWaitStrategy(WaitMode.BLOCKING, selfClock);
    RingBuffer<SubmissionSlot> ring = SubmissionSlot.newRing(2, wait);
    BatchSink<Object, Void> sink = BatchSink.noResult(items -> { });
    HandOver handOver = new HandOver();
    FlushWaiters flushWaiters = new FlushWaiters();
    BatchCompleter completer = StressParts.completer();
    SyncBatchWriter<Object, Void> writer = new SyncBatchWriter<>("limits", 2, sink, RetryPolicy.none(),
        Ticker.system(), handOver, completer, flushWaiters, selfClock, new SpinHint());
    consumer = new CoalescingConsumer<>("limits", ring, ring.newBarrier(), new Sequence(-1), wait, writer, handOver,
        completer, flushWaiters, BatchLimits.ofDefaults(), Ticker.system(), StressParts.gate(ring), selfClock);
  }

  @Actor
  public void reconfigure() {
    consumer.setLimits(NEW);
  }

  @Actor
  public void consume(JJ_Result r) {
    BatchLimits seen = consumer.limits();
    r.r1 = seen.maxBatchSize();
    r.r2 = seen.maxBatchBytes();
  }
}
