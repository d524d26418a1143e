package dev.ringbatch;

import java.time.Duration;

/**
 * What {@link Batcher#close(Duration)} achieved: whether the drain finished in time, how many accepted items
 * it had to abandon, and the batcher's final counters.
 */
public final class CloseReport {

  private final boolean drained;
  private final long abandoned;
  private final Duration elapsed;
  private final BatcherStats stats;

  /** Creates a report; called by the batcher. */
  public CloseReport(boolean drained, long abandoned, Duration elapsed, BatcherStats stats) {
    this.drained = drained;
    this.abandoned = abandoned;
    this.elapsed = elapsed;
    this.stats = stats;
  }

  /** Whether every accepted item was written or failed by the sink before the timeout. */
  public boolean drained() {
    return drained;
  }

  /** Accepted items whose futures this close failed because the timeout ran out. */
  public long abandoned() {
    return abandoned;
  }

  /** How long the close took. */
  public Duration elapsed() {
    return elapsed;
  }

  /** The batcher's counters at the end of the close. */
  public BatcherStats stats() {
    return stats;
  }

  /** Items the sink wrote successfully over the batcher's life. */
  public long written() {
    return stats.written();
  }

  /** Items the sink failed over the batcher's life. */
  public long failed() {
    return stats.failed();
  }

  @Override
  public String toString() {
    return "CloseReport{drained=" + drained
        + ", written=" + written()
        + ", failed=" + failed()
        + ", abandoned=" + abandoned
        + ", elapsed=" + elapsed
        + '}';
  }
}
