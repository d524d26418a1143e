package dev.ringbatch.internal.pacing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.Adaptive;
import dev.ringbatch.BatchLimits;
import java.time.Duration;
import java.util.SplittableRandom;
import java.util.function.IntPredicate;
import org.junit.jupiter.api.Test;

/**
 * What the controller counts as idle, in simulated time: a gap between writes over 1 ms after a batch that nothing was
 * published behind (the load paused) restarts the epoch, so that neither arm of a probe counts it, however long the
 * writes are; a gap after a batch that callers were already coming back behind is their return, and counts (else
 * thousands of callers in one batch keep every epoch from completing, and the controller never moves).
 */
class AdaptiveIdleGapTest {
  private static final long MICROS = 1_000;

  @Test
  void callersComingBackForMilliseconds_areNotIdle_theControllerFindsTheSmallerCapThatOverlapsThem() {
    // 10,000 callers under a cap of 16,384: with a cap above the callers they all go in one batch (c = 500 ns an
    // item, 200 ns an item to wake them) and the consumer then waits 4 ms while they come back (400 ns each; the
    // first are back while the last are woken): 10,000 calls per 11 ms. Under a smaller cap the callers not in the
    // batch come back while it is written: 1.4M calls/s.
    int callers = 10_000;
    AdaptiveLimits controller = throughputUnder(16_384);
    SplittableRandom random = new SplittableRandom(7);
    long now = 1_000_000_000L;
    long end = now + 10_000_000_000L;
    long items = 0;
    while (now < end) {
      int cap = controller.limits().maxBatchSize();
      boolean lockstep = cap >= callers;
      now += lockstep ? 400L * callers : 2 * MICROS;
      long linger = controller.limits().linger().toNanos();
      if (linger > 0 && controller.mayLinger(now)) {
        now += linger; // gathers nobody more: every caller that can be in this batch already is
      }
      int n = Math.min(cap, callers);
      long start = now;
      long write = Math.round(500L * n * (0.98 + 0.04 * random.nextDouble()));
      now += write + 200L * n; // the write, then the callers woken
      controller.writeEnded(n, start, write, now, true);
      items += start >= end - 1_000_000_000L ? n : 0;
    }
    assertThat(controller.settledSize()).as("the cap the search settled on; %s", controller).isLessThan(callers);
    assertThat(items).as("calls in the last simulated second; %s", controller).isGreaterThan(1_200_000);
  }

  @Test
  void aLoadPausingLongerThanAMillisecondButLessThanAWrite_settlesOnALinger_doesNotFlipBetweenTwo() {
    // AdaptiveLimitsTest's closed loop: 100 callers in two cohorts, 95 % back within 40 µs, F = 2 ms, c = 500 ns:
    // 40 µs carries the most, 80 µs gathers next to no one more. Every 14 batches the load pauses for 1.5 ms. Counted,
    // the pauses fall in and out of phase with probe epochs of 10 batches, and each probe "gains" both ways.
    AdaptiveLimits controller = throughputUnder(4096);
    int callers = 100;
    int half = callers / 2;
    long origin = 1_000_000_000L;
    long now = origin;
    int moves = 0;
    Duration last = null;
    for (int batch = 1; now < origin + 20_000_000 * MICROS; batch++) {
      long linger = controller.limits().linger().toNanos();
      now += 2 * MICROS; // the first caller back is taken
      int n = half;
      if (linger > 0 && controller.mayLinger(now)) {
        n += (int) Math.round((callers - half) * (1 - Math.exp(-3.0 * linger / (40 * MICROS))));
        now += linger;
      }
      long start = now;
      long write = 2_000 * MICROS + 500L * n;
      now += write;
      boolean pause = batch % 14 == 0;
      controller.writeEnded(n, start, write, now, !pause);
      now += pause ? 1_500 * MICROS : 0;
      Duration settled = controller.settledLinger();
      moves += now > origin + 10_000_000 * MICROS && last != null && !settled.equals(last) ? 1 : 0;
      last = settled;
    }
    assertThat(moves).as("moves of the settled linger in the last 10 s; %s", controller).isZero();
    assertThat(controller.settledLinger()).as("%s", controller).isEqualTo(Duration.ofNanos(40 * MICROS));
  }

  @Test
  void pausesShorterThanASlowWrite_inPhaseWithTheProbes_doNotTurnThemAgainstTheLingerThatPays() {
    // every 80th batch: 8 probe epochs of 10 batches, so a pause falls in the same arm of every probe
    assertThat(lowestSettledLinger(i -> i % 80 == 79)).isGreaterThanOrEqualTo(320 * MICROS);
  }

  @Test
  void pausesShorterThanASlowWrite_atRandom_doNotTurnProbesAgainstTheLingerThatPays() {
    for (long seed = 1; seed <= 8; seed++) {
      SplittableRandom random = new SplittableRandom(seed);
      assertThat(lowestSettledLinger(i -> random.nextInt(20) == 0)).as("seed %s", seed)
          .isGreaterThanOrEqualTo(320 * MICROS);
    }
  }

  /** A controller in throughput mode under a cap of {@code maxBatchSize} items, no byte limit, a sync sink. */
  private static AdaptiveLimits throughputUnder(int maxBatchSize) {
    return new AdaptiveLimits(Adaptive.throughput(),
        BatchLimits.of(maxBatchSize, BatchLimits.NO_BYTE_LIMIT, Duration.ZERO), false);
  }

  /**
   * F = 5 ms, c = 500 ns, 10 callers in two cohorts back within 1 ms: a linger of 640 µs to 1 ms gathers the other
   * cohort and carries ~1.63 items/ms, natural batching or 40 µs ~1.1. After each batch {@code pausesAfter} picks,
   * every caller pauses for 4.5 ms, less than one write: ~10 % of an epoch of 8 writes, were it counted. Returns the
   * lowest settled linger from the 10th simulated second to the 60th.
   */
  private static long lowestSettledLinger(IntPredicate pausesAfter) {
    AdaptiveLimits controller = throughputUnder(4096);
    long origin = 1_000_000_000L;
    long now = origin;
    long lowest = Long.MAX_VALUE;
    for (int i = 0; now - origin < 60_000_000_000L; i++) {
      now += 2 * MICROS; // the first caller back is taken
      long linger = controller.limits().linger().toNanos();
      int n = 5; // one cohort
      if (linger > 0 && controller.mayLinger(now)) {
        n += (int) Math.round(5 * (1 - Math.exp(-3.0 * linger / 1_000_000)));
        now += linger;
      }
      long start = now;
      long write = 5_000 * MICROS + 500L * n;
      now += write;
      boolean pause = pausesAfter.test(i);
      controller.writeEnded(n, start, write, now, !pause);
      now += pause ? 4_500 * MICROS : 0;
      if (now - origin > 10_000_000_000L) {
        lowest = Math.min(lowest, controller.settledLinger().toNanos());
      }
    }
    return lowest;
  }
}
