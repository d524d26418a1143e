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
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;

/**
 * The {@code ringbatch} health: the worst status of every batcher, with details per batcher.
 *
 * <ul>
 *   <li>{@code ringbatch.health.degraded-status} ({@code OUT_OF_SERVICE}): its ring was seen full at health
 *       checks spanning at least {@code ringbatch.health.ring-full-for}, or more than
 *       {@code ringbatch.health.failure-ratio} of the items of its batches in the last
 *       {@code ringbatch.health.failure-window} (a period of time) failed, counted only once those batches hold
 *       at least {@code ringbatch.health.failure-min-items} items (so that one failed batch in a quiet
 *       application does not take it out of service).</li>
 *   <li>{@code UP} otherwise, and again once the ring has room and the failures have left the window, with
 *       or without new traffic.</li>
 * </ul>
 *
 * <p>A sink write in progress for {@code ringbatch.health.max-write-age} or longer (a hung database call) makes
 * the batcher degraded too, not {@code DOWN}: a liveness probe would restart the application over a slow
 * database, which a restart does not cure, while readiness taking it out of traffic is what helps. The age of
 * the oldest write in progress is the detail {@code oldestWriteAge}.
 *
 * <p>A batcher its owner closes while the application runs does not fail the health: it is listed, {@code UP},
 * with the reason "being closed by its owner", until its close returns, and then it is gone (see
 * {@link BatcherLifecycle}). The shutdown's closes report {@code OUT_OF_SERVICE}.
 *
 * Whether the consumer thread is alive is not visible through the public {@code Batcher} API, so it is not
 * checked; the core catches every sink failure, so that thread does not die of one.
 */
public class BatcherHealthIndicator extends AbstractHealthIndicator {
  private final BatcherLifecycle lifecycle;
  private final BatcherProperties.Health settings;
  private final Status degraded;
  private final LongSupplier nanoTime;
  private final @Nullable WriteTracker writes;
  private final Map<Batcher<?, ?>, FailureWindow> windows = Collections.synchronizedMap(new WeakHashMap<>());

  /**
   * @throws InvalidConfigurationPropertyValueException if a {@code ringbatch.health.*} property is out of range
   */
  public BatcherHealthIndicator(BatcherFactory factory, BatcherLifecycle lifecycle, BatcherProperties.Health settings) {
    this(factory, lifecycle, settings, (WriteTracker) null);
  }

  /**
   * @param writes the sink writes in progress, for {@code oldestWriteAge} and {@code max-write-age}; without
   *     it neither is shown nor checked
   * @throws InvalidConfigurationPropertyValueException if a {@code ringbatch.health.*} property is out of range
   */
  public BatcherHealthIndicator(BatcherFactory factory, BatcherLifecycle lifecycle, BatcherProperties.Health settings,
      @Nullable WriteTracker writes) {
    this(factory, lifecycle, settings, writes, System::nanoTime);
  }

  BatcherHealthIndicator(BatcherFactory factory, BatcherLifecycle lifecycle, BatcherProperties.Health settings,
      LongSupplier nanoTime) {
    this(factory, lifecycle, settings, null, nanoTime);
  }

  BatcherHealthIndicator(BatcherFactory factory, BatcherLifecycle lifecycle, BatcherProperties.Health settings,
      @Nullable WriteTracker writes, LongSupplier nanoTime) {
    super("ringbatch health check failed");
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
    if (code == null || code.isBlank() || code.equals(Status.UP.getCode())) {
      throw new InvalidConfigurationPropertyValueException("ringbatch.health.degraded-status", String.valueOf(code),
          "degraded-status must name a status other than UP, such as OUT_OF_SERVICE");
    }
    this.degraded = new Status(code);
    factory.whenCreated(this::window);
  }

  @Override
  protected void doHealthCheck(Health.Builder builder) {
    Status worst = Status.UP;
    Map<String, Object> details = new LinkedHashMap<>();
    for (Batcher<?, ?> batcher : lifecycle.batchers()) {
      Map<String, Object> detail = new LinkedHashMap<>();
      Status status = check(batcher, detail);
      details.put(batcher.name(), detail);
      worst = worse(worst, status);
    }
    builder.status(worst).withDetails(details);
  }

  private Status check(Batcher<?, ?> batcher, Map<String, Object> detail) {
    FailureWindow window = window(batcher);
    BatcherStats stats = batcher.stats();
    Status status = Status.UP;
    String reason = null;
    if (batcher.isClosed()) {
      CloseReport report = batcher.closeReport();
      status = lifecycle.isRunning() ? Status.UP : Status.OUT_OF_SERVICE;
      reason = lifecycle.isRunning() ? "being closed by its owner" : "closed by the shutdown";
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
        if (status == Status.UP && full.compareTo(settings.getRingFullFor()) >= 0) {
          status = degraded;
          reason = "ring full for at least " + full;
        }
      } else {
        window.fullSinceNanos = FailureWindow.NOT_FULL;
      }
      FailureWindow.Tally tally = window.tally();
      double ratio = tally.ratio();
      // Too few items say nothing: one failed batch of one item in a quiet hour is a ratio of 1.
      if (status == Status.UP && tally.items() >= settings.getFailureMinItems() && ratio > settings.getFailureRatio()) {
        status = degraded;
        reason = String.format("%.0f%% of the items of the latest batches failed", ratio * 100);
      }
      detail.put("recentFailureRatio", ratio);
      detail.put("recentItems", tally.items());
    }
    detail.put("status", status.getCode());
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

  /** DOWN is worst, then the degraded status (or any other), then UP. */
  private static Status worse(Status a, Status b) {
    return rank(b) > rank(a) ? b : a;
  }

  private static int rank(Status status) {
    return status.equals(Status.DOWN) ? 3 : status.equals(Status.UP) ? 0 : 2;
  }
}
