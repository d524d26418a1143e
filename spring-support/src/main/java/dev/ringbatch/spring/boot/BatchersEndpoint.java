package dev.ringbatch.spring.boot;

import dev.ringbatch.BatchLimits;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.BatcherStats;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.endpoint.Access;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;

/**
 * The {@code batchers} Actuator endpoint ({@code /actuator/batchers}; another path with
 * {@code management.endpoints.web.path-mapping.batchers}).
 *
 * <ul>
 *   <li>{@code GET /actuator/batchers}: every batcher, by name, with its limits, configuration and stats;</li>
 *   <li>{@code GET /actuator/batchers/{name}}: one batcher, 404 if there is none of that name;</li>
 *   <li>{@code POST /actuator/batchers/{name}} with any of {@code maxBatchSize}, {@code maxBatchBytes},
 *       {@code linger} ({@code "20ms"}): changes its batch limits at run time, 400 with the rule if invalid;</li>
 *   <li>{@code POST /actuator/batchers/{name}/flush}: writes what it holds now, waiting up to 10 s.</li>
 * </ul>
 *
 * Writes are off by default ({@link Access#READ_ONLY}); allow them with
 * {@code management.endpoint.batchers.access=unrestricted}, and secure them like any write endpoint.
 */
@Endpoint(id = "batchers", defaultAccess = Access.READ_ONLY)
public class BatchersEndpoint {
  static final Duration FLUSH_WAIT = Duration.ofSeconds(10);

  private final BatcherLifecycle lifecycle;

  public BatchersEndpoint(BatcherLifecycle lifecycle) {
    this.lifecycle = lifecycle;
  }

  /** Every batcher, by name. */
  @ReadOperation
  public Map<String, Map<String, Object>> batchers() {
    Map<String, Map<String, Object>> all = new LinkedHashMap<>();
    for (Batcher<?, ?> batcher : lifecycle.batchers()) {
      all.put(batcher.name(), describe(batcher));
    }
    return all;
  }

  /** One batcher, or {@code null} (404) if none has that name. */
  @ReadOperation
  public @Nullable Map<String, Object> batcher(@Selector String name) {
    Batcher<?, ?> batcher = find(name);
    return batcher == null ? null : describe(batcher);
  }

  /**
   * Changes the batch limits of {@code name}; unset parameters keep their value. The optional parameters carry
   * Spring's own {@code @Nullable} too: Boot 3 takes a parameter as optional only with that one (Boot 4 with
   * JSpecify's), and answers 400 "Missing parameters" to a request that leaves one out.
   *
   * @return the batcher as it is now, or {@code null} if none has that name (Actuator answers 204 to a write
   *     that returns nothing)
   * @throws InvalidEndpointRequestException (400) if the limits break a rule
   */
  @WriteOperation
  public @Nullable Map<String, Object> limits(@Selector String name,
      @org.springframework.lang.Nullable @Nullable Integer maxBatchSize,
      @org.springframework.lang.Nullable @Nullable Long maxBatchBytes,
      @org.springframework.lang.Nullable @Nullable Duration linger) {
    Batcher<?, ?> batcher = find(name);
    if (batcher == null) {
      return null;
    }
    BatchLimits limits = batcher.limits();
    try {
      if (maxBatchSize != null) {
        limits = limits.withMaxBatchSize(maxBatchSize);
      }
      if (maxBatchBytes != null) {
        limits = limits.withMaxBatchBytes(maxBatchBytes);
      }
      if (linger != null) {
        limits = limits.withLinger(linger);
      }
      batcher.setLimits(limits);
    } catch (IllegalArgumentException | IllegalStateException e) {
      throw new InvalidEndpointRequestException(e.getMessage(), e.getMessage());
    }
    return describe(batcher);
  }

  /**
   * Runs {@code action} on {@code name}; the only action is {@code flush}: write what the batcher holds now
   * and wait up to 10 s for it.
   *
   * @return {@code flushed}, whether everything held was written or failed in time, and the stats
   * @throws InvalidEndpointRequestException (400) for another action
   */
  @WriteOperation
  public @Nullable Map<String, Object> action(@Selector String name, @Selector String action) {
    if (!action.equals("flush")) {
      throw new InvalidEndpointRequestException("Unknown action '" + action + "'; the only action is 'flush'",
          "unknown action");
    }
    Batcher<?, ?> batcher = find(name);
    if (batcher == null) {
      return null;
    }
    Map<String, Object> result = new LinkedHashMap<>();
    try {
      batcher.flush().get(FLUSH_WAIT.toMillis(), TimeUnit.MILLISECONDS);
      result.put("flushed", true);
    } catch (TimeoutException e) {
      result.put("flushed", false);
      result.put("reason", "still writing after " + FLUSH_WAIT);
    } catch (ExecutionException e) {
      result.put("flushed", false);
      result.put("reason", String.valueOf(e.getCause()));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      result.put("flushed", false);
      result.put("reason", "interrupted");
    }
    result.put("stats", stats(batcher.stats()));
    return result;
  }

  private @Nullable Batcher<?, ?> find(String name) {
    for (Batcher<?, ?> batcher : lifecycle.batchers()) {
      if (batcher.name().equals(name)) {
        return batcher;
      }
    }
    return null;
  }

  private static Map<String, Object> describe(Batcher<?, ?> batcher) {
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("closed", batcher.isClosed());
    BatchLimits limits = batcher.limits();
    Map<String, Object> l = new LinkedHashMap<>();
    l.put("maxBatchSize", limits.maxBatchSize());
    if (limits.hasByteLimit()) {
      l.put("maxBatchBytes", limits.maxBatchBytes());
    }
    l.put("linger", limits.linger().toString());
    dev.ringbatch.Adaptive adaptive = batcher.config().adaptive();
    if (adaptive != null) { // the values above are the controller's current choice, unless limits were set here
      l.put("adaptive", adaptive.toString());
    }
    d.put("limits", l);
    BatcherConfig config = batcher.config();
    Map<String, Object> c = new LinkedHashMap<>();
    c.put("ringSize", config.ringSize());
    c.put("overflowPolicy", config.overflowPolicy().name());
    c.put("submitTimeout", config.submitTimeout().equals(BatcherConfig.NO_TIMEOUT) ? "none"
        : config.submitTimeout().toString());
    c.put("waitMode", config.waitMode().name());
    c.put("closeTimeout", config.closeTimeout().toString());
    c.put("retryMaxAttempts", config.retryPolicy().maxAttempts());
    c.put("shards", batcher.shardStats().size());
    d.put("config", c);
    d.put("stats", stats(batcher.stats()));
    return d;
  }

  private static Map<String, Object> stats(BatcherStats s) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("submitted", s.submitted());
    m.put("accepted", s.accepted());
    m.put("rejected", s.rejected());
    m.put("written", s.written());
    m.put("failed", s.failed());
    m.put("abandoned", s.abandoned());
    m.put("inFlight", s.inFlight());
    m.put("batches", s.batches());
    m.put("meanBatchSize", s.meanBatchSize());
    m.put("largestBatchSize", s.largestBatchSize());
    m.put("ringRemaining", s.remainingCapacity());
    m.put("ringSize", s.ringSize());
    return m;
  }
}
