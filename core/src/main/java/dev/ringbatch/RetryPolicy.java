package dev.ringbatch;

import static dev.ringbatch.internal.shared.Checks.requireArgument;
import static dev.ringbatch.internal.shared.Checks.requireNonNegative;
import static java.util.Objects.requireNonNull;

import dev.ringbatch.internal.shared.Checks;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Predicate;

/**
 * When and how a batcher retries a batch whose sink threw (a whole-batch failure) before its items fail:
 * up to {@link #maxAttempts()} attempts in all, waiting an exponentially growing, jittered backoff between
 * them, only for exceptions {@link #retryOn() retryOn} accepts, and never past {@link #maxElapsed()} since
 * the first failure, so that callers still hear of a sink that stays down.
 *
 * <p>Only a whole batch is retried, and only because the sink threw: items the sink failed one by one
 * ({@link Batch#fail}) are final. A retried sink must make its write all-or-nothing (one transaction, as
 * {@link dev.ringbatch.sink.JdbcBatchSink} does: it throws only when no row of the batch was committed), so
 * that a retry never writes an item twice. A sink that may have written part of a batch throws (or fails its
 * items with) {@link OutcomeUnknownException}, which is never retried, whatever {@code retryOn} says. The
 * consumer waits out the backoff itself: the ring fills and producers meet the overflow policy.
 *
 * <pre>{@code
 * RetryPolicy retry = RetryPolicy.builder()
 *     .maxAttempts(5).initialBackoff(Duration.ofMillis(50)).maxBackoff(Duration.ofSeconds(2))
 *     .retryOn(e -> e instanceof java.sql.SQLTransientException || e instanceof java.io.IOException)
 *     .build();
 * }</pre>
 */
public final class RetryPolicy {
  private static final RetryPolicy NONE = builder().maxAttempts(1).build();

  private final int maxAttempts;
  private final Duration initialBackoff;
  private final Duration maxBackoff;
  private final double multiplier;
  private final double jitter;
  private final Duration maxElapsed;
  private final Predicate<Throwable> retryOn;

  private RetryPolicy(Builder b) {
    this.maxAttempts = b.maxAttempts;
    this.initialBackoff = b.initialBackoff;
    this.maxBackoff = b.maxBackoff;
    this.multiplier = b.multiplier;
    this.jitter = b.jitter;
    this.maxElapsed = b.maxElapsed;
    this.retryOn = b.retryOn;
  }

  /** No retries: a batch whose sink throws fails at once. The default. */
  public static RetryPolicy none() {
    return NONE;
  }

  /** Returns a builder: 3 attempts, 100 ms doubling up to 5 s with 20% jitter, within 30 s, any Exception. */
  public static Builder builder() {
    return new Builder();
  }

  /** Attempts in all, the first included; 1 means no retry. */
  public int maxAttempts() {
    return maxAttempts;
  }

  /** The wait before the first retry. */
  public Duration initialBackoff() {
    return initialBackoff;
  }

  /** The longest wait between two attempts. */
  public Duration maxBackoff() {
    return maxBackoff;
  }

  /** How much each wait grows over the previous one. */
  public double multiplier() {
    return multiplier;
  }

  /** The random spread of each wait, as a fraction: 0.2 means ±20%. */
  public double jitter() {
    return jitter;
  }

  /** No retry starts later than this after the first failure: the bound on a caller's wait for a failing sink. */
  public Duration maxElapsed() {
    return maxElapsed;
  }

  /** Which exceptions are worth a retry. */
  public Predicate<Throwable> retryOn() {
    return retryOn;
  }

  /**
   * The wait before attempt {@code attempt} (2 for the first retry), with jitter, in nanoseconds; or -1 when
   * no attempt should be made: the attempts are used up, {@code failure} is not retryable, or the wait would
   * end past {@link #maxElapsed()} ({@code elapsedNanos} since the first attempt failed).
   */
  public long backoffNanos(int attempt, Throwable failure, long elapsedNanos) {
    if (attempt > maxAttempts || failure instanceof VirtualMachineError || OutcomeUnknownException.forbidsRetry(failure)
        || !retryOn.test(failure)) {
      return -1;
    }
    // Durations may be as long as BatcherConfig.NO_TIMEOUT: saturate instead of overflowing toNanos().
    double base = Checks.saturatedNanos(initialBackoff) * Math.pow(multiplier, attempt - 2);
    double cap = Checks.saturatedNanos(maxBackoff);
    double capped = Math.min(base, cap);
    double spread = jitter == 0 ? 0 : capped * jitter * (2 * ThreadLocalRandom.current().nextDouble() - 1);
    // capped again after the jitter: maxBackoff is the longest wait (at the cap the jitter only shortens it)
    long wait = Math.max(0, (long) Math.min(capped + spread, cap)); // past Long.MAX_VALUE casts to Long.MAX_VALUE
    return wait > Checks.saturatedNanos(maxElapsed) - Math.max(0, elapsedNanos) ? -1 : wait;
  }

  @Override
  public String toString() {
    return maxAttempts == 1 ? "RetryPolicy{none}" : "RetryPolicy{maxAttempts=" + maxAttempts
        + ", initialBackoff=" + initialBackoff + ", maxBackoff=" + maxBackoff + ", multiplier=" + multiplier
        + ", jitter=" + jitter + ", maxElapsed=" + maxElapsed + '}';
  }

  /** Builds a {@link RetryPolicy}; every setter checks its argument. */
  public static final class Builder {
    private int maxAttempts = 3;
    private Duration initialBackoff = Duration.ofMillis(100);
    private Duration maxBackoff = Duration.ofSeconds(5);
    private double multiplier = 2.0;
    private double jitter = 0.2;
    private Duration maxElapsed = Duration.ofSeconds(30);
    private Predicate<Throwable> retryOn = e -> e instanceof Exception;

    private Builder() {}

    /** @throws IllegalArgumentException unless {@code maxAttempts} is from 1 to 100 */
    public Builder maxAttempts(int maxAttempts) {
      requireArgument(maxAttempts >= 1 && maxAttempts <= 100,
          "maxAttempts must be from 1 to 100 but was %s", maxAttempts);
      this.maxAttempts = maxAttempts;
      return this;
    }

    /** @throws IllegalArgumentException if {@code initialBackoff} is negative */
    public Builder initialBackoff(Duration initialBackoff) {
      this.initialBackoff = requireNonNegative("initialBackoff", initialBackoff);
      return this;
    }

    /** @throws IllegalArgumentException if {@code maxBackoff} is negative */
    public Builder maxBackoff(Duration maxBackoff) {
      this.maxBackoff = requireNonNegative("maxBackoff", maxBackoff);
      return this;
    }

    /** @throws IllegalArgumentException unless {@code multiplier} is from 1 to 10 */
    public Builder multiplier(double multiplier) {
      requireArgument(multiplier >= 1 && multiplier <= 10, "multiplier must be from 1 to 10 but was %s", multiplier);
      this.multiplier = multiplier;
      return this;
    }

    /** @throws IllegalArgumentException unless {@code jitter} is from 0 to 1 */
    public Builder jitter(double jitter) {
      requireArgument(jitter >= 0 && jitter <= 1, "jitter must be from 0 to 1 but was %s", jitter);
      this.jitter = jitter;
      return this;
    }

    /** @throws IllegalArgumentException if {@code maxElapsed} is negative */
    public Builder maxElapsed(Duration maxElapsed) {
      this.maxElapsed = requireNonNegative("maxElapsed", maxElapsed);
      return this;
    }

    /**
     * Sets which failures to retry; {@link VirtualMachineError}s and {@link OutcomeUnknownException}s never are
     * (the batch may be partly written: a retry could duplicate it), unless the sink says its writes are
     * idempotent ({@link OutcomeUnknownException#isSafeToRetry()}).
     */
    public Builder retryOn(Predicate<Throwable> retryOn) {
      this.retryOn = requireNonNull(retryOn, "retryOn");
      return this;
    }

    /** @throws IllegalStateException if {@code maxBackoff} is below {@code initialBackoff} */
    public RetryPolicy build() {
      Checks.requireState(maxBackoff.compareTo(initialBackoff) >= 0,
          "maxBackoff (%s) must not be below initialBackoff (%s)", maxBackoff, initialBackoff);
      return new RetryPolicy(this);
    }
  }
}
