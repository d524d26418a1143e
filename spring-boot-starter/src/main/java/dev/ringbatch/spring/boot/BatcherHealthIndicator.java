package dev.ringbatch.spring.boot;

import java.util.LinkedHashMap;
import java.util.Map;
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
  private final BatcherHealthCheck check;

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
    this.check = new BatcherHealthCheck(factory, lifecycle, settings, writes, nanoTime);
  }

  @Override
  protected void doHealthCheck(Health.Builder builder) {
    Map<String, Object> details = new LinkedHashMap<>();
    builder.status(new Status(check.run(details))).withDetails(details);
  }
}
