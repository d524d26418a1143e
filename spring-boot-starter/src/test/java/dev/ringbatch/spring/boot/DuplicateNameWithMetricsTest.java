package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * DuplicateNameTest's hand-made bean of a factory batcher's name, with Micrometer on the class path (as every
 * Actuator application has it): the startup must still fail with the starter's refusal naming the name.
 */
class DuplicateNameWithMetricsTest {
  private static final String MESSAGE = "a batcher named 'orders' already exists; batcher names must be unique:"
      + " they key its properties, meters, health and batchers endpoint entry";

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(MetricsAutoConfiguration.class,
          SimpleMetricsExportAutoConfiguration.class, BatcherAutoConfiguration.class,
          BatcherMetricsAutoConfiguration.class));

  @Configuration(proxyBeanMethods = false)
  static class FactoryAndHandMade {
    @Bean
    Batcher<String, Void> orders(BatcherFactory batchers) {
      return batchers.create("orders", BatchSink.noResult(items -> { }));
    }

    @Bean
    Batcher<String, Void> handMade() {
      return Batcher.of("orders", BatcherConfig.ofDefaults(), BatchSink.noResult(items -> { }));
    }
  }

  @Test
  void handMadeBeanOfAFactoryBatchersName_failsStartupNamingTheName_withMetricsToo() {
    runner.withUserConfiguration(FactoryAndHandMade.class)
        .run(context -> {
          Throwable failure = context.getStartupFailure();
          assertThat(failure).isNotNull();
          while (failure.getCause() != null) {
            failure = failure.getCause(); // the innermost: DuplicateNameTest asserts it as rootCause()
          }
          assertThat(failure).isInstanceOf(IllegalStateException.class).hasMessage(MESSAGE);
        });
  }
}
