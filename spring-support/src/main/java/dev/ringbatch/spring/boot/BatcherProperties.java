package dev.ringbatch.spring.boot;

import dev.ringbatch.OverflowPolicy;
import dev.ringbatch.WaitMode;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.convert.DurationUnit;

/**
 * The {@code ringbatch.*} properties. A batcher named {@code orders} takes {@code ringbatch.defaults.*},
 * then {@code ringbatch.batchers.orders.*}; anything unset keeps the library default.
 *
 * <pre>
 * ringbatch.batchers.orders.ring-size=4096
 * ringbatch.batchers.orders.max-batch-size=500
 * ringbatch.batchers.orders.overflow-policy=block
 * ringbatch.batchers.orders.submit-timeout=200ms
 * </pre>
 */
@ConfigurationProperties(prefix = "ringbatch")
public class BatcherProperties {

  /** Whether the ringbatch auto-configuration is enabled. */
  private boolean enabled = true;

  /**
   * How long the shutdown waits, in total, for the batchers to drain before abandoning what is left (seconds if
   * no unit is given); positive. The batchers close in parallel, each within its own close-timeout bounded by this.
   */
  @DurationUnit(ChronoUnit.SECONDS)
  private Duration shutdownTimeout = Duration.ofSeconds(30);

  /** Settings every batcher starts from. */
  private Settings defaults = new Settings();

  /** Settings per batcher name, applied over the defaults. */
  private Map<String, Settings> batchers = new LinkedHashMap<>();

  private final Metrics metrics = new Metrics();

  private final Health health = new Health();

  private final Web web = new Web();
  private final Jdbc jdbc = new Jdbc();

  private final Observations observations = new Observations();

  public boolean isEnabled() {
    return enabled;
  }

  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  public Duration getShutdownTimeout() {
    return shutdownTimeout;
  }

  public void setShutdownTimeout(Duration shutdownTimeout) {
    this.shutdownTimeout = shutdownTimeout;
  }

  public Settings getDefaults() {
    return defaults;
  }

  public void setDefaults(Settings defaults) {
    this.defaults = defaults;
  }

  public Map<String, Settings> getBatchers() {
    return batchers;
  }

  public void setBatchers(Map<String, Settings> batchers) {
    this.batchers = batchers;
  }

  public Metrics getMetrics() {
    return metrics;
  }

  public Health getHealth() {
    return health;
  }

  public Web getWeb() {
    return web;
  }

  public Jdbc getJdbc() {
    return jdbc;
  }

  public Observations getObservations() {
    return observations;
  }

  /** Observation settings. */
  public static class Observations {
    /** Whether each batch write is a ringbatch.batch.write observation when an ObservationRegistry exists. */
    private boolean enabled = true;

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }
  }

  /** Web settings. */
  public static class Web {
    private final OverloadMapping overloadMapping = new OverloadMapping();
    private final Switch dataAccessMapping = new Switch(false);

    public OverloadMapping getOverloadMapping() {
      return overloadMapping;
    }

    /**
     * Whether a failed item's {@code DuplicateKeyException} answers 409 and another
     * {@code DataIntegrityViolationException} 422, as a problem detail without the database's message.
     */
    public Switch getDataAccessMapping() {
      return dataAccessMapping;
    }
  }

  /** Spring JDBC settings. */
  public static class Jdbc {
    private final Switch exceptionTranslation = new Switch(true);

    /**
     * Whether the SQLExceptions of the sinks given to the factory reach callers as the DataAccessExceptions the
     * application's SQLExceptionTranslator makes of them, the SQLException as the cause.
     */
    public Switch getExceptionTranslation() {
      return exceptionTranslation;
    }
  }

  /** A feature's on/off switch. */
  public static class Switch {
    /** Whether the feature is on. */
    private boolean enabled;

    Switch(boolean enabled) {
      this.enabled = enabled;
    }

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }
  }

  /** The mapping of batcher refusals to {@code 503 Service Unavailable} in Spring MVC applications. */
  public static class OverloadMapping {
    /** Whether a refused item (batcher full or closed) answers 503 with Retry-After and a problem detail. */
    private boolean enabled;

    /** The Retry-After of those answers, in whole seconds (rounded up). */
    @DurationUnit(ChronoUnit.SECONDS)
    private Duration retryAfter = Duration.ofSeconds(1);

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public Duration getRetryAfter() {
      return retryAfter;
    }

    public void setRetryAfter(Duration retryAfter) {
      this.retryAfter = retryAfter;
    }
  }

  /** Settings of the {@code ringbatch} health contributor. */
  public static class Health {
    /** The status of a batcher whose ring stays full or whose recent failure ratio is too high. */
    private String degradedStatus = "OUT_OF_SERVICE";

    /**
     * How long the ring must be seen full, from one health check to a later one, to report degraded (seconds if
     * no unit is given).
     */
    @DurationUnit(ChronoUnit.SECONDS)
    private Duration ringFullFor = Duration.ofSeconds(10);

    /** Above this share of failed items among the recent ones the batcher is degraded; 1 turns the check off. */
    private double failureRatio = 0.5;

    /**
     * The period the failure ratio is taken over (seconds if no unit is given): failures older than this no
     * longer count, so health recovers with no traffic once an outage is this long past.
     */
    @DurationUnit(ChronoUnit.SECONDS)
    private Duration failureWindow = Duration.ofMinutes(1);

    /**
     * A sink write in progress for this long makes the batcher degraded: a hung database call (seconds if no unit
     * is given). Set it above the longest write a healthy sink makes, its query timeout included.
     */
    @DurationUnit(ChronoUnit.SECONDS)
    private Duration maxWriteAge = Duration.ofSeconds(30);

    /** The fewest items the window must hold before its failure ratio counts; below it the ratio is only shown. */
    private int failureMinItems = 20;

    public String getDegradedStatus() {
      return degradedStatus;
    }

    public void setDegradedStatus(String degradedStatus) {
      this.degradedStatus = degradedStatus;
    }

    public Duration getRingFullFor() {
      return ringFullFor;
    }

    public void setRingFullFor(Duration ringFullFor) {
      this.ringFullFor = ringFullFor;
    }

    public double getFailureRatio() {
      return failureRatio;
    }

    public void setFailureRatio(double failureRatio) {
      this.failureRatio = failureRatio;
    }

    public Duration getFailureWindow() {
      return failureWindow;
    }

    public void setFailureWindow(Duration failureWindow) {
      this.failureWindow = failureWindow;
    }

    public Duration getMaxWriteAge() {
      return maxWriteAge;
    }

    public void setMaxWriteAge(Duration maxWriteAge) {
      this.maxWriteAge = maxWriteAge;
    }

    public int getFailureMinItems() {
      return failureMinItems;
    }

    public void setFailureMinItems(int failureMinItems) {
      this.failureMinItems = failureMinItems;
    }
  }

  /** Metrics settings. */
  public static class Metrics {
    /** Whether batchers' meters are bound to the MeterRegistry when there is one. */
    private boolean enabled = true;

    /**
     * Whether to measure how long items wait in the ring ({@code ringbatch.item.wait}, a timer): each
     * producer then reads the clock once per item.
     */
    private boolean itemWaits = true;

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public boolean isItemWaits() {
      return itemWaits;
    }

    public void setItemWaits(boolean itemWaits) {
      this.itemWaits = itemWaits;
    }
  }

  /** The settings of one batcher; each maps onto the same-named option of {@code BatcherConfig.Builder}. */
  public static class Settings {
    /**
     * Slots in the ring, a power of two: the bound on items accepted but not yet taken by the consumer, and so on
     * the batcher's memory (about 170 bytes a slot; 16,384 slots by default).
     */
    private @Nullable Integer ringSize;

    /**
     * The most items per batch, at most the ring size: a cap of tuned limits (4,096, or the ring if smaller, when not
     * set); 256 when a linger fixes them.
     */
    private @Nullable Integer maxBatchSize;

    /** The most weight (usually bytes) per batch; needs a weigher. */
    private @Nullable Long maxBatchBytes;

    /**
     * How long a small batch may wait for more items after the ring runs dry; 0 writes at once. Setting it fixes
     * the limits (unless adaptive is set, which wins over 0); unset, the batcher chooses it.
     */
    private @Nullable Duration linger;

    /** What producers do when the ring is full: block (up to submit-timeout) or drop. */
    private @Nullable OverflowPolicy overflowPolicy;

    /** How long a producer waits for room under the block policy. */
    private @Nullable Duration submitTimeout;

    /** How the idle consumer waits: blocking, yielding or busy-spin. */
    private @Nullable WaitMode waitMode;

    /** How long closing this batcher alone waits for its drain. */
    private @Nullable Duration closeTimeout;

    /** How many batches an asynchronous sink may have in flight at once. */
    private @Nullable Integer maxInFlightBatches;

    /** Under the block policy, wait for room as long as it takes; excludes submit-timeout. */
    private @Nullable Boolean blockWithoutTimeout;

    /** The consumer thread: platform, or virtual (Java 21 or later). */
    private @Nullable ConsumerThread consumerThread;

    /** Independent rings, consumers and sinks behind one batcher; for {@code BatcherFactory.createSharded}. */
    private @Nullable Integer shards;

    /** Retries of a batch whose sink threw; any key set here turns retries on. */
    private final Retry retry = new Retry();

    /**
     * How the limits tune themselves: throughput (the most items per second; the default unless linger is set)
     * or latency (the most within adaptive-p99); max-batch-size and max-batch-bytes are caps, and a linger other
     * than 0 must not be set with it.
     */
    private dev.ringbatch.Adaptive.@Nullable Goal adaptive;

    /** The p99 round-trip target of adaptive latency mode. */
    private @Nullable Duration adaptiveP99;

    /** The longest linger an adaptive batcher may choose (1ms when unset); alone, it caps the default tuning. */
    private @Nullable Duration adaptiveMaxLinger;

    public dev.ringbatch.Adaptive.@Nullable Goal getAdaptive() {
      return adaptive;
    }

    public void setAdaptive(dev.ringbatch.Adaptive.@Nullable Goal adaptive) {
      this.adaptive = adaptive;
    }

    public @Nullable Duration getAdaptiveP99() {
      return adaptiveP99;
    }

    public void setAdaptiveP99(@Nullable Duration adaptiveP99) {
      this.adaptiveP99 = adaptiveP99;
    }

    public @Nullable Duration getAdaptiveMaxLinger() {
      return adaptiveMaxLinger;
    }

    public void setAdaptiveMaxLinger(@Nullable Duration adaptiveMaxLinger) {
      this.adaptiveMaxLinger = adaptiveMaxLinger;
    }

    public @Nullable Boolean getBlockWithoutTimeout() {
      return blockWithoutTimeout;
    }

    public void setBlockWithoutTimeout(@Nullable Boolean blockWithoutTimeout) {
      this.blockWithoutTimeout = blockWithoutTimeout;
    }

    public @Nullable ConsumerThread getConsumerThread() {
      return consumerThread;
    }

    public void setConsumerThread(@Nullable ConsumerThread consumerThread) {
      this.consumerThread = consumerThread;
    }

    public @Nullable Integer getShards() {
      return shards;
    }

    public void setShards(@Nullable Integer shards) {
      this.shards = shards;
    }

    public Retry getRetry() {
      return retry;
    }

    public @Nullable Integer getMaxInFlightBatches() {
      return maxInFlightBatches;
    }

    public void setMaxInFlightBatches(@Nullable Integer maxInFlightBatches) {
      this.maxInFlightBatches = maxInFlightBatches;
    }

    public @Nullable Integer getRingSize() {
      return ringSize;
    }

    public void setRingSize(@Nullable Integer ringSize) {
      this.ringSize = ringSize;
    }

    public @Nullable Integer getMaxBatchSize() {
      return maxBatchSize;
    }

    public void setMaxBatchSize(@Nullable Integer maxBatchSize) {
      this.maxBatchSize = maxBatchSize;
    }

    public @Nullable Long getMaxBatchBytes() {
      return maxBatchBytes;
    }

    public void setMaxBatchBytes(@Nullable Long maxBatchBytes) {
      this.maxBatchBytes = maxBatchBytes;
    }

    public @Nullable Duration getLinger() {
      return linger;
    }

    public void setLinger(@Nullable Duration linger) {
      this.linger = linger;
    }

    public @Nullable OverflowPolicy getOverflowPolicy() {
      return overflowPolicy;
    }

    public void setOverflowPolicy(@Nullable OverflowPolicy overflowPolicy) {
      this.overflowPolicy = overflowPolicy;
    }

    public @Nullable Duration getSubmitTimeout() {
      return submitTimeout;
    }

    public void setSubmitTimeout(@Nullable Duration submitTimeout) {
      this.submitTimeout = submitTimeout;
    }

    public @Nullable WaitMode getWaitMode() {
      return waitMode;
    }

    public void setWaitMode(@Nullable WaitMode waitMode) {
      this.waitMode = waitMode;
    }

    public @Nullable Duration getCloseTimeout() {
      return closeTimeout;
    }

    public void setCloseTimeout(@Nullable Duration closeTimeout) {
      this.closeTimeout = closeTimeout;
    }
  }

  /** A batcher's retry policy; each key maps onto the same-named option of {@code RetryPolicy.Builder}. */
  public static class Retry {
    /** Attempts in all, the first included (1 to 100; 3 when only other retry keys are set). */
    private @Nullable Integer maxAttempts;

    /** The wait before the first retry (100ms when unset). */
    private @Nullable Duration initialBackoff;

    /** The longest wait between two attempts (5s when unset). */
    private @Nullable Duration maxBackoff;

    /** The growth of the wait from one retry to the next, 1 to 10 (2 when unset). */
    private @Nullable Double multiplier;

    /** The random share of each wait, 0 to 1 (0.2 when unset). */
    private @Nullable Double jitter;

    /** No retry starts later than this after the first failure (30s when unset). */
    private @Nullable Duration maxElapsed;

    boolean isSet() {
      return maxAttempts != null || initialBackoff != null || maxBackoff != null || multiplier != null
          || jitter != null || maxElapsed != null;
    }

    public @Nullable Integer getMaxAttempts() {
      return maxAttempts;
    }

    public void setMaxAttempts(@Nullable Integer maxAttempts) {
      this.maxAttempts = maxAttempts;
    }

    public @Nullable Duration getInitialBackoff() {
      return initialBackoff;
    }

    public void setInitialBackoff(@Nullable Duration initialBackoff) {
      this.initialBackoff = initialBackoff;
    }

    public @Nullable Duration getMaxBackoff() {
      return maxBackoff;
    }

    public void setMaxBackoff(@Nullable Duration maxBackoff) {
      this.maxBackoff = maxBackoff;
    }

    public @Nullable Double getMultiplier() {
      return multiplier;
    }

    public void setMultiplier(@Nullable Double multiplier) {
      this.multiplier = multiplier;
    }

    public @Nullable Double getJitter() {
      return jitter;
    }

    public void setJitter(@Nullable Double jitter) {
      this.jitter = jitter;
    }

    public @Nullable Duration getMaxElapsed() {
      return maxElapsed;
    }

    public void setMaxElapsed(@Nullable Duration maxElapsed) {
      this.maxElapsed = maxElapsed;
    }
  }
}
