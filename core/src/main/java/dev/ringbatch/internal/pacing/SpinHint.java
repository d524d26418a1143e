package dev.ringbatch.internal.pacing;


/**
 * Whether a caller on a platform thread should spin briefly before it parks for its result ({@link ItemFuture}):
 * only while the sink writes batches quickly, so that a result is usually a few hundred nanoseconds away. A park
 * and its wake-up cost a futex round trip each, tens of microseconds on a loaded machine, far more than a short
 * spin; but a spin that waits for a slow sink only takes the core from the sink and the other callers. Written by
 * whichever thread settles a batch that callers waited on (the consumer; for an async sink, the thread that
 * completed the sink's stage, several at once), read by producers when they submit.
 */
public final class SpinHint {
  /** A sink slower than this on average: callers park at once. About the spin's own length. */
  private static final long WINDOW_NANOS = 2_000;
  /** The weight of one batch in the mean, 1/8. */
  private static final int MEAN_SHIFT = 3;
  /**
   * Batches of more items than this on average: callers park at once. A caller among that many is a whole batch
   * cycle from its result, and the spins of so many take the cores the consumer needs. The batch size, not the
   * number of callers that parked, since fewer park while they spin: the rule must not feed on itself.
   */
  static final int SPINNING_BATCH = 16;

  volatile boolean worthSpinning = true;
  /** The mean write time of recent batches with waiting callers; guarded by this. */
  private long meanWriteNanos;
  /** The mean size of such batches, times 8 (fixed point); guarded by this. */
  private long meanSize8;

  /**
   * A batch of {@code size} items was settled in {@code writeNanos}, waking {@code woken} callers of which {@code
   * virtual} on virtual threads: only a batch that platform-thread callers waited on tells the next ones whether
   * to spin. Any thread that settles a batch.
   */
  public void settled(int woken, int virtual, long writeNanos, int size) {
    if (woken > virtual) {
      written(writeNanos, size);
    }
  }

  /**
   * A batch of {@code size} items that callers waited on took {@code writeNanos} in the sink. Any thread that
   * settles a batch; once per batch, so the lock costs nothing that matters.
   */
  synchronized void written(long writeNanos, int size) {
    meanWriteNanos += (Math.max(0, writeNanos) - meanWriteNanos) >> MEAN_SHIFT;
    meanSize8 += (((long) size << 3) - meanSize8) >> MEAN_SHIFT;
    boolean worth = meanWriteNanos < WINDOW_NANOS && meanSize8 <= (long) SPINNING_BATCH << 3;
    if (worth != worthSpinning) {
      worthSpinning = worth; // only on a change: every submit reads this line
    }
  }

  /** Whether a caller submitting now should spin before it parks. Any thread. */
  public boolean worthSpinning() {
    return worthSpinning;
  }
}
