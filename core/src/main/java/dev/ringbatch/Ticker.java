package dev.ringbatch;

/**
 * A source of nanosecond time, injectable so that tests can control the linger deadline and the timing
 * that statistics report. Only differences between two readings are meaningful.
 */
@FunctionalInterface
public interface Ticker {

  /** Returns the current time in nanoseconds from an arbitrary origin, like {@link System#nanoTime()}. */
  long read();

  /** Returns the ticker backed by {@link System#nanoTime()}. */
  static Ticker system() {
    return System::nanoTime;
  }
}
