package dev.ringbatch.internal.pacing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.Adaptive;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The adaptive limits' search against a sink that changes under the same callers (the batch size stays, the rate
 * does not) or turns heavily noisy (the rate swings, the callers have not changed), in the {@link ClosedLoop} model.
 */
class AdaptiveSinkChangeTest {
  private static final long MICROS = ClosedLoop.MICROS;

  /** A linear sink that grows a knee on demand: {@code penalty} more for every item past 1,024 in a batch. */
  private static class KneeOnDemand extends ClosedLoop {
    long penalty;

    KneeOnDemand(int callers, long fixed) {
      super(Adaptive.throughput(), callers, fixed, 500, 40 * MICROS);
    }

    @Override
    long writeTime(int n) {
      return fixed + perItem * n + penalty * Math.max(0, n - 1_024);
    }

    /** Batches from now until a cap of 1,024 or smaller is settled (at most 5,000). */
    int batchesUntilACapOf1024() {
      int batches = 0;
      while (batches < 5_000 && controller.settledSize() > 1_024) {
        cycle();
        batches++;
      }
      return batches;
    }
  }

  @Test
  void aKneeAppearingUnderTheSameCallers_isFollowedWithinAFewEpochs_notAfterAWholePause() {
    // 3,000 callers in two cohorts, c = 500 ns and no fixed cost: every cap carries about the same, every probe is
    // flat, and the pause before the next has grown to its 64 epochs. Then items past 1,024 cost 4 us more each:
    // batches stay at 1,500 (the callers set them), and carry 0.565 items/us where a cap of 1,024 carries 1.99. The
    // rate falls by more than half, which is a new regime for a sink whose cost fits: a probe comes within a few
    // epochs (reading only the batch size, the search waited out the pause: about 600 batches).
    KneeOnDemand loop = new KneeOnDemand(3_000, 0);
    loop.run(20_000);
    assertThat(loop.controller.settledSize()).as("%s", loop.controller).isEqualTo(4_096);
    loop.penalty = 4 * MICROS;
    assertThat(loop.batchesUntilACapOf1024()).as("batches until a cap of 1,024; %s", loop.controller)
        .isLessThan(250);
  }

  @Test
  void aKneeAppearingUnderAFullCapBacklog_isFollowedWithinAFewEpochs_notAfterAWholePause() {
    // Every batch full at 4,096 (callers queued in the ring), F = 100 us: 2,048 carries 4.6 % less, every probe of
    // it fails, and the pause has grown to its 64 epochs. Then the knee: 4,096 now carries 0.284 items/us, 1,024
    // carries 1.668 (5.9x). Reading only the batch size, the search waited out the pause: about 680 batches, 7 s.
    KneeOnDemand loop = new KneeOnDemand(1 << 20, 100 * MICROS);
    loop.run(20_000);
    assertThat(loop.controller.settledSize()).as("%s", loop.controller).isEqualTo(4_096);
    loop.penalty = 4 * MICROS;
    assertThat(loop.batchesUntilACapOf1024()).as("batches until a cap of 1,024; %s", loop.controller)
        .isLessThan(300);
  }

  /**
   * 10,000 callers fill every batch of a sink with a fixed cost, where a smaller cap is clearly worse (F = 500 µs,
   * c = 500 ns: 4,096 carries 1.61 items/µs, 2,048 1.34; F = 1 ms, c = 100 ns: 2.90 and 1.70). Then, or from the
   * start, one write in ten takes 20 times as long: an epoch's rate swings threefold from one to the next, far more
   * than the caps differ.
   */
  @ParameterizedTest(name = "F = {0} µs, c = {1} ns, {2} clean batches first")
  @CsvSource({"500, 500, 20000", "500, 500, 0", "1000, 100, 10000"})
  void aSinkWithAFixedCostTurningHeavilyNoisy_carriesWithinFivePercentOfTheFullCap(long fixedMicros,
      long perItemNanos, int clean) {
    ClosedLoop loop = new ClosedLoop(Adaptive.throughput(), 10_000, fixedMicros * MICROS, perItemNanos, 40 * MICROS);
    ClosedLoop full = new ClosedLoop(Adaptive.throughput(), 10_000, fixedMicros * MICROS, perItemNanos, 40 * MICROS);
    full.pinned = true;
    for (ClosedLoop model : new ClosedLoop[] {loop, full}) { // the same draws for both: one a batch
      model.run(clean);
      model.noisy = true;
      model.resetRate();
      model.run(60_000);
    }
    // The probes of smaller caps go on (their rates need no fit) and must not spend the noise under caps that carry
    // less: a swing of the rate is noise, not a new load (when it brought a probe on at once: 0.90-0.94x)
    assertThat(loop.rate() / full.rate()).as("rate against the full cap's through the noise; %s", loop.controller)
        .isGreaterThan(0.95);
  }

  @Test
  void aNoisySinkWhoseSmallerCapCarries1_6x_takesItWithinItsFirstProbes() {
    // 3,000 callers, c = 500 ns, 1 us more an item past 1,024, one write in ten 20 times as long: natural batching
    // carries 0.42 items/us through the noise, a cap of 1,024 0.69 (1.6x). One pair's log ratio scatters by about
    // 1.0, so at 12 pairs a gate of three standard errors asked for 2.5x and read this gain as flat: 4-7 seeds of 20.
    int found = 0;
    for (long seed = 1; seed <= 20; seed++) {
      SplittableRandom draws = new SplittableRandom(seed);
      var loop = new ClosedLoop(Adaptive.throughput(), 3_000, 0, 500, 40 * MICROS) {
        @Override
        long writeTime(int n) {
          long write = perItem * n + MICROS * Math.max(0, n - 1_024);
          return draws.nextInt(10) == 0 ? 20 * write : write;
        }
      };
      for (int i = 0; i < 600 && loop.controller.settledSize() > 1_024; i++) {
        loop.cycle();
      }
      found += loop.controller.settledSize() <= 1_024 ? 1 : 0;
    }
    assertThat(found).as("seeds of 20 that settle a cap carrying 1.6x within 600 batches").isGreaterThanOrEqualTo(15);
  }
}
