package dev.ringbatch.internal.shared;

import java.util.concurrent.locks.LockSupport;

/**
 * A wait for another thread that is usually a few instructions away (a producer between its claim and its
 * publish: no user code runs there): spin first, then park, each park longer than the last up to a cap, so that
 * a thread descheduled for longer costs the waiter no core. One waiter; {@link #reset()} before each new wait.
 */
public final class Backoff {
  private final int spins;
  private final long firstParkNanos;
  private final long maxParkNanos;
  private int step;
  private long parkNanos;

  public Backoff(int spins, long firstParkNanos, long maxParkNanos) {
    this.spins = spins;
    this.firstParkNanos = firstParkNanos;
    this.maxParkNanos = maxParkNanos;
    this.parkNanos = firstParkNanos;
  }

  /**
   * Waits a little, longer than the last time once the spins are used up, and never past {@code leftNanos}.
   * Returns whether an interrupt came while parked; it is cleared (park would return at once while it is set),
   * for the caller to report or set again.
   */
  public boolean pause(long leftNanos) {
    if (step < spins) {
      step++;
      Thread.onSpinWait();
      return false;
    }
    LockSupport.parkNanos(this, Math.min(parkNanos, leftNanos));
    parkNanos = Math.min(2 * parkNanos, maxParkNanos);
    return Thread.interrupted();
  }

  /** Starts a new wait: spins first again. */
  public void reset() {
    step = 0;
    parkNanos = firstParkNanos;
  }
}
