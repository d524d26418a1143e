package dev.ringbatch.internal.consume;

import dev.ringbatch.internal.pacing.AdaptiveLimits;
import dev.ringbatch.internal.shared.GuardedStatsRecorders;
import java.util.Arrays;

/**
 * How long the items of one {@link PendingBatch} waited, from their publish stamp to their batch's write starting:
 * the stamps, gathered while the batch fills, and the report to the recorders that asked for item waits. Written
 * on the consumer thread while the batch fills and when its write starts; read by the party that completes the
 * batch, after the settle that hands the batch over to it.
 */
final class BatchWaits {
  private long[] stamps = new long[16];
  /** The batch index of each stamped item, ascending: items are added, and stamped, in order. */
  private int[] indices = new int[16];
  private long[] waits = new long[16];
  private int stamped;
  private long sum;
  private long oldest;
  private long writeStart;
  private boolean writeStarted;

  /** Notes the publish stamp of the batch's item {@code index}. */
  void stamp(long stamp, int index) {
    if (stamped == stamps.length) {
      stamps = Arrays.copyOf(stamps, 2 * stamps.length);
      indices = Arrays.copyOf(indices, stamps.length);
    }
    indices[stamped] = index;
    if (stamped == 0 || stamp - oldest < 0) {
      oldest = stamp;
    }
    stamps[stamped++] = stamp;
    sum += stamp; // wraps harmlessly: only differences of sums are used
  }

  /** Notes when the sink got the batch, if any item was stamped. */
  void writeStarting(long now) {
    if (stamped != 0) {
      writeStart = now;
      writeStarted = true;
    }
  }

  /** Whether {@link #report} has something to report: stamped items whose write started. */
  boolean hasWaits() {
    return writeStarted;
  }

  /** Tells the recorders how long the stamped items waited: the sum and the longest, then each item's wait. */
  void report(GuardedStatsRecorders recorders) {
    long total = stamped * writeStart - sum;
    recorders.recordItemWaits(stamped, Math.max(0, total), Math.max(0, writeStart - oldest));
    if (recorders.timesEachItemWait()) {
      if (waits.length < stamped) {
        waits = new long[stamps.length];
      }
      for (int i = 0; i < stamped; i++) {
        waits[i] = Math.max(0, writeStart - stamps[i]);
      }
      recorders.recordEachItemWait(waits, stamped);
    }
  }

  /** How long item {@code index} waited until its batch's write started, or -1 if that was not measured. */
  long waitOf(int index) {
    int at = writeStarted ? Arrays.binarySearch(indices, 0, stamped, index) : -1;
    return at < 0 ? -1 : Math.max(0, writeStart - stamps[at]);
  }

  /** Copies the stamps into the adaptive limits' array; returns how many there are. */
  int copyStamps(AdaptiveLimits into) {
    if (stamped == 0) {
      return 0;
    }
    System.arraycopy(stamps, 0, into.stampsFor(stamped), 0, stamped);
    return stamped;
  }

  /** Forgets the batch's stamps. */
  void clear() {
    if (stamped != 0) {
      stamped = 0;
      sum = 0;
      writeStarted = false;
    }
  }
}
