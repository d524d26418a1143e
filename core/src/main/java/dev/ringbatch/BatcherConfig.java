package dev.ringbatch;

import static dev.ringbatch.internal.shared.Checks.requireArgument;
import static dev.ringbatch.internal.shared.Checks.requireNonNegative;
import static dev.ringbatch.internal.shared.Checks.requirePositive;
import static dev.ringbatch.internal.shared.Checks.requireState;
import static java.util.Objects.requireNonNull;

import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.concurrent.ThreadFactory;
import org.jspecify.annotations.Nullable;

/**
 * The immutable configuration of a {@link Batcher}. Build one with {@link #builder()}; every setter
 * validates its argument at once, with a message that names the field and the value, and
 * {@link Builder#build()} checks the rules that tie fields together.
 *
 * <pre>{@code
 * BatcherConfig config = BatcherConfig.builder()
 *     .ringSize(4096)
 *     .maxBatchSize(500)
 *     .overflowPolicy(OverflowPolicy.BLOCK)
 *     .submitTimeout(Duration.ofMillis(200))
 *     .build();
 * }</pre>
 *
 * <p>A config holds no item type, so one config can serve many batchers; the {@link Weigher} for a byte
 * limit is given to {@link Batcher#of(String, BatcherConfig, Weigher, BatchSink)}.
 */
public final class BatcherConfig {

  /** A {@link #submitTimeout()} that means "wait for room for as long as it takes". */
  public static final Duration NO_TIMEOUT = ChronoUnit.FOREVER.getDuration();

  /**
   * The batch cap the limits tune under when no maxBatchSize is set (or the ring, if smaller). Larger batches cost
   * more than they carry: with 10,000 callers, a cap of 16,384 ran 0.87-0.94x the cap of 4,096 on the same ring
   * (docs/results/issue37-ring-follows-callers.txt).
   */
  private static final int TUNED_CAP = 4096;

  private static final BatcherConfig DEFAULTS = builder().build();

  /** A private copy of the builder that built this config, never handed out: its values, kept once. */
  private final Builder values;
  private final @Nullable Adaptive adaptive;
  private final BatchLimits limits;

  private BatcherConfig(Builder builder, @Nullable Adaptive adaptive) {
    this.values = builder.copy();
    this.adaptive = adaptive;
    int maxBatchSize = adaptive != null && !values.maxBatchSizeSet ? Math.min(values.ringSize, TUNED_CAP)
        : values.maxBatchSize;
    this.limits = BatchLimits.of(maxBatchSize, values.maxBatchBytes, values.linger);
  }

  /** Returns a builder with every field at its default. */
  public static Builder builder() {
    return new Builder();
  }

  /** Returns a builder that starts from the values of {@code config}. */
  public static Builder from(BatcherConfig config) {
    requireNonNull(config, "config");
    return config.values.copy();
  }

  /** Returns the default configuration; see each getter for its default. */
  public static BatcherConfig ofDefaults() {
    return DEFAULTS;
  }

  /**
   * The number of slots in the ring: the most items accepted but not yet taken by the consumer, and so the memory
   * bound of a batcher (its slots are made at start, about 170 bytes each, plus the items they hold: about 2.8 MB
   * at the default). Default 16,384, so that callers up to that many each have a slot rather than waiting for one;
   * a smaller ring is a valid choice where memory counts more than the batching of thousands of callers.
   */
  public int ringSize() {
    return values.ringSize;
  }

  /**
   * The initial batch limits (items, bytes, linger); a running batcher can change them. With {@link #adaptive()}
   * (the default) they are the caps the batcher tunes under: its maxBatchSize is 4,096 (or the ring size, if smaller)
   * unless one was set.
   */
  public BatchLimits limits() {
    return limits;
  }

  /** What producers do when the ring is full. Default {@link OverflowPolicy#BLOCK}. */
  public OverflowPolicy overflowPolicy() {
    return values.overflowPolicy;
  }

  /**
   * How long a producer waits for room under {@link OverflowPolicy#BLOCK} before its item is rejected.
   * Default 5 seconds: long enough to ride out a slow batch, short enough that a stuck sink shows up as
   * rejections rather than as a hung service.
   */
  public Duration submitTimeout() {
    return values.submitTimeout;
  }

  /** How the consumer waits when the ring is empty. Default {@link WaitMode#BLOCKING}. */
  public WaitMode waitMode() {
    return values.waitMode;
  }

  /** How long {@link Batcher#close()} waits for the drain before it abandons what is left. Default 10 seconds. */
  public Duration closeTimeout() {
    return values.closeTimeout;
  }

  /**
   * How many batches an {@link AsyncBatchSink} may have in flight at once before the consumer waits.
   * Ignored by a synchronous {@link BatchSink}. Default 1.
   */
  public int maxInFlightBatches() {
    return values.maxInFlightBatches;
  }

  /**
   * When to retry a batch whose synchronous {@link BatchSink} threw. Ignored by an {@link AsyncBatchSink}, whose
   * stage can retry on its own (the batcher never hands an async batch to the sink twice). Default
   * {@link RetryPolicy#none()}.
   */
  public RetryPolicy retryPolicy() {
    return values.retryPolicy;
  }

  /**
   * The factory of the consumer thread, or {@code null} for the default: one daemon thread named
   * {@code ringbatch-<name>}. The thread it returns must run the Runnable it was given itself, as every
   * {@code ThreadFactory} does: the consumer runs only on that thread (the batcher starts it and a close watches it);
   * a run of the Runnable on any other thread does nothing but log a warning.
   */
  public @Nullable ThreadFactory threadFactory() {
    return values.threadFactory;
  }

  /** The time source for linger deadlines and write timings. Default {@link Ticker#system()}. */
  public Ticker ticker() {
    return values.ticker;
  }

  /**
   * The limits' self-tuning mode: {@link Adaptive#throughput()} by default; {@code null} if the builder was given
   * {@link Builder#limits limits} or a {@link Builder#linger linger} (and no {@link Builder#adaptive}), which stay as
   * set. See {@link Adaptive}.
   */
  public @Nullable Adaptive adaptive() {
    return adaptive;
  }

  /** What is told of each fire-and-forget item the sink failed, or {@code null}: they are logged. */
  public @Nullable OfferFailureHandler offerFailureHandler() {
    return values.offerFailureHandler;
  }

  @Override
  public String toString() {
    return "BatcherConfig{ringSize=" + values.ringSize
        + ", limits=" + limits
        + ", overflowPolicy=" + values.overflowPolicy
        + ", submitTimeout=" + (values.submitTimeout.equals(NO_TIMEOUT) ? "none" : values.submitTimeout)
        + ", waitMode=" + values.waitMode
        + ", closeTimeout=" + values.closeTimeout
        + (values.maxInFlightBatches == 1 ? "" : ", maxInFlightBatches=" + values.maxInFlightBatches)
        + (values.retryPolicy == RetryPolicy.none() ? "" : ", retryPolicy=" + values.retryPolicy)
        + (adaptive == null ? ", fixed limits" : ", adaptive=" + adaptive)
        + '}';
  }

  /**
   * Builds a {@link BatcherConfig}. Not thread-safe. Each setter may be called more than once; the last
   * value wins.
   */
  public static final class Builder implements Cloneable {
    private static final int MAX_RING_SIZE = 1 << 30;

    private int ringSize = 16_384;
    private int maxBatchSize = BatchLimits.ofDefaults().maxBatchSize();
    private long maxBatchBytes = BatchLimits.NO_BYTE_LIMIT;
    private Duration linger = Duration.ZERO;
    private OverflowPolicy overflowPolicy = OverflowPolicy.BLOCK;
    private Duration submitTimeout = Duration.ofSeconds(5);
    private WaitMode waitMode = WaitMode.BLOCKING;
    private Duration closeTimeout = Duration.ofSeconds(10);
    private int maxInFlightBatches = 1;
    private RetryPolicy retryPolicy = RetryPolicy.none();
    private @Nullable ThreadFactory threadFactory;
    private Ticker ticker = Ticker.system();
    private @Nullable OfferFailureHandler offerFailureHandler;
    /** The mode the user chose, or null: throughput, unless a linger was set. */
    private @Nullable Adaptive adaptive;
    private boolean maxBatchSizeSet;
    private boolean lingerSet;

    private Builder() {}

    /** A copy of every value (all immutable, or shared as given). */
    private Builder copy() {
      try {
        return (Builder) super.clone();
      } catch (CloneNotSupportedException e) {
        throw new AssertionError(e);
      }
    }

    /**
     * Sets the number of ring slots.
     *
     * @throws IllegalArgumentException unless {@code ringSize} is a power of two from 1 to 2^30
     */
    public Builder ringSize(int ringSize) {
      requireArgument(ringSize > 0 && Integer.bitCount(ringSize) == 1,
          "ringSize must be a positive power of two but was %s", ringSize);
      requireArgument(ringSize <= MAX_RING_SIZE,
          "ringSize must not exceed %s but was %s", MAX_RING_SIZE, ringSize);
      this.ringSize = ringSize;
      return this;
    }

    /**
     * Sets the most items per batch; it must not exceed the ring size (checked by {@link #build()}). Under
     * {@link #adaptive} limits (the default) it is the cap the batcher tunes under.
     *
     * @throws IllegalArgumentException if {@code maxBatchSize} is not positive
     */
    public Builder maxBatchSize(int maxBatchSize) {
      this.maxBatchSize = requirePositive("maxBatchSize", maxBatchSize);
      this.maxBatchSizeSet = true;
      return this;
    }

    /**
     * Sets the most weight per batch; requires a {@link Weigher} when the batcher is created.
     *
     * @throws IllegalArgumentException if {@code maxBatchBytes} is not positive
     */
    public Builder maxBatchBytes(long maxBatchBytes) {
      this.maxBatchBytes = requirePositive("maxBatchBytes", maxBatchBytes);
      return this;
    }

    /**
     * Sets how long a small batch may wait for more items after the ring runs dry. Zero disables it. A linger set
     * here fixes the limits: the batcher no longer tunes them, unless {@link #adaptive} is set too, which wins over a
     * zero linger ({@link #build()} refuses it with any other).
     *
     * @throws IllegalArgumentException if {@code linger} is negative
     */
    public Builder linger(Duration linger) {
      this.linger = requireNonNegative("linger", linger);
      this.lingerSet = true;
      return this;
    }

    /**
     * Sets the batch limits all at once, and so fixes them as {@link #linger} does: {@code
     * limits(BatchLimits.ofDefaults())} asks for 256 items and no linger, as set, never tuned.
     */
    public Builder limits(BatchLimits limits) {
      requireNonNull(limits, "limits");
      this.maxBatchSize = limits.maxBatchSize();
      this.maxBatchSizeSet = true;
      this.maxBatchBytes = limits.maxBatchBytes();
      this.linger = limits.linger();
      this.lingerSet = true;
      return this;
    }

    /**
     * Chooses how the limits tune themselves: {@link Adaptive#throughput()} (the default, unless a linger or
     * limits are set) or {@link Adaptive#latency}. The configured maxBatchSize and maxBatchBytes are caps, and
     * maxBatchSize defaults to the ring size. The batcher chooses the linger: setting one other than zero as well is
     * refused by {@link #build()}.
     */
    public Builder adaptive(Adaptive adaptive) {
      this.adaptive = requireNonNull(adaptive, "adaptive");
      return this;
    }

    /** Sets what producers do when the ring is full. */
    public Builder overflowPolicy(OverflowPolicy overflowPolicy) {
      this.overflowPolicy = requireNonNull(overflowPolicy, "overflowPolicy");
      return this;
    }

    /**
     * Sets how long a producer waits for room under {@link OverflowPolicy#BLOCK};
     * {@link BatcherConfig#NO_TIMEOUT} waits for as long as it takes.
     *
     * @throws IllegalArgumentException if {@code submitTimeout} is zero or negative
     */
    public Builder submitTimeout(Duration submitTimeout) {
      this.submitTimeout = requirePositive("submitTimeout", submitTimeout);
      return this;
    }

    /** Sets how the consumer waits when the ring is empty. */
    public Builder waitMode(WaitMode waitMode) {
      this.waitMode = requireNonNull(waitMode, "waitMode");
      return this;
    }

    /**
     * Sets how long {@link Batcher#close()} waits for the drain. Zero abandons whatever is not written yet.
     *
     * @throws IllegalArgumentException if {@code closeTimeout} is negative
     */
    public Builder closeTimeout(Duration closeTimeout) {
      this.closeTimeout = requireNonNegative("closeTimeout", closeTimeout);
      return this;
    }

    /**
     * Sets how many batches an {@link AsyncBatchSink} may have in flight at once.
     *
     * @throws IllegalArgumentException unless {@code maxInFlightBatches} is from 1 to 1024
     */
    public Builder maxInFlightBatches(int maxInFlightBatches) {
      requireArgument(maxInFlightBatches > 0 && maxInFlightBatches <= 1024,
          "maxInFlightBatches must be from 1 to 1024 but was %s", maxInFlightBatches);
      this.maxInFlightBatches = maxInFlightBatches;
      return this;
    }

    /**
     * Sets when to retry a batch whose synchronous sink threw (an {@link AsyncBatchSink} is not retried); see
     * {@link RetryPolicy}.
     */
    public Builder retryPolicy(RetryPolicy retryPolicy) {
      this.retryPolicy = requireNonNull(retryPolicy, "retryPolicy");
      return this;
    }

    /** Sets the factory of the consumer thread. */
    public Builder threadFactory(ThreadFactory threadFactory) {
      this.threadFactory = requireNonNull(threadFactory, "threadFactory");
      return this;
    }

    /** Sets the time source; intended for tests. */
    public Builder ticker(Ticker ticker) {
      this.ticker = requireNonNull(ticker, "ticker");
      return this;
    }

    /**
     * Sets what is told of each fire-and-forget item ({@link Batcher#offer}) the sink fails, instead of a log line;
     * see {@link OfferFailureHandler}. Default: none, and such failures are logged at {@code WARNING}, at most
     * once every ten seconds per batcher, with how many were left out.
     */
    public Builder offerFailureHandler(OfferFailureHandler offerFailureHandler) {
      this.offerFailureHandler = requireNonNull(offerFailureHandler, "offerFailureHandler");
      return this;
    }

    /**
     * Returns the configuration.
     *
     * @throws IllegalStateException if {@code maxBatchSize} exceeds {@code ringSize}, or a linger other than zero
     *     is set with {@link #adaptive}
     */
    public BatcherConfig build() {
      Adaptive mode = adaptive != null ? adaptive : lingerSet ? null : Adaptive.throughput();
      requireState(maxBatchSize <= ringSize || (mode != null && !maxBatchSizeSet),
          "maxBatchSize (%s) must not exceed ringSize (%s)", maxBatchSize, ringSize);
      requireState(adaptive == null || linger.isZero(), "linger (%s) cannot be set with adaptive (%s): the batcher"
          + " chooses its linger; cap it with Adaptive.withMaxLinger", linger, adaptive);
      return new BatcherConfig(this, mode);
    }
  }
}
