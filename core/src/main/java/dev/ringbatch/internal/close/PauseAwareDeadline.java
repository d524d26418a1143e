package dev.ringbatch.internal.close;

import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * A close's grace that a pause of the whole process does not use up. The closing thread checks it between short
 * waits; a gap between two checks far longer than any such wait (a GC pause, a descheduled JVM, a suspended VM) is
 * a pause in which the threads the grace is for could not run either, so the deadline moves by that gap, up to
 * {@link #MAX_EXTENSION_NANOS} in all: a closing thread starved again and again still returns. Closing thread only.
 */
final class PauseAwareDeadline {
  /** Longer than a short wait can take, coarse timers included (Windows' 15.6 ms). */
  static final long PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
  static final long MAX_EXTENSION_NANOS = TimeUnit.SECONDS.toNanos(1);

  /** A test's clock, or null: {@link System#nanoTime()}, called directly, as the caller's deadline was computed. */
  private final @Nullable LongSupplier clock;
  private long deadline;
  private long lastCheck;
  private long extended;

  /** A grace that ends at {@code deadline}, in {@link System#nanoTime()} terms. */
  PauseAwareDeadline(long deadline) {
    this(deadline, null);
  }

  PauseAwareDeadline(long deadline, @Nullable LongSupplier clock) {
    this.clock = clock;
    this.deadline = deadline;
    this.lastCheck = now();
  }

  private long now() {
    LongSupplier c = clock;
    return c == null ? System.nanoTime() : c.getAsLong();
  }

  /** Whether the deadline has passed; to be called between waits shorter than {@link #PAUSE_NANOS}. */
  boolean passed() {
    long now = now();
    long gap = now - lastCheck;
    lastCheck = now;
    if (gap > PAUSE_NANOS && extended < MAX_EXTENSION_NANOS) {
      long by = Math.min(gap, MAX_EXTENSION_NANOS - extended);
      deadline += by;
      extended += by;
    }
    return now - deadline >= 0;
  }
}
