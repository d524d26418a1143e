package dev.ringbatch.internal.pacing;

import java.util.Arrays;

/**
 * The one axis {@link AdaptiveLimits} searches: how much a batch gathers, as rungs of (size limit, linger). From
 * the bottom: smaller caps without a linger (the cap halved, down to a sixteenth; throughput mode only), then
 * {@link #natural()} (the cap, no linger), then the lingers (10 µs doubling, the maximum linger last) at the cap.
 * Each step up gathers more, each step down less, so one probe machinery finds a linger where waiting pays and a
 * smaller cap where a large batch itself costs (a burst of completions that the callers cannot absorb, say).
 * Immutable.
 */
final class GatheringLadder {
  /** The first linger rung; ten of it is how soon after a write a batch may still linger. */
  static final long FIRST_LINGER_NANOS = 10_000;
  /** The smallest cap a size rung goes down to: smaller batches than this are not worth a rung. */
  private static final int MIN_SIZE = 16;
  private static final int MAX_HALVINGS = 4;

  private final int[] sizes;
  private final long[] lingers;
  private final int natural;

  /**
   * A ladder for a cap of {@code maxSize} items and lingers up to {@code maxLingerNanos}; with {@code smallerSizes}
   * it has rungs below the cap too.
   */
  GatheringLadder(int maxSize, long maxLingerNanos, boolean smallerSizes) {
    int halvings = 0;
    while (smallerSizes && halvings < MAX_HALVINGS && maxSize >> (halvings + 1) >= MIN_SIZE) {
      halvings++;
    }
    long[] up = new long[40];
    int n = 0;
    for (long l = FIRST_LINGER_NANOS; l < maxLingerNanos && n < up.length - 1; l *= 2) {
      up[n++] = l;
    }
    if (maxLingerNanos > 0) {
      up[n++] = maxLingerNanos;
    }
    natural = halvings;
    sizes = new int[halvings + 1 + n];
    lingers = new long[sizes.length];
    for (int i = 0; i < sizes.length; i++) {
      sizes[i] = i < natural ? maxSize >> (natural - i) : maxSize;
      lingers[i] = i <= natural ? 0 : up[i - natural - 1];
    }
  }

  /** The rung of natural batching: the full cap and no linger. */
  int natural() {
    return natural;
  }

  /** The highest rung: the maximum linger. */
  int top() {
    return sizes.length - 1;
  }

  int size(int rung) {
    return sizes[rung];
  }

  long lingerNanos(int rung) {
    return lingers[rung];
  }

  /** A rung for the controller's log: "size 1024", "natural batching" or "linger 20 µs". */
  String describe(int rung) {
    return rung < natural ? "size " + sizes[rung]
        : rung == natural ? "natural batching" : "linger " + AdaptiveLimits.micros(lingers[rung]);
  }

  @Override
  public String toString() {
    return "GatheringLadder{sizes " + Arrays.toString(sizes) + ", lingers " + Arrays.toString(lingers) + '}';
  }
}
