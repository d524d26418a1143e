package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.ringbatch.Batch;
import dev.ringbatch.Batcher;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

class BatcherHealthIndicatorTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class,
          BatcherHealthContributorAutoConfiguration.class))
      .withPropertyValues("ringbatch.batchers.orders.ring-size=4", "ringbatch.batchers.orders.max-batch-size=1",
          "ringbatch.batchers.orders.overflow-policy=drop");

  @Test
  void stalledSink_upThenOutOfServiceThenUp_thenGoneOnceItsOwnerClosesIt() {
    runner.withPropertyValues("ringbatch.health.ring-full-for=0s").run(context -> {
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
      assertThat(full.getStatus()).isEqualTo(Status.OUT_OF_SERVICE);
      assertThat(detail(full, "orders")).containsEntry("ringRemaining", 0L).containsEntry("inFlight", 5L)
          .containsEntry("status", "OUT_OF_SERVICE");

      gate.countDown();
      orders.flush().get(10, TimeUnit.SECONDS);
      assertThat(health.health().getStatus()).isEqualTo(Status.UP);

      orders.close(WAIT); // by its owner: deregistered (OwnerCloseTest), the health unaffected
      Health closed = health.health();
      assertThat(closed.getStatus()).isEqualTo(Status.UP);
      assertThat(closed.getDetails()).doesNotContainKey("orders");
    });
  }

  @Test
  void ringFull_degradedOnlyOnceItStaysFullForTheConfiguredTime() {
    runner.withPropertyValues("ringbatch.health.ring-full-for=5s", "ringbatch.health.degraded-status=DEGRADED")
        .run(context -> {
          AtomicLong now = new AtomicLong();
          BatcherHealthIndicator health = new BatcherHealthIndicator(context.getBean(BatcherFactory.class),
              context.getBean(BatcherLifecycle.class), context.getBean(BatcherProperties.class).getHealth(), now::get);
          CountDownLatch gate = new CountDownLatch(1);
          Batcher<Integer, Void> orders = context.getBean(BatcherFactory.class).create("orders",
              (Batch<Integer, Void> batch) -> {
                gate.await(10, TimeUnit.SECONDS);
                batch.completeRemaining(null);
              });
          try {
            orders.submit(0);
            await().atMost(WAIT).until(() -> orders.stats().remainingCapacity() == 4);
            for (int i = 1; i <= 4; i++) {
              orders.submit(i);
            }
            assertThat(health.health().getStatus()).isEqualTo(Status.UP);
            now.addAndGet(Duration.ofSeconds(4).toNanos());
            assertThat(health.health().getStatus()).isEqualTo(Status.UP);
            now.addAndGet(Duration.ofSeconds(1).toNanos());
            assertThat(health.health().getStatus()).isEqualTo(new Status("DEGRADED"));
          } finally {
            gate.countDown();
          }
        });
  }

  @Test
  void failureRatioAboveThreshold_degraded_andLastFailureShown_thenUpWhenSuccessesOutweighThem() {
    runner.withPropertyValues("ringbatch.health.failure-window=1m", "ringbatch.health.failure-ratio=0.5",
            "ringbatch.health.failure-min-items=3")
        .run(context -> {
          AtomicBoolean failing = new AtomicBoolean(true);
          Batcher<Integer, Void> orders = context.getBean(BatcherFactory.class).create("orders",
              (Batch<Integer, Void> batch) -> {
                if (failing.get()) {
                  throw new IllegalStateException("database down");
                }
                batch.completeRemaining(null);
              });
          HealthIndicator health = context.getBean("ringbatchHealthIndicator", HealthIndicator.class);
          for (int i = 0; i < 3; i++) {
            CompletableFuture<Void> f = orders.submit(i);
            f.handle((v, e) -> null).get(10, TimeUnit.SECONDS);
          }
          Health failingHealth = health.health();
          assertThat(failingHealth.getStatus()).isEqualTo(Status.OUT_OF_SERVICE);
          assertThat(detail(failingHealth, "orders")).containsEntry("recentFailureRatio", 1.0)
              .containsEntry("failed", 3L);
          assertThat((String) detail(failingHealth, "orders").get("lastFailure")).startsWith("1 of 1 items failed at ");

          failing.set(false);
          for (int i = 0; i < 4; i++) {
            orders.submit(i).get(10, TimeUnit.SECONDS);
          }
          assertThat(health.health().getStatus()).isEqualTo(Status.UP);
        });
  }

  @Test
  void failedBatch_fewerItemsThanFailureMinItems_staysUp_untilEnoughItemsFail() {
    runner.withPropertyValues("ringbatch.health.failure-min-items=3").run(context -> {
      Batcher<Integer, Void> orders = context.getBean(BatcherFactory.class).create("orders",
          (Batch<Integer, Void> batch) -> {
            throw new IllegalStateException("database down");
          });
      HealthIndicator health = context.getBean("ringbatchHealthIndicator", HealthIndicator.class);
      for (int i = 0; i < 2; i++) {
        orders.submit(i).handle((v, e) -> null).get(10, TimeUnit.SECONDS);
      }
      Health quiet = health.health();
      assertThat(quiet.getStatus()).isEqualTo(Status.UP);
      assertThat(detail(quiet, "orders")).containsEntry("recentFailureRatio", 1.0)
          .containsEntry("recentItems", 2L).containsKey("lastFailure");

      orders.submit(2).handle((v, e) -> null).get(10, TimeUnit.SECONDS);
      assertThat(health.health().getStatus()).isEqualTo(Status.OUT_OF_SERVICE);
    });
  }

  @Test
  void failureMinItemsBelowOne_failsStartupNamingIt() {
    runner.withPropertyValues("ringbatch.health.failure-min-items=0")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .hasMessage("Property ringbatch.health.failure-min-items with value '0' is invalid: "
                + "failure-min-items must be at least 1 but was 0"));
  }

  @Test
  void badHealthProperty_failsStartupNamingIt() {
    runner.withPropertyValues("ringbatch.health.failure-ratio=1.5")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .hasMessage("Property ringbatch.health.failure-ratio with value '1.5' is invalid: "
                + "failure-ratio must be from 0 to 1 but was 1.5"));
  }

  @Test
  void disabledByManagementProperty() {
    runner.withPropertyValues("management.health.ringbatch.enabled=false")
        .run(context -> assertThat(context).doesNotHaveBean("ringbatchHealthIndicator"));
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> detail(Health health, String batcher) {
    return (Map<String, Object>) health.getDetails().get(batcher);
  }
}
