package dev.ringbatch;

import static dev.ringbatch.internal.shared.Checks.requireNonNegative;
import static dev.ringbatch.internal.shared.Checks.requirePositive;

import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Limits that tune themselves: the batcher chooses its linger and its batch size from what it measures, instead
 * of a value guessed once. Choose the mode with {@link BatcherConfig.Builder#adaptive}; a config
 * given no linger and no limits gets {@link #throughput()}.
 *
 * <ul>
 *   <li>{@link #throughput()}: the most items per second. The batcher lingers only where a linger was measured
 *       to pay (a sink whose fixed cost per call dominates, callers that come back in a closed loop), and
 *       batches up to the configured {@link BatchLimits#maxBatchSize()}, or up to a half to a sixteenth of it
 *       where batches fill that and it was measured to carry more.
 *   <li>{@link #latency(Duration)}: the most items per second whose round trip (submit to completion) stays
 *       within a p99 target. A linger is kept only while the measured p99 stays under the target; past it the
 *       linger is cut at once (and, once no linger is left, batches are made no larger than the sink's fitted
 *       cost allows within half the target).
 * </ul>
 *
 * <p>{@link #throughput()} is the default of every {@link BatcherConfig} given no linger and no limits. The
 * configured {@link BatchLimits#maxBatchSize()}, {@link BatchLimits#maxBatchBytes()} and
 * {@link #maxLinger()} are hard caps: the batcher never exceeds them. An adaptive batcher whose
 * {@code maxBatchSize} was not set gets 4,096 as its cap, or the ring size if smaller (with a sink of large fixed
 * cost and many callers, the fixed limits' 256 can cost several times the throughput). {@link Batcher#setLimits} pins the limits:
 * from then on the values given are kept as they are. The first item after an idle spell is never delayed, nor
 * a lone caller's: a linger applies only to a batch that follows a write of two items or more closely.
 * {@code flush()} and {@code close()} cut any wait. {@link Batcher#limits()} and {@link BatcherStats#limits()}
 * give the values in force; each change is logged at {@code DEBUG} by the logger
 * {@code dev.ringbatch.internal.pacing.AdaptiveLimits}.
 *
 * <p>Immutable.
 */
public final class Adaptive {
  /** What an adaptive batcher optimises. */
  public enum Goal {
    /** The most items per second. */
    THROUGHPUT,
    /** The most items per second within a p99 round-trip target. */
    LATENCY
  }

  private static final Duration DEFAULT_MAX_LINGER = Duration.ofMillis(1);
  private static final Adaptive THROUGHPUT = new Adaptive(Goal.THROUGHPUT, null, DEFAULT_MAX_LINGER);

  private final Goal goal;
  private final @Nullable Duration p99;
  private final Duration maxLinger;

  private Adaptive(Goal goal, @Nullable Duration p99, Duration maxLinger) {
    this.goal = goal;
    this.p99 = p99;
    this.maxLinger = maxLinger;
  }

  /** The most items per second, lingering up to 1 ms where it pays. */
  public static Adaptive throughput() {
    return THROUGHPUT;
  }

  /**
   * The most items per second whose round trip stays within {@code p99} for 99 % of the items, lingering up to
   * 1 ms (never beyond half the target) where it pays.
   *
   * @throws IllegalArgumentException if {@code p99} is not positive
   * @throws NullPointerException if {@code p99} is null
   */
  public static Adaptive latency(Duration p99) {
    requirePositive("p99", p99);
    Duration cap = DEFAULT_MAX_LINGER.compareTo(p99.dividedBy(2)) < 0 ? DEFAULT_MAX_LINGER : p99.dividedBy(2);
    return new Adaptive(Goal.LATENCY, p99, cap);
  }

  /**
   * Returns a copy whose linger never exceeds {@code maxLinger}; zero never lingers (only the batch size then
   * adapts). The value is kept as given, in latency mode too, even above half the target that {@link #latency}
   * caps its default at.
   *
   * @throws IllegalArgumentException if {@code maxLinger} is negative, or over a second
   * @throws NullPointerException if {@code maxLinger} is null
   */
  public Adaptive withMaxLinger(Duration maxLinger) {
    requireNonNegative("maxLinger", maxLinger);
    if (maxLinger.compareTo(Duration.ofSeconds(1)) > 0) {
      throw new IllegalArgumentException("maxLinger must not exceed 1 second but was " + maxLinger);
    }
    return new Adaptive(goal, p99, maxLinger);
  }

  /** What the batcher optimises. */
  public Goal goal() {
    return goal;
  }

  /** The p99 round-trip target of {@link Goal#LATENCY}, or null for {@link Goal#THROUGHPUT}. */
  public @Nullable Duration p99() {
    return p99;
  }

  /**
   * The longest linger the batcher may choose. Default 1 ms (latency mode: at most half the target, unless
   * {@link #withMaxLinger} set it).
   */
  public Duration maxLinger() {
    return maxLinger;
  }

  @Override
  public boolean equals(@Nullable Object o) {
    return o instanceof Adaptive other && goal == other.goal && Objects.equals(p99, other.p99)
        && maxLinger.equals(other.maxLinger);
  }

  @Override
  public int hashCode() {
    return Objects.hash(goal, p99, maxLinger);
  }

  @Override
  public String toString() {
    return "Adaptive{" + (goal == Goal.THROUGHPUT ? "throughput" : "latency, p99=" + p99)
        + ", maxLinger=" + maxLinger + '}';
  }
}
