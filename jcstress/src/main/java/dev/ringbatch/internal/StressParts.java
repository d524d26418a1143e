package dev.ringbatch.internal;

import com.lmax.disruptor.RingBuffer;
import dev.ringbatch.OverflowPolicy;
import java.time.Duration;

/** The real parts the stress tests drive, built the way a batcher builds them. */
final class StressParts {
  private StressParts() {}

  static PublishGate gate(RingBuffer<SubmissionSlot> ring) {
    return new PublishGate("stress", ring, OverflowPolicy.DROP, Duration.ofSeconds(1), new ConsumerGroup(),
        new GuardedStatsRecorders("stress"), System::nanoTime);
  }

  static BatchCompleter completer() {
    return new BatchCompleter("stress", new ConsumerCounters(), new GuardedStatsRecorders("stress"), null);
  }
}
