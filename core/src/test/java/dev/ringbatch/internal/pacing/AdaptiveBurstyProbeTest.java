package dev.ringbatch.internal.pacing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.Adaptive;
import dev.ringbatch.BatchLimits;
import dev.ringbatch.internal.consume.PendingBatch;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * A quick sink (F = 20 µs, c = 500 ns, all 10 callers in every batch without a linger: any linger only costs),
 * the same model as AdaptiveLimitsTest#aSinkAsQuickAsTheCallersKeepsNaturalBatchingAndProbesRarely, but the load
 * comes in bursts of 150 batches (about 4 ms) with 3 ms of idle between them. A probe must still decide and back
 * off: had every burst started the same probe again (a probe cut short by an idle spell neither deciding nor backing
 * off), the "one probe in up to 64 epochs, probes under 5 % of the batches" promise would become about a third of
 * all batches held at the losing rung, for ever. A probe now goes on across idle spells with the next whole epoch.
 */
class AdaptiveBurstyProbeTest {
  @Test
  void probesBackOffUnderABurstyLoadToo() {
    BatchLimits caps = BatchLimits.of(4096, BatchLimits.NO_BYTE_LIMIT, Duration.ZERO);
    AdaptiveLimits controller = new AdaptiveLimits(Adaptive.throughput(), caps, false);
    PendingBatch<Object, Object> batch = new PendingBatch<>(16, 1 << 20);
    long now = 1_000_000_000L;
    long lingering = 0;
    long counted = 0;
    for (int i = 0; i < 400_000; i++) {
      if (i % 150 == 0) {
        now += 3_000_000; // 3 ms idle between bursts
      }
      long linger = controller.limits().linger().toNanos();
      now += 2_000; // the first caller back is taken
      boolean held = linger > 0 && controller.mayLinger(now);
      if (held) {
        now += linger; // nobody else to gather: all 10 are in every batch already
      }
      if (i >= 100_000) { // settled
        counted++;
        lingering += held ? 1 : 0;
      }
      int n = 10;
      batch.clear();
      for (int k = 0; k < n; k++) {
        batch.add(k, null, 1, k, now - 5_000);
      }
      controller.writeStarting(batch.copyStamps(controller));
      long start = now;
      long write = 20_000 + 500L * n;
      now += write;
      controller.writeEnded(n, start, write, now, false);
    }
    assertThat(100.0 * lingering / counted).as("%% of batches held by a probe; %s", controller).isLessThan(5.0);
  }
}
