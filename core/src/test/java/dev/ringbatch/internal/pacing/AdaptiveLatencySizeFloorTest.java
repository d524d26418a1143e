package dev.ringbatch.internal.pacing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.Adaptive;
import dev.ringbatch.BatchLimits;
import dev.ringbatch.internal.consume.PendingBatch;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * Latency mode, a saturated ring (every batch full), a sink whose FIXED cost alone is about the target
 * (F = 2 ms, c = 50 ns, p99 target 2 ms). Adaptive's contract: smaller batches only while the cost per item makes
 * the write long; "with a fixed cost near the target, more writes of fewer items would only queue the items
 * longer... halve once, and the fit learns from the two sizes". AdaptiveLimitsTest checks this after 5,000 batches
 * (about 300 epochs). Run longer, the size limit keeps walking down by one every few epochs, to a batch of ONE
 * item per 2 ms write: 4,000 times less throughput, for no gain in latency at all.
 */
class AdaptiveLatencySizeFloorTest {
  @Test
  void aFixedCostNearTheTargetDoesNotShrinkTheBatchesForever() {
    BatchLimits caps = BatchLimits.of(4096, BatchLimits.NO_BYTE_LIMIT, Duration.ZERO);
    AdaptiveLimits controller = new AdaptiveLimits(Adaptive.latency(Duration.ofMillis(2)), caps, false);
    PendingBatch<Object, Object> batch = new PendingBatch<>(16, 1 << 20);
    long now = 1_000_000_000L;
    int smallest = Integer.MAX_VALUE;
    for (int i = 0; i < 200_000; i++) { // about 12,000 epochs: under 7 minutes of such a sink
      int n = controller.limits().maxBatchSize(); // saturated: every batch is full
      smallest = Math.min(smallest, n);
      now += 2_000;
      batch.clear();
      for (int k = 0; k < n; k++) {
        batch.add(k, null, 1, k, now - 5_000); // published 5 µs before it was taken
      }
      controller.writeStarting(batch.copyStamps(controller));
      long start = now;
      long write = 2_000_000 + 50L * n;
      now += write;
      controller.writeEnded(n, start, write, now, false);
    }
    assertThat(smallest).as("smallest size limit chosen; now %s", controller)
        .isGreaterThanOrEqualTo(caps.maxBatchSize() / 2);
  }
}
