package dev.ringbatch.internal.pacing;

import java.util.Arrays;

/**
 * One probe of {@link AdaptiveLimits}: a candidate linger rung measured against the settled one in epochs
 * interleaved B, A, A, B, ... (B the candidate: a load that drifts linearly weighs both alike), each pair of epochs
 * giving one paired log ratio of the two rates, and a sequential test on those ratios. Consumer thread only (its
 * controller's); no allocation.
 */
final class LingerProbe {
  /** The arm that measures the candidate rung, and the one that measures the settled rung. */
  static final int CANDIDATE = 1;
  static final int SETTLED = 0;
  /** The gain a candidate must show, paired and in all, to be taken. */
  static final int GAIN_PERCENT = 2;
  static final double LOG_GAIN = Math.log(1 + GAIN_PERCENT / 100.0);
  static final int MIN_PAIRS = 4;
  static final int MAX_PAIRS = 12;
  private static final double LOG_CLEARLY_WORSE = Math.log(0.9);
  /** The arm of each epoch of a probe, in turn. */
  private static final int[] ARMS = {CANDIDATE, SETTLED, SETTLED, CANDIDATE};

  /** 0 between probes; from 1 during one, the epoch it is in. */
  private int epoch;
  private int candidate;
  private final long[] armItems = new long[2];
  private final long[] armNanos = new long[2];
  private final LatencyHistogram[] armLatency = {new LatencyHistogram(), new LatencyHistogram()};
  /** The last epoch's rate of each arm, and the paired log ratios (candidate over settled) so far. */
  private final double[] epochRate = new double[2];
  private int pairs;
  private double pairSum;
  private double pairSumSquares;
  /** The best paired log ratio so far: if even it lost a tenth, the probe ends early. */
  private double bestPair;

  boolean running() {
    return epoch != 0;
  }

  /** Starts a probe of rung {@code candidate}; its first epoch measures the candidate. */
  void start(int candidate) {
    this.candidate = candidate;
    epoch = 1;
  }

  int candidate() {
    return candidate;
  }

  /** The pairs of epochs recorded so far. */
  int pairs() {
    return pairs;
  }

  /** The arm the epoch under way measures: {@link #CANDIDATE} or {@link #SETTLED}. */
  int arm() {
    return ARMS[(epoch - 1) % ARMS.length];
  }

  /**
   * Records the epoch that just ended ({@code items} in {@code nanos}, with its round trips); returns whether the
   * test is decided. If not, the probe moves on to its next epoch ({@link #arm()}).
   */
  boolean record(long items, long nanos, LatencyHistogram latency) {
    int arm = arm();
    armItems[arm] += items;
    armNanos[arm] += nanos;
    armLatency[arm].addAll(latency);
    epochRate[arm] = (double) items / nanos;
    if (epoch % 2 == 0) { // a pair ended: one more paired ratio of the candidate's rate to the settled one's
      double logRatio = Math.log(Math.max(epochRate[CANDIDATE], 1e-12) / Math.max(epochRate[SETTLED], 1e-12));
      pairs++;
      pairSum += logRatio;
      pairSumSquares += logRatio * logRatio;
      bestPair = pairs == 1 ? logRatio : Math.max(bestPair, logRatio);
      if (decided()) {
        return true;
      }
    }
    epoch++;
    return false;
  }

  /**
   * Whether the probe has seen enough pairs: at least {@value #MIN_PAIRS}, and the mean log ratio three standard
   * errors away from the gain asked for, or {@value #MAX_PAIRS} pairs in all (the mean then decides: a gate of three
   * standard errors there too missed real gains of 5 % under a few percent of jitter, and of 1.6x under a noisy
   * sink's); or two pairs that both lost a tenth.
   */
  private boolean decided() {
    if (pairs >= 2 && bestPair < LOG_CLEARLY_WORSE) {
      return true; // every pair so far lost a tenth or more: no need to pay for more
    }
    if (pairs < MIN_PAIRS) {
      return false;
    }
    if (pairs >= MAX_PAIRS) {
      return true;
    }
    double mean = pairSum / pairs;
    double variance = Math.max(0, pairSumSquares / pairs - mean * mean) * pairs / (pairs - 1);
    double standardError = Math.sqrt(variance / pairs);
    return Math.abs(mean - LOG_GAIN) > 3 * standardError; // about 95 % with so few pairs (Student's t)
  }

  /** The mean paired log ratio, candidate over settled. */
  double meanLogRatio() {
    return pairSum / pairs;
  }

  /** Items per nanosecond of {@code arm} over the whole probe. */
  double rate(int arm) {
    return (double) armItems[arm] / Math.max(1, armNanos[arm]);
  }

  /** The p99 round trip of {@code arm} over the whole probe (latency mode). */
  long p99(int arm) {
    return armLatency[arm].valueAt(0.99);
  }

  /** Ends the probe, decided or not, and forgets its measurements. */
  void end() {
    epoch = 0;
    pairs = 0;
    pairSum = 0;
    pairSumSquares = 0;
    Arrays.fill(armItems, 0);
    Arrays.fill(armNanos, 0);
    armLatency[SETTLED].clear();
    armLatency[CANDIDATE].clear();
  }
}
