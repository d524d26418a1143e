package dev.ringbatch.internal.pacing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.Adaptive;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The adaptive limits' search against a sink that changes under the same callers (the batch size stays, the rate
 * does not) or is noisy (the rate swings, the callers have not changed), in the {@link ClosedLoop} model.
 */
class AdaptiveSinkChangeTest {
  private static final long MICROS = ClosedLoop.MICROS;

  /**
   * c = 500 ns; items past 1,024 in a batch cost {@code penalty} more each once it is set (and past 2,048
   * {@code penaltyPast2048}); every {@code period}-th write takes {@code times} as long (a sink that flushes every
   * few writes: a buffered writer, a group commit).
   */
  private static class KneeOnDemand extends ClosedLoop {
    long penalty;
    long penaltyPast2048;
    int period;
    long times = 1;
    private int writes;

    KneeOnDemand(int callers, long fixed) {
      super(Adaptive.throughput(), callers, fixed, 500, 40 * MICROS);
    }

    @Override
    long writeTime(int n) {
      long write = fixed + perItem * n + penalty * Math.max(0, n - 1_024) + penaltyPast2048 * Math.max(0, n - 2_048);
      return period > 0 && ++writes % period == 0 ? times * write : write;
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
    // 3,000 callers in two cohorts, no fixed cost: every cap carries about the same, every probe is flat, and the
    // pause before the next has grown to its 64 epochs. Then items past 1,024 cost 4 us more each: batches stay at
    // 1,500 (the callers set them), and carry 0.565 items/us where a cap of 1,024 carries 1.99. The rate falls by
    // more than half: a probe comes within a few epochs (reading only the batch size: about 600 batches).
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
   * 3,000 callers, c = 500 ns, and a knee of {@code penalty} an item past 1,024 that appears after 20,000 + 8 j
   * batches, j = 0 ... 79: at every phase of the 64-epoch pause. Per phase, the batches until a cap of 1,024 is
   * settled.
   */
  private static int[] batchesToFollowAKneeAtEveryPhase(long fixed, int period, long times, long penalty) {
    return batchesToFollowAtEveryPhase(() -> {
      KneeOnDemand loop = new KneeOnDemand(3_000, fixed);
      loop.period = period;
      loop.times = times;
      return loop;
    }, 4_096, loop -> loop.penalty = penalty);
  }

  /** Per phase of the pause: a new model, then {@code change} after 20,000 + 8 j batches once it settled. */
  private static int[] batchesToFollowAtEveryPhase(Supplier<KneeOnDemand> model, int settled,
      Consumer<KneeOnDemand> change) {
    int[] batches = new int[80];
    for (int phase = 0; phase < batches.length; phase++) {
      KneeOnDemand loop = model.get();
      loop.run(20_000 + 8 * phase);
      assertThat(loop.controller.settledSize()).as("before the change; %s", loop.controller).isEqualTo(settled);
      change.accept(loop);
      batches[phase] = loop.batchesUntilACapOf1024();
    }
    return batches;
  }

  @Test
  void aSinkThatFlushesEveryEighthWrite_followsAKnee_atEveryPhaseOfThePause() {
    // F = 200 us, every 8th write 20 times as long (a flush): the fit of F + c * n is noisy in every epoch, yet every
    // epoch of 8 batches holds one flush, and the rate is as steady as a clean sink's. The knee (4 us an item)
    // cuts it to 0.3x; a cap of 1,024 carries 3x. Reading the rate only while the fit was reliable, the search
    // waited out the pause: up to 598 batches.
    int[] batches = batchesToFollowAKneeAtEveryPhase(200 * MICROS, 8, 20, 4 * MICROS);
    assertThat(Arrays.stream(batches).max().orElseThrow()).as("worst of 80 phases: %s", Arrays.toString(batches))
        .isLessThan(300);
  }

  @Test
  void aSinkSlowingBelowHalf_isFollowed_evenWhenAProbeEndsWhileTheRateIsFalling() {
    // No fixed cost; the knee (2 us an item) cuts the rate to 0.44x, a cap of 1,024 carries 2.3x. The smoothed rate
    // takes ~17 epochs to fall under half; a probe that the pause starts meanwhile and that does not move must leave
    // the change counting (when it reset the reference to the half-moved average, the rest of the fall was under 2x,
    // and 15 phases in 80 waited out a whole pause)
    int[] batches = batchesToFollowAKneeAtEveryPhase(0, 0, 1, 2 * MICROS);
    assertThat(Arrays.stream(batches).filter(b -> b > 600).count())
        .as("phases of 80 that wait out a whole pause: %s", Arrays.toString(batches)).isLessThanOrEqualTo(4);
    assertThat(Arrays.stream(batches).average().orElseThrow()).as("mean batches of 80 phases").isLessThan(250);
  }

  @Test
  void aSinkSlowingBelowHalf_afterTheSearchMovedToASmallerCap_isFollowedAtEveryPhaseOfThePause() {
    // Every batch full (callers queued in the ring), F = 100 us, 0.5 us more an item past 2,048: the search moves to
    // 2,048, 1.41x what 4,096 carries. Then 1.5 us more an item past 1,024: 2,048 carries 2.4x less, 1,024 2.2x
    // more. The rate is compared with the new rung's from the move on (compared with the old rung's, held since
    // before the probe, the fall had to reach 2.8x: 46 phases in 80 waited out a whole pause, up to 1,158 batches).
    int[] batches = batchesToFollowAtEveryPhase(() -> {
      KneeOnDemand loop = new KneeOnDemand(1 << 20, 100 * MICROS);
      loop.penaltyPast2048 = 500;
      return loop;
    }, 2_048, loop -> loop.penalty = 1_500);
    assertThat(Arrays.stream(batches).filter(b -> b > 600).count())
        .as("phases of 80 that wait out a whole pause: %s", Arrays.toString(batches)).isZero();
    assertThat(Arrays.stream(batches).average().orElseThrow()).as("mean batches of 80 phases").isLessThan(250);
  }

  /**
   * 10,000 callers fill every batch of a sink with a fixed cost, where a smaller cap is clearly worse (F = 500 µs,
   * c = 500 ns: 4,096 carries 1.61 items/µs, 2,048 1.34; F = 1 ms, c = 100 ns: 2.90 and 1.70). Then, or from the
   * start, one write in ten takes 20 times as long: an epoch's rate swings threefold from one to the next, far more
   * than the caps differ. Ten draws of the noise; the full cap pinned through the same draws.
   */
  @ParameterizedTest(name = "F = {0} µs, c = {1} ns, {2} clean batches first")
  @CsvSource({"500, 500, 20000", "500, 500, 0", "1000, 100, 10000"})
  void aSinkWithAFixedCostTurningHeavilyNoisy_carriesNearlyWhatTheFullCapDoes(long fixedMicros, long perItemNanos,
      int clean) {
    double sum = 0;
    for (long seed = 1; seed <= 10; seed++) {
      double[] rates = new double[2];
      for (int pinned = 0; pinned < 2; pinned++) {
        SplittableRandom draws = new SplittableRandom(seed);
        var loop = new ClosedLoop(Adaptive.throughput(), 10_000, fixedMicros * MICROS, perItemNanos, 40 * MICROS) {
          boolean noise;

          @Override
          long writeTime(int n) {
            long write = super.writeTime(n);
            return noise && draws.nextInt(10) == 0 ? 20 * write : write;
          }
        };
        loop.pinned = pinned == 1;
        loop.run(clean);
        loop.noise = true;
        loop.resetRate();
        loop.run(60_000);
        rates[pinned] = loop.rate();
      }
      sum += rates[0] / rates[1];
    }
    // The probes of smaller caps go on (their rates need no fit) and must not spend the noise under caps that carry
    // less: a swing of the rate is noise, not a new load (when it brought a probe on at once: 0.89-0.94x)
    assertThat(sum / 10).as("mean over ten draws of the rate against the full cap's").isGreaterThan(0.935);
  }

  @Test
  void aNoisySinkWhoseSmallerCapCarries1_6x_takesItWithinItsFirstProbes() {
    // 3,000 callers, c = 500 ns, 1 us more an item past 1,024, one write in ten 20 times as long: natural batching
    // carries 0.42 items/us through the noise, a cap of 1,024 0.69 (1.6x). One pair's log ratio scatters by about
    // 1.0, so at 12 pairs a gate of three standard errors asked for 2.5x and read this gain as flat: 4-9 seeds of 20.
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
