package dev.ringbatch.internal.pacing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.Adaptive;
import dev.ringbatch.BatchLimits;
import java.time.Duration;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Producers that do not wait for their results (an open loop: {@code offer}, {@code submit} without a join)
 * against a sink that keeps up with them: the rate is the producers', whatever the limits, and from one epoch to
 * the next it swings by up to half (their own pace, a neighbour, a GC). No rung can pay, so every probe's result is
 * noise. A probe that cannot tell its candidate from the settled rung must not move away from natural batching on
 * it: a linger there only delays every item, a smaller cap only splits the same items into more writes. Simulated
 * time, seeded: deterministic.
 */
class AdaptiveOpenLoopTest {
  private static final long MICROS = 1_000;
  private static final BatchLimits CAPS = BatchLimits.of(4096, BatchLimits.NO_BYTE_LIMIT, Duration.ZERO);

  @Test
  void producersWhoseRateNoRungChanges_keepNaturalBatching_noiseMovesNothing() {
    AdaptiveLimits controller = new AdaptiveLimits(Adaptive.throughput(), CAPS, false);
    SplittableRandom random = new SplittableRandom(7);
    long now = 1_000_000_000L;
    double perMicro = 25; // items per µs the producers publish, redrawn about every 50 batches (1 ms)
    double backlog = 0;
    long offNatural = 0;
    long counted = 0;
    long settledOff = 0;
    for (int i = 0; i < 400_000; i++) {
      if (random.nextInt(50) == 0) {
        perMicro = 20 + 10 * random.nextDouble();
      }
      BatchLimits limits = controller.limits();
      long gap = 2 * MICROS;
      if (limits.linger().toNanos() > 0 && controller.mayLinger(now + gap)) {
        gap += limits.linger().toNanos();
      }
      now += gap;
      backlog += perMicro * gap / MICROS;
      int n = (int) Math.min(Math.floor(backlog), limits.maxBatchSize());
      backlog -= n;
      long write = 20 * MICROS + 2L * n; // F = 20 µs, c = 2 ns: about a third of the consumer's capacity is used
      long start = now;
      now += write;
      backlog += perMicro * write / MICROS;
      controller.writeStarting(0);
      controller.writeEnded(n, start, write, now);
      if (i >= 100_000) {
        counted++;
        offNatural += limits.equals(CAPS) ? 0 : 1;
        settledOff += controller.settledSize() == CAPS.maxBatchSize() && controller.settledLinger().isZero() ? 0 : 1;
      }
    }
    assertThat(100.0 * settledOff / counted).as("%% of batches settled off natural batching; %s", controller)
        .isLessThan(1.0);
    // probes go on (every pause doubles up to 64 epochs), and under this noise each runs all its pairs
    assertThat(100.0 * offNatural / counted).as("%% of batches off natural batching, probes included; %s", controller)
        .isLessThan(10.0);
  }
}
