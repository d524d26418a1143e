package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** A second batcher with a name already in use is refused, naming the name (issue 21 item 7). */
class DuplicateNameTest {
  private static final String MESSAGE = "a batcher named 'orders' already exists; batcher names must be unique:"
      + " they key its properties, meters, health and batchers endpoint entry";

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class));

  @Configuration(proxyBeanMethods = false)
  static class TwoOrders {
    @Bean
    Batcher<String, Void> orders(BatcherFactory batchers) {
      return batchers.create("orders", BatchSink.noResult(items -> { }));
    }

    @Bean
    Batcher<String, Void> moreOrders(BatcherFactory batchers) {
      return batchers.create("orders", BatchSink.noResult(items -> { }));
    }
  }

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
  void twoBeansOfOneName_failStartupNamingTheName() {
    runner.withUserConfiguration(TwoOrders.class).withPropertyValues("ringbatch.batchers.orders.ring-size=256")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .isInstanceOf(IllegalStateException.class).hasMessage(MESSAGE));
  }

  @Test
  void handMadeBeanOfAFactoryBatchersName_failsStartupNamingTheName() {
    runner.withUserConfiguration(FactoryAndHandMade.class)
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .isInstanceOf(IllegalStateException.class).hasMessage(MESSAGE));
  }

  @Test
  void runtimeCreateOfATakenName_isRefused_andTheOriginalKeepsWorking() {
    runner.run(context -> {
      BatcherFactory factory = context.getBean(BatcherFactory.class);
      Batcher<String, Void> original = factory.create("orders", BatchSink.noResult(items -> { }));

      assertThatThrownBy(() -> factory.createAsync("orders", batch -> null))
          .isInstanceOf(IllegalStateException.class).hasMessage(MESSAGE);
      assertThatThrownBy(() -> factory.createSharded("orders", shard -> BatchSink.<String>noResult(items -> { })))
          .isInstanceOf(IllegalStateException.class).hasMessage(MESSAGE);

      assertThat(factory.created()).containsExactly(original);
      assertThat(original.submit("one")).succeedsWithin(java.time.Duration.ofSeconds(10));
    });
  }

  @Test
  void nameOfAFailedCreate_isFreeAgain() {
    runner.run(context -> {
      BatcherFactory factory = context.getBean(BatcherFactory.class);
      assertThatThrownBy(() -> factory.createSharded("orders", shard -> {
        throw new IllegalStateException("no sink for shard " + shard);
      })).hasMessage("no sink for shard 0");

      Batcher<String, Void> orders = factory.create("orders", BatchSink.noResult(items -> { }));
      assertThat(factory.created()).containsExactly(orders);
    });
  }
}
