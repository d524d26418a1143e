package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.Batch;
import dev.ringbatch.Batcher;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthIndicator;
import org.springframework.boot.actuate.health.Status;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** The {@code ringbatch} health in Spring Boot 3's health types: statuses, details and its switch. */
class Boot3HealthIndicatorTest {
  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class,
          BatcherHealthContributorAutoConfiguration.class))
      .withPropertyValues("ringbatch.batchers.orders.ring-size=4", "ringbatch.batchers.orders.max-batch-size=1",
          "ringbatch.batchers.orders.overflow-policy=drop", "ringbatch.health.ring-full-for=0s");

  @Test
  void ringFull_degradedStatusOfTheProperty_thenUpOnceItDrains() {
    runner.withPropertyValues("ringbatch.health.degraded-status=DEGRADED").run(context -> {
      CountDownLatch gate = new CountDownLatch(1);
      CountDownLatch inSink = new CountDownLatch(1);
      Batcher<Integer, Void> orders = context.getBean(BatcherFactory.class).create("orders",
          (Batch<Integer, Void> batch) -> {
            inSink.countDown();
            gate.await(10, TimeUnit.SECONDS);
            batch.completeRemaining(null);
          });
      HealthIndicator health = context.getBean("ringbatchHealthIndicator", HealthIndicator.class);
      assertThat(health.health().getStatus()).isEqualTo(Status.UP);

      orders.submit(0);
      assertThat(inSink.await(10, TimeUnit.SECONDS)).isTrue();
      for (int i = 1; i <= 4; i++) {
        orders.submit(i);
      }
      Health full = health.health();
      assertThat(full.getStatus()).isEqualTo(new Status("DEGRADED"));
      assertThat(detail(full, "orders")).containsEntry("ringRemaining", 0L).containsEntry("status", "DEGRADED")
          .containsKey("reason");

      gate.countDown();
      orders.flush().get(10, TimeUnit.SECONDS);
      assertThat(health.health().getStatus()).isEqualTo(Status.UP);
      orders.close(Duration.ofSeconds(10));
    });
  }

  @Test
  void shutdown_closedBatchersAreOutOfService() {
    runner.run(context -> {
      context.getBean(BatcherFactory.class).create("orders",
          (Batch<Integer, Void> batch) -> batch.completeRemaining(null));
      HealthIndicator health = context.getBean("ringbatchHealthIndicator", HealthIndicator.class);
      context.getBean(BatcherLifecycle.class).stop();

      Health closed = health.health();
      assertThat(closed.getStatus()).isEqualTo(Status.OUT_OF_SERVICE);
      assertThat(detail(closed, "orders")).containsEntry("reason", "closed by the shutdown");
    });
  }

  @Test
  void switchedOff_noIndicator() {
    runner.withPropertyValues("management.health.ringbatch.enabled=false")
        .run(context -> assertThat(context).doesNotHaveBean("ringbatchHealthIndicator"));
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> detail(Health health, String batcher) {
    return (Map<String, Object>) health.getDetails().get(batcher);
  }
}
