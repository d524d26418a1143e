package dev.ringbatch.spring.boot;

import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherStats;
import dev.ringbatch.CloseReport;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;

/**
 * What the {@code ringbatch} health finds, in terms of status codes and details, for the health indicator of
 * either starter (Boot 3 and Boot 4 have their health types in different packages). See
 * {@code BatcherHealthIndicator} for the rules.
 */
final class BatcherHealthCheck {
  static final String UP = "UP";
  static final String DOWN = "DOWN";
  static final String OUT_OF_SERVICE = "OUT_OF_SERVICE";

  private final BatcherLifecycle lifecycle;
  private final BatcherProperties.Health settings;
  private final String degraded;
  private final LongSupplier nanoTime;
  private final @Nullable WriteTracker writes;
  private final Map<Batcher<?, ?>, FailureWindow> windows = Collections.synchronizedMap(new WeakHashMap<>());

  /**
   * @throws InvalidConfigurationPropertyValueException if a {@code ringbatch.health.*} property is out of range
   */
  BatcherHealthCheck(BatcherFactory factory, BatcherLifecycle lifecycle, BatcherProperties.Health settings,
      @Nullable WriteTracker writes, LongSupplier nanoTime) {
    this.lifecycle = lifecycle;
    this.settings = settings;
    this.writes = writes;
    this.nanoTime = nanoTime;
    PropertiesConfigMapper.requirePositive("ringbatch.health.max-write-age", settings.getMaxWriteAge());
    double ratio = settings.getFailureRatio();
    if (!(ratio >= 0 && ratio <= 1)) {
      throw new InvalidConfigurationPropertyValueException("ringbatch.health.failure-ratio", ratio,
          "failure-ratio must be from 0 to 1 but was " + ratio);
    }
    PropertiesConfigMapper.requirePositive("ringbatch.health.failure-window", settings.getFailureWindow());
    if (settings.getFailureMinItems() < 1) {
      throw new InvalidConfigurationPropertyValueException("ringbatch.health.failure-min-items",
          settings.getFailureMinItems(),
          "failure-min-items must be at least 1 but was " + settings.getFailureMinItems());
    }
    if (settings.getRingFullFor().isNegative()) {
      throw new InvalidConfigurationPropertyValueException("ringbatch.health.ring-full-for",
          settings.getRingFullFor(), "ring-full-for must not be negative but was " + settings.getRingFullFor());
    }
    String code = settings.getDegradedStatus();
    if (code == null || code.isBlank() || uniform(code).equals(UP)) {
      throw new InvalidConfigurationPropertyValueException("ringbatch.health.degraded-status", String.valueOf(code),
          "degraded-status must name a status other than UP, such as OUT_OF_SERVICE");
    }
    this.degraded = code;
    factory.whenCreated(this::window);
  }

  /**
   * Checks every batcher, putting each one's details into {@code details} under its name.
   *
   * @return the code of the worst status: DOWN, then the degraded status (or any other), then UP
   */
  String run(Map<String, Object> details) {
    String worst = UP;
    for (Batcher<?, ?> batcher : lifecycle.batchers()) {
      Map<String, Object> detail = new LinkedHashMap<>();
      String status = check(batcher, detail);
      details.put(batcher.name(), detail);
      worst = rank(status) > rank(worst) ? status : worst;
    }
    return worst;
  }

  private String check(Batcher<?, ?> batcher, Map<String, Object> detail) {
    FailureWindow window = window(batcher);
    BatcherStats stats = batcher.stats();
    String status = UP;
    String reason = null;
    if (batcher.isClosed()) {
      CloseReport report = batcher.closeReport();
      boolean byShutdown = lifecycle.closedByShutdown(batcher);
      status = byShutdown ? OUT_OF_SERVICE : UP;
      reason = byShutdown ? "closed by the shutdown" : "being closed by its owner";
      if (report != null) {
        detail.put("closeReport", report.toString());
      }
    } else {
      Duration oldestWrite = oldestWrite(batcher);
      if (oldestWrite != null) {
        detail.put("oldestWriteAge", oldestWrite.toString());
        if (oldestWrite.compareTo(settings.getMaxWriteAge()) >= 0) { // first: a hung write fills the ring next
          status = degraded;
          reason = "a sink write has run for " + oldestWrite + ", at least max-write-age " + settings.getMaxWriteAge();
        }
      }
      long now = nanoTime.getAsLong();
      // Any full shard refuses (or holds up) the items routed to it, even when the others have room.
      if (batcher.shardStats().stream().anyMatch(shard -> shard.remainingCapacity() == 0)) {
        long since = window.fullSinceNanos; // read once: a concurrent check may reset it meanwhile
        if (since == FailureWindow.NOT_FULL) {
          since = now;
          window.fullSinceNanos = now;
        }
        Duration full = Duration.ofNanos(now - since);
        if (status.equals(UP) && full.compareTo(settings.getRingFullFor()) >= 0) {
          status = degraded;
          reason = "ring full for at least " + full;
        }
      } else {
        window.fullSinceNanos = FailureWindow.NOT_FULL;
      }
      FailureWindow.Tally tally = window.tally();
      double ratio = tally.ratio();
      // Too few items say nothing: one failed batch of one item in a quiet hour is a ratio of 1.
      if (status.equals(UP) && tally.items() >= settings.getFailureMinItems() && ratio > settings.getFailureRatio()) {
        status = degraded;
        reason = String.format("%.0f%% of the items of the latest batches failed", ratio * 100);
      }
      detail.put("recentFailureRatio", ratio);
      detail.put("recentItems", tally.items());
    }
    detail.put("status", status);
    if (reason != null) {
      detail.put("reason", reason);
    }
    detail.put("ringRemaining", stats.remainingCapacity());
    detail.put("ringSize", stats.ringSize());
    detail.put("inFlight", stats.inFlight());
    detail.put("written", stats.written());
    detail.put("failed", stats.failed());
    detail.put("rejected", stats.rejected());
    String lastFailure = window.lastFailure();
    if (lastFailure != null) {
      detail.put("lastFailure", lastFailure);
    }
    String lastRetryCause = window.lastRetryCause();
    if (lastRetryCause != null) {
      detail.put("lastRetryCause", lastRetryCause);
    }
    return status;
  }

  private @Nullable Duration oldestWrite(Batcher<?, ?> batcher) {
    WritesInProgress inProgress = writes == null ? null : writes.of(batcher.name());
    return inProgress == null ? null : inProgress.oldestAge();
  }

  /** The window of {@code batcher}, made and registered the first time it is asked for. */
  private FailureWindow window(Batcher<?, ?> batcher) {
    synchronized (windows) {
      FailureWindow window = windows.get(batcher);
      if (window == null) {
        window = new FailureWindow(settings.getFailureWindow(), nanoTime);
        windows.put(batcher, window);
        batcher.addStatsRecorder(window);
      }
      return window;
    }
  }

  private static int rank(String status) {
    String code = uniform(status);
    return code.equals(DOWN) ? 3 : code.equals(UP) ? 0 : 2;
  }

  /** A status code as Spring Boot compares codes: its letters and digits, upper case ({@code "up"} is UP). */
  private static String uniform(String code) {
    return code.replaceAll("[^A-Za-z0-9]", "").toUpperCase(java.util.Locale.ROOT);
  }
}
