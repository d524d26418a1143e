package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** Bad {@code ringbatch.*} values that fail startup, naming the property (issue 21). */
class StartupValidationTest {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class));

  @Test
  void shutdownTimeout_negative_failsStartupNamingTheProperty() {
    runner.withPropertyValues("ringbatch.shutdown-timeout=-5s")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .isInstanceOf(InvalidConfigurationPropertyValueException.class)
            .hasMessage("Property ringbatch.shutdown-timeout with value 'PT-5S' is invalid: "
                + "shutdown-timeout must be positive but was PT-5S"));
  }

  @Test
  void shutdownTimeout_zero_failsStartupNamingTheProperty() {
    runner.withPropertyValues("ringbatch.shutdown-timeout=0s")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .isInstanceOf(InvalidConfigurationPropertyValueException.class)
            .hasMessage("Property ringbatch.shutdown-timeout with value 'PT0S' is invalid: "
                + "shutdown-timeout must be positive but was PT0S"));
  }

  @Test
  void shutdownTimeout_positive_starts() {
    runner.withPropertyValues("ringbatch.shutdown-timeout=1ms")
        .run(context -> assertThat(context).hasNotFailed().hasSingleBean(BatcherLifecycle.class));
  }
}
