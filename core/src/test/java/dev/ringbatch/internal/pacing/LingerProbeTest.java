package dev.ringbatch.internal.pacing;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The sequential test of one probe: when it has seen enough pairs to decide on. */
class LingerProbeTest {
  private static final LatencyHistogram NO_ROUND_TRIPS = new LatencyHistogram();

  /**
   * A probe fed one pair of epochs per ratio (the candidate's rate over the settled one's), in the order of arms it
   * asks for, until it is decided or the ratios run out.
   */
  private static LingerProbe probeOf(double... candidateOverSettled) {
    LingerProbe probe = new LingerProbe();
    probe.start(1);
    for (double ratio : candidateOverSettled) {
      for (int epoch = 0; epoch < 2; epoch++) {
        long items = probe.arm() == LingerProbe.CANDIDATE ? Math.round(1_000_000 * ratio) : 1_000_000;
        if (probe.record(items, 1_000_000_000L, NO_ROUND_TRIPS)) {
          assertThat(epoch).as("a probe is decided only as a pair ends").isEqualTo(1);
          return probe;
        }
      }
    }
    return probe;
  }

  @Test
  void aCandidateSteadilyFivePercentFaster_isDecidedInTheFewestPairs() {
    LingerProbe probe = probeOf(1.05, 1.051, 1.049, 1.05, 1.05, 1.05);
    assertThat(probe.pairs()).isEqualTo(LingerProbe.MIN_PAIRS);
    assertThat(probe.meanLogRatio()).isGreaterThan(LingerProbe.LOG_GAIN);
  }

  @Test
  void aCandidateWhosePairsSwingBothWays_runsToTheLastPair() {
    // pairs swinging +50 % / -30 %: a mean log ratio of +2.4 %, with a standard error of 11 %: never three clear
    double[] ratios = new double[LingerProbe.MAX_PAIRS + 4];
    for (int i = 0; i < ratios.length; i++) {
      ratios[i] = i % 2 == 0 ? 1.5 : 0.7;
    }
    LingerProbe probe = probeOf(ratios);
    assertThat(probe.pairs()).isEqualTo(LingerProbe.MAX_PAIRS);
  }

  @Test
  void aCandidateClearlyWorse_endsTheProbeAfterTwoPairs() {
    LingerProbe probe = probeOf(0.8, 0.85, 0.8, 0.8);
    assertThat(probe.pairs()).isEqualTo(2);
    assertThat(probe.meanLogRatio()).isNegative();
  }
}
