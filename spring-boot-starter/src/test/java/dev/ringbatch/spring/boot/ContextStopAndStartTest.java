package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** {@code ConfigurableApplicationContext.stop()} then {@code start()}: batchers stay closed, and say so. */
class ContextStopAndStartTest {
  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class,
          BatcherHealthContributorAutoConfiguration.class));

  @Configuration(proxyBeanMethods = false)
  static class FactoryBatcher {
    @Bean
    Batcher<String, Void> orders(BatcherFactory batchers) {
      return batchers.create("orders", BatchSink.noResult(items -> { }));
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class HandMadeBatcher {
    @Bean
    Batcher<String, Void> audit() {
      return Batcher.of("audit", BatcherConfig.ofDefaults(), BatchSink.noResult(items -> { }));
    }
  }

  @Test
  void aBatcherTheStopClosed_isOutOfServiceAfterTheContextStartsAgain() {
    runner.withUserConfiguration(FactoryBatcher.class).run(context -> {
      @SuppressWarnings("unchecked")
      Batcher<String, Void> orders = context.getBean("orders", Batcher.class);
      HealthIndicator health = context.getBean("ringbatchHealthIndicator", HealthIndicator.class);

      context.stop();
      context.start();
      CompletableFuture<Void> refused = orders.submit("after the restart");

      assertThat(refused).failsWithin(Duration.ofSeconds(5)).withThrowableOfType(java.util.concurrent.ExecutionException.class);
      assertThat(health.health().getStatus()).isEqualTo(Status.OUT_OF_SERVICE);
      assertThat(health.health().getDetails().get("orders").toString()).contains("closed by the shutdown");
    });
  }

  @Test
  void aHandMadeBatcherBean_letsTheContextStartAgain() {
    runner.withUserConfiguration(HandMadeBatcher.class).run(context -> {
      context.stop();
      assertThatCode(context::start).doesNotThrowAnyException();
    });
  }

  /**
   * Spring 7's {@code pause()} / {@code restart()} stop and start again every pauseable lifecycle; the batchers' is
   * not pauseable (its stop closes them for good): after a restart they still take items and the health stays up.
   */
  @Test
  void contextRestart_batchersStillTakeItems_andHealthStaysUp() {
    runner.withUserConfiguration(FactoryBatcher.class).run(context -> {
      @SuppressWarnings("unchecked")
      Batcher<String, Void> orders = context.getBean("orders", Batcher.class);
      HealthIndicator health = context.getBean("ringbatchHealthIndicator", HealthIndicator.class);

      context.restart(); // pause() then start() of the pauseable lifecycles

      assertThat(orders.submit("after the restart")).succeedsWithin(Duration.ofSeconds(5));
      assertThat(health.health().getStatus()).isEqualTo(Status.UP);
    });
  }
}
