package dev.ringbatch.spring.boot;

import dev.ringbatch.OverflowPolicy;
import dev.ringbatch.WaitMode;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

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

  /** How long the shutdown waits, in total, for every batcher to drain before abandoning what is left. */
  private Duration shutdownTimeout = Duration.ofSeconds(30);

  /** Settings every batcher starts from. */
  private Settings defaults = new Settings();

  /** Settings per batcher name, applied over the defaults. */
  private Map<String, Settings> batchers = new LinkedHashMap<>();

  private final Metrics metrics = new Metrics();

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

  /** Metrics settings. */
  public static class Metrics {
    /** Whether batchers' meters are bound to the MeterRegistry when there is one. */
    private boolean enabled = true;

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }
  }

  /** The settings of one batcher; each maps onto the same-named option of {@code BatcherConfig.Builder}. */
  public static class Settings {
    /** Slots in the ring, a power of two: the bound on items accepted but not yet taken by the consumer. */
    private @Nullable Integer ringSize;

    /** The most items per batch; must not exceed the ring size. */
    private @Nullable Integer maxBatchSize;

    /** The most weight (usually bytes) per batch; needs a weigher. */
    private @Nullable Long maxBatchBytes;

    /** How long a small batch may wait for more items after the ring runs dry; 0 writes at once. */
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
}
