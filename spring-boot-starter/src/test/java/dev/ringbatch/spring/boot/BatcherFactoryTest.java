package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.RetryPolicy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

class BatcherFactoryTest {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class));

  @Configuration(proxyBeanMethods = false)
  static class Customizers {
    @Bean
    BatcherConfigCustomizer ordersOnly() {
      return BatcherConfigCustomizer.of("orders", b -> b.ringSize(64).maxBatchSize(8));
    }
  }

  @Test
  void customizer_changesItsBatcherOnly() {
    runner.withUserConfiguration(Customizers.class)
        .withPropertyValues("ringbatch.defaults.ring-size=256")
        .run(context -> {
          BatcherFactory factory = context.getBean(BatcherFactory.class);
          Batcher<String, Void> orders = factory.create("orders", BatchSink.noResult(items -> { }));
          Batcher<String, Void> audit = factory.create("audit", BatchSink.noResult(items -> { }));

          assertThat(orders.config().ringSize()).isEqualTo(64);
          assertThat(orders.config().limits().maxBatchSize()).isEqualTo(8);
          assertThat(audit.config().ringSize()).isEqualTo(256);
          assertThat(audit.config().limits().maxBatchSize()).isEqualTo(256); // its ring caps the tuned batch
        });
  }

  @Test
  void retryProperties_buildTheRetryPolicy_overTheDefaults() {
    runner.withPropertyValues("ringbatch.defaults.retry.initial-backoff=10ms",
            "ringbatch.batchers.orders.retry.max-attempts=5", "ringbatch.batchers.orders.retry.max-backoff=1s")
        .run(context -> {
          RetryPolicy retry = context.getBean(BatcherFactory.class).config("orders").retryPolicy();
          assertThat(retry.maxAttempts()).isEqualTo(5);
          assertThat(retry.initialBackoff()).isEqualTo(Duration.ofMillis(10));
          assertThat(retry.maxBackoff()).isEqualTo(Duration.ofSeconds(1));
          assertThat(context.getBean(BatcherFactory.class).config("audit").retryPolicy().maxAttempts()).isEqualTo(3);
        });
  }

  @Test
  void noRetryProperty_noRetries() {
    runner.run(context -> assertThat(context.getBean(BatcherFactory.class).config("orders").retryPolicy())
        .isSameAs(RetryPolicy.none()));
  }

  @Test
  void badRetryProperty_failsStartupNamingIt() {
    runner.withPropertyValues("ringbatch.batchers.orders.retry.max-attempts=0")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .hasMessage("Property ringbatch.batchers.orders.retry.max-attempts with value '0' is invalid: "
                + "maxAttempts must be from 1 to 100 but was 0"));
  }

  @Test
  void blockWithoutTimeout_waitsForever() {
    runner.withPropertyValues("ringbatch.defaults.submit-timeout=2s",
            "ringbatch.batchers.orders.block-without-timeout=true")
        .run(context -> {
          BatcherFactory factory = context.getBean(BatcherFactory.class);
          assertThat(factory.config("orders").submitTimeout()).isEqualTo(BatcherConfig.NO_TIMEOUT);
          assertThat(factory.config("audit").submitTimeout()).isEqualTo(Duration.ofSeconds(2));
        });
  }

  @Test
  void blockWithoutTimeout_withSubmitTimeout_failsStartup() {
    runner.withPropertyValues("ringbatch.batchers.orders.submit-timeout=2s",
            "ringbatch.batchers.orders.block-without-timeout=true")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .isInstanceOf(InvalidConfigurationPropertyValueException.class)
            .hasMessage("Property ringbatch.batchers.orders.block-without-timeout with value 'true' is invalid: "
                + "block-without-timeout excludes submit-timeout, which is set to PT2S at "
                + "ringbatch.batchers.orders.submit-timeout"));
  }

  @Test
  void virtualConsumerThread_onThisJdk() {
    boolean virtualThreads = Runtime.version().feature() >= 21;
    runner.withPropertyValues("ringbatch.batchers.orders.consumer-thread=virtual")
        .run(context -> {
          if (virtualThreads) {
            AtomicReference<Thread> consumer = new AtomicReference<>();
            Batcher<String, Void> orders = context.getBean(BatcherFactory.class)
                .create("orders", BatchSink.noResult(items -> consumer.set(Thread.currentThread())));
            orders.submit("one").join();
            assertThat(consumer.get().getName()).isEqualTo("ringbatch-orders-0");
            assertThat(Thread.class.getMethod("isVirtual").invoke(consumer.get())).isEqualTo(true);
          } else {
            assertThat(context.getStartupFailure()).rootCause()
                .hasMessage("Property ringbatch.batchers.orders.consumer-thread with value 'virtual' is invalid: "
                    + "virtual threads need Java 21 or later; this is Java " + Runtime.version().feature());
          }
        });
  }

  @Test
  void shards_createSharded_makesOneSinkPerShard() {
    runner.withPropertyValues("ringbatch.batchers.orders.shards=3").run(context -> {
      BatcherFactory factory = context.getBean(BatcherFactory.class);
      List<Integer> shardsMade = new CopyOnWriteArrayList<>();
      Batcher<String, Void> orders = factory.createSharded("orders", String::length, shard -> {
        shardsMade.add(shard);
        return BatchSink.noResult(items -> { });
      });
      orders.submit("one").join();

      assertThat(orders.shardStats()).hasSize(3);
      assertThat(shardsMade).containsExactlyInAnyOrder(0, 1, 2);
      assertThatThrownBy(() -> factory.create("orders", BatchSink.noResult(items -> { })))
          .isExactlyInstanceOf(IllegalStateException.class)
          .hasMessage("ringbatch.batchers.orders.shards is 3: create batcher 'orders' with BatcherFactory.createSharded");
    });
  }

  @Test
  void shards_zero_failsStartup() {
    runner.withPropertyValues("ringbatch.batchers.orders.shards=0")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .hasMessage("Property ringbatch.batchers.orders.shards with value '0' is invalid: "
                + "shards must be at least 1 but was 0"));
  }

  /** Creates a batcher with a closeable sink, then fails the startup: the lifecycle never starts. */
  @Configuration(proxyBeanMethods = false)
  static class FailingStartup {
    static final AtomicReference<Batcher<String, Void>> CREATED = new AtomicReference<>();
    static final AtomicBoolean SINK_CLOSED = new AtomicBoolean();

    interface CloseableSink extends BatchSink<String, Void>, AutoCloseable {
      @Override
      void close();
    }

    @Bean
    Batcher<String, Void> orders(BatcherFactory batchers) {
      CloseableSink sink = new CloseableSink() {
        @Override
        public void write(dev.ringbatch.Batch<String, Void> batch) {
          batch.completeRemaining(null);
        }

        @Override
        public void close() {
          SINK_CLOSED.set(true);
        }
      };
      CREATED.set(batchers.create("orders", sink));
      return CREATED.get();
    }

    @Bean
    String broken(Batcher<String, Void> orders) {
      throw new IllegalStateException("startup fails after the batcher was created");
    }
  }

  @Test
  void failedStartup_factoryClosesWhatItCreated() {
    runner.withUserConfiguration(FailingStartup.class).run(context -> assertThat(context).hasFailed());

    assertThat(FailingStartup.CREATED.get().isClosed()).isTrue();
    assertThat(FailingStartup.SINK_CLOSED).isTrue();
  }
}
