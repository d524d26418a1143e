package dev.ringbatch.internal;

import com.lmax.disruptor.AbstractSequencer;
import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import dev.ringbatch.OverflowPolicy;
import dev.ringbatch.internal.consume.BatchCompleter;
import dev.ringbatch.internal.consume.ConsumerCounters;
import dev.ringbatch.internal.consume.LostFailureLog;
import dev.ringbatch.internal.ring.ConsumerGroup;
import dev.ringbatch.internal.ring.PublishGate;
import dev.ringbatch.internal.ring.SubmissionSlot;
import dev.ringbatch.internal.shared.GuardedStatsRecorders;
import java.lang.reflect.Field;
import java.time.Duration;

/** The real parts the stress tests drive, built the way a batcher builds them. */
public final class StressParts {
  private StressParts() {}

  public static PublishGate gate(RingBuffer<SubmissionSlot> ring) {
    return new PublishGate("stress", ring, OverflowPolicy.DROP, Duration.ofSeconds(1), new ConsumerGroup(),
        new GuardedStatsRecorders("stress"), System::nanoTime);
  }

  /** The ring's cursor sequence, which the consumer's wait strategy reads (the Disruptor hands it to waitFor). */
  public static Sequence cursor(RingBuffer<?> ring) {
    try {
      Field sequencer = RingBuffer.class.getSuperclass().getDeclaredField("sequencer");
      sequencer.setAccessible(true);
      Field cursor = AbstractSequencer.class.getDeclaredField("cursor");
      cursor.setAccessible(true);
      return (Sequence) cursor.get(sequencer.get(ring));
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(e);
    }
  }

  static BatchCompleter completer() {
    return new BatchCompleter("stress", new ConsumerCounters(), new GuardedStatsRecorders("stress"), null,
        new LostFailureLog("stress"));
  }
}
