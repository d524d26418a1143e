package dev.ringbatch.internal.pacing;

import java.util.Arrays;

/**
 * Round trips counted in log-linear buckets (16 per doubling, at most 6 % apart, from 1 µs to about 17 s), for the
 * adaptive limits' streaming p99 ({@link AdaptiveLimits}). No allocation once built. Consumer thread only.
 */
final class LatencyHistogram {
  private static final int SUB_BITS = 4;
  private static final int SUB = 1 << SUB_BITS;
  /** Values are counted in units of 1,024 ns. */
  private static final int UNIT_SHIFT = 10;
  private static final int OCTAVES = 24;
  private final long[] counts = new long[(OCTAVES + 1) * SUB];
  private long total;

  /** Counts one round trip of {@code nanos}. */
  void add(long nanos) {
    counts[index(Math.max(0, nanos) >>> UNIT_SHIFT)]++;
    total++;
  }

  /** Adds every count of {@code other}. */
  void addAll(LatencyHistogram other) {
    for (int i = 0; i < counts.length; i++) {
      counts[i] += other.counts[i];
    }
    total += other.total;
  }

  long count() {
    return total;
  }

  /** The value at {@code quantile} (0 to 1), as the top of its bucket in nanoseconds; 0 when empty. */
  long valueAt(double quantile) {
    if (total == 0) {
      return 0;
    }
    long rank = (long) Math.ceil(quantile * total);
    long seen = 0;
    for (int i = 0; i < counts.length; i++) {
      seen += counts[i];
      if (seen >= rank) {
        return upperBound(i) << UNIT_SHIFT;
      }
    }
    return upperBound(counts.length - 1) << UNIT_SHIFT;
  }

  void clear() {
    if (total != 0) {
      Arrays.fill(counts, 0);
      total = 0;
    }
  }

  /** Values 0..15 get a bucket each; from 16 on, each doubling is split into 16. */
  private static int index(long units) {
    if (units < SUB) {
      return (int) units;
    }
    int octave = 63 - Long.numberOfLeadingZeros(units); // >= SUB_BITS
    if (octave >= OCTAVES + SUB_BITS - 1) {
      return (OCTAVES + 1) * SUB - 1;
    }
    int sub = (int) (units >>> (octave - SUB_BITS)) & (SUB - 1);
    return (octave - SUB_BITS + 1) * SUB + sub;
  }

  /** The largest value (in units) of bucket {@code index}. */
  private static long upperBound(int index) {
    if (index < SUB) {
      return index;
    }
    int octave = index / SUB - 1 + SUB_BITS;
    int sub = index % SUB;
    long width = 1L << (octave - SUB_BITS);
    return ((long) (SUB + sub) << (octave - SUB_BITS)) + width - 1;
  }
}
