package dev.ringbatch.internal.pacing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.Adaptive;
import dev.ringbatch.BatchLimits;
import dev.ringbatch.internal.consume.PendingBatch;
import java.time.Duration;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The ticker steps back once (a wall-clock ticker corrected by NTP; or, inside the library, GuardedTicker replacing
 * a ticker that threw by System.nanoTime(), whose origin is unrelated). AdaptiveLimits ended an epoch only
 * when now - epochStart >= 2 ms; epochStart stays in the old origin, the difference stays negative, and
 * it restarted an epoch only after an idle gap. Under a continuous load the controller never ends another
 * epoch: frozen wherever it stood, here at a probe's candidate rung, and a sink that turns noisy (which must fall
 * back to natural batching "at once") keeps that linger for 40,000 batches (over 60 s of such a sink).
 */
class AdaptiveClockStepsBackTest {
  @Test
  void aTickerThatStepsBackDoesNotFreezeTheController() {
    BatchLimits caps = BatchLimits.of(4096, BatchLimits.NO_BYTE_LIMIT, Duration.ZERO);
    AdaptiveLimits controller = new AdaptiveLimits(Adaptive.throughput(), caps, false);
    PendingBatch<Object, Object> batch = new PendingBatch<>(16, 1 << 20);
    SplittableRandom random = new SplittableRandom(42);
    long now = 1_000_000_000L;
    boolean noisy = false;
    BatchLimits beforeTheStep = null;
    for (int i = 0; i < 60_000; i++) {
      if (i == 20_000) {
        beforeTheStep = controller.limits();
        now -= 3_600_000_000_000L; // the ticker steps back an hour, once; it runs forward normally after
        noisy = true; // and the sink turns noisy: mean 2.2 ms, deviation 6 ms
      }
      long linger = controller.limits().linger().toNanos();
      now += 2_000;
      int n = 5;
      if (linger > 0 && controller.mayLinger(now)) { // 10 closed-loop callers in two cohorts, back within 40 µs
        n += (int) Math.round(5 * (1 - Math.exp(-3.0 * linger / 40_000)));
        now += linger;
      }
      batch.clear();
      for (int k = 0; k < n; k++) {
        batch.add(k, null, 1, k, now - 5_000);
      }
      controller.writeStarting(batch.copyStamps(controller));
      long start = now;
      long write = noisy ? (random.nextInt(10) == 0 ? 20_000_000 : 200_000) : 2_000_000 + 500L * n;
      now += write;
      controller.writeEnded(n, start, write, now, false);
    }
    assertThat(beforeTheStep.linger()).as("a linger was in force at the step").isPositive();
    assertThat(controller.limits()).as("40,000 batches after the step, of a noisy sink: %s", controller)
        .isEqualTo(caps);
  }
}
