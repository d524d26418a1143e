package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.Batch;
import dev.ringbatch.Batcher;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The failure window is a period of time, not a count of batches (issue 21 item 5): after an outage, a
 * service with no traffic comes back UP once the failures are older than the window.
 */
class FailureWindowTest {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class))
      .withPropertyValues("ringbatch.batchers.orders.max-batch-size=1", "ringbatch.health.failure-window=60s",
          "ringbatch.health.failure-ratio=0.5", "ringbatch.health.failure-min-items=3");

  @Test
  void failuresOlderThanTheWindow_upAgainWithoutTraffic() {
    runner.run(context -> {
      AtomicLong now = new AtomicLong(-Duration.ofHours(1).toNanos()); // nanoTime may be negative
      BatcherHealthIndicator health = new BatcherHealthIndicator(context.getBean(BatcherFactory.class),
          context.getBean(BatcherLifecycle.class), context.getBean(BatcherProperties.class).getHealth(), now::get);
      AtomicBoolean failing = new AtomicBoolean(true);
      Batcher<Integer, Void> orders = context.getBean(BatcherFactory.class).create("orders",
          (Batch<Integer, Void> batch) -> {
            if (failing.get()) {
              throw new IllegalStateException("database down");
            }
            batch.completeRemaining(null);
          });
      for (int i = 0; i < 2; i++) {
        orders.submit(i).handle((v, e) -> null).get(10, TimeUnit.SECONDS);
      }
      now.addAndGet(Duration.ofSeconds(30).toNanos());
      orders.submit(2).handle((v, e) -> null).get(10, TimeUnit.SECONDS);
      Health down = health.health();
      assertThat(down.getStatus()).isEqualTo(Status.OUT_OF_SERVICE);
      assertThat(detail(down)).containsEntry("recentItems", 3L).containsEntry("recentFailureRatio", 1.0);

      failing.set(false); // the outage ends; no traffic comes
      now.addAndGet(Duration.ofSeconds(31).toNanos()); // the first two failures are 61 s old, the third 31 s
      Health partly = health.health();
      assertThat(detail(partly)).containsEntry("recentItems", 1L);
      assertThat(partly.getStatus()).isEqualTo(Status.UP); // 1 item is below failure-min-items

      now.addAndGet(Duration.ofSeconds(30).toNanos());
      Health up = health.health();
      assertThat(up.getStatus()).isEqualTo(Status.UP);
      assertThat(detail(up)).containsEntry("recentItems", 0L).containsEntry("recentFailureRatio", 0.0)
          .containsKey("lastFailure");
    });
  }

  @Test
  void aWindowOfCenturies_countsTheFailuresInIt() {
    runner.withPropertyValues("ringbatch.health.failure-window=106752d").run(context -> {
      BatcherHealthIndicator health = new BatcherHealthIndicator(context.getBean(BatcherFactory.class),
          context.getBean(BatcherLifecycle.class), context.getBean(BatcherProperties.class).getHealth(),
          System::nanoTime);
      Batcher<Integer, Void> orders = context.getBean(BatcherFactory.class).create("orders",
          (Batch<Integer, Void> batch) -> {
            throw new IllegalStateException("database down");
          });
      for (int i = 0; i < 3; i++) {
        orders.submit(i).handle((v, e) -> null).get(10, TimeUnit.SECONDS);
      }
      Health down = health.health();
      assertThat(detail(down)).containsEntry("recentItems", 3L).containsEntry("recentFailureRatio", 1.0);
      assertThat(down.getStatus()).isEqualTo(Status.OUT_OF_SERVICE);
    });
  }

  @Test
  void window_unitDefaultsToSeconds() {
    runner.withPropertyValues("ringbatch.health.failure-window=20")
        .run(context -> assertThat(context.getBean(BatcherProperties.class).getHealth().getFailureWindow())
            .isEqualTo(Duration.ofSeconds(20)));
  }

  @Test
  void window_zero_failsStartupNamingIt() {
    runner.withConfiguration(AutoConfigurations.of(BatcherHealthContributorAutoConfiguration.class))
        .withPropertyValues("ringbatch.health.failure-window=0s")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .hasMessage("Property ringbatch.health.failure-window with value 'PT0S' is invalid: "
                + "failure-window must be positive but was PT0S"));
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> detail(Health health) {
    return (Map<String, Object>) health.getDetails().get("orders");
  }
}
