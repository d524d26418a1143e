package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.Adaptive;
import dev.ringbatch.BatchLimits;
import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.OverflowPolicy;
import dev.ringbatch.WaitMode;
import dev.ringbatch.sink.JdbcBatchSink;
import io.micrometer.core.instrument.MeterRegistry;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.lang.reflect.Proxy;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

class BatcherAutoConfigurationTest {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class,
          BatcherMetricsAutoConfiguration.class))
      .withUserConfiguration(OrdersConfiguration.class);

  @Configuration(proxyBeanMethods = false)
  static class OrdersConfiguration {
    @Bean
    Batcher<String, Void> orders(BatcherFactory batchers) {
      return batchers.create("orders", BatchSink.noResult(items -> { }));
    }
  }

  @Test
  void properties_bindOntoTheBatcherConfig() {
    runner.withPropertyValues("ringbatch.batchers.orders.ring-size=64",
            "ringbatch.batchers.orders.max-batch-size=32", "ringbatch.batchers.orders.overflow-policy=drop",
            "ringbatch.batchers.orders.submit-timeout=250ms", "ringbatch.batchers.orders.linger=2ms",
            "ringbatch.defaults.wait-mode=yielding")
        .run(context -> {
          Batcher<?, ?> orders = context.getBean(Batcher.class);
          assertThat(orders.config().ringSize()).isEqualTo(64);
          assertThat(orders.config().limits().maxBatchSize()).isEqualTo(32);
          assertThat(orders.config().limits().linger()).isEqualTo(Duration.ofMillis(2));
          assertThat(orders.config().overflowPolicy()).isEqualTo(OverflowPolicy.DROP);
          assertThat(orders.config().submitTimeout()).isEqualTo(Duration.ofMillis(250));
          assertThat(orders.config().waitMode()).isEqualTo(WaitMode.YIELDING);
        });
  }

  @Test
  void badProperty_failsStartupNamingPropertyAndValue() {
    runner.withPropertyValues("ringbatch.batchers.orders.ring-size=1000")
        .run(context -> {
          assertThat(context).hasFailed();
          assertThat(context.getStartupFailure()).rootCause()
              .isInstanceOf(InvalidConfigurationPropertyValueException.class)
              .hasMessageContaining("ringbatch.batchers.orders.ring-size")
              .hasMessageContaining("ringSize must be a positive power of two but was 1000");
        });
  }

  @Test
  void badPropertyOfUnusedBatcher_stillFailsStartup() {
    runner.withPropertyValues("ringbatch.batchers.typo.linger=-1s")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .hasMessageContaining("ringbatch.batchers.typo.linger")
            .hasMessageContaining("linger must not be negative but was PT-1S"));
  }

  @Test
  void batchLargerThanRing_failsStartupWithTheRule() {
    runner.withPropertyValues("ringbatch.batchers.orders.ring-size=64",
            "ringbatch.batchers.orders.max-batch-size=128")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .isInstanceOf(InvalidConfigurationPropertyValueException.class)
            .hasMessageContaining("ringbatch.batchers.orders.max-batch-size")
            .hasMessageContaining("maxBatchSize (128) must not exceed ringSize (64)"));
  }

  @Test
  void aRingAloneCapsTheTunedBatch_andALingerFixesTheLimits() {
    runner.withPropertyValues("ringbatch.batchers.orders.ring-size=128")
        .run(context -> {
          Batcher<?, ?> orders = context.getBean(Batcher.class);
          assertThat(orders.config().adaptive()).isEqualTo(Adaptive.throughput());
          assertThat(orders.config().limits().maxBatchSize()).isEqualTo(128);
        });
    runner.withPropertyValues("ringbatch.batchers.orders.linger=0ms")
        .run(context -> {
          Batcher<?, ?> orders = context.getBean(Batcher.class);
          assertThat(orders.config().adaptive()).isNull();
          assertThat(orders.config().limits()).isEqualTo(BatchLimits.ofDefaults());
        });
  }

  @Test
  void ringSmallerThanTheFixedLimitsBatch_failsStartupNamingTheRingSize() {
    runner.withPropertyValues("ringbatch.batchers.orders.ring-size=128", "ringbatch.batchers.orders.linger=0ms")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .isInstanceOf(InvalidConfigurationPropertyValueException.class)
            .hasMessage("Property ringbatch.batchers.orders.ring-size with value '128' is invalid: "
                + "maxBatchSize (256) must not exceed ringSize (128)"));
  }

  @Test
  void metrics_boundWhenARegistryExists() {
    runner.withConfiguration(AutoConfigurations.of(MetricsAutoConfiguration.class,
            SimpleMetricsExportAutoConfiguration.class))
        .run(context -> {
          MeterRegistry registry = context.getBean(MeterRegistry.class);
          @SuppressWarnings("unchecked")
          Batcher<String, Void> orders = context.getBean(Batcher.class);
          orders.submit("one").join();
          assertThat(registry.get("ringbatch.items").tag("name", "orders").tag("result", "written")
              .functionCounter().count()).isEqualTo(1);
          assertThat(registry.get("ringbatch.batch.size").tag("name", "orders").summary().count()).isEqualTo(1);
        });
  }

  @Test
  void metrics_absentWithoutARegistry() {
    runner.run(context -> {
      assertThat(context).hasNotFailed().doesNotHaveBean(MeterRegistry.class);
      assertThat(context).hasSingleBean(BatcherFactory.class);
    });
  }

  @Test
  void metrics_disabledByProperty() {
    runner.withConfiguration(AutoConfigurations.of(MetricsAutoConfiguration.class,
            SimpleMetricsExportAutoConfiguration.class))
        .withPropertyValues("ringbatch.metrics.enabled=false")
        .run(context -> assertThat(context.getBean(MeterRegistry.class).find("ringbatch.items").meters())
            .isEmpty());
  }

  @Test
  void starter_disabledByProperty() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class))
        .withPropertyValues("ringbatch.enabled=false")
        .run(context -> assertThat(context).doesNotHaveBean(BatcherFactory.class)
            .doesNotHaveBean(BatcherLifecycle.class));
  }

  /**
   * A batch that lingers until shutdown, written through the auto-configured (Hikari) DataSource. The batcher
   * reaches the DataSource lazily, so the DataSource is created after the batcher and Spring's default
   * destruction order (reverse creation) would close it first: only a drain before any bean is destroyed can
   * write the lingering batch.
   */
  @Configuration(proxyBeanMethods = false)
  static class LingeringEventsConfiguration {
    static final AtomicReference<CompletableFuture<Integer>> PENDING = new AtomicReference<>();

    @Bean
    Batcher<Long, Integer> events(BatcherFactory batchers, ObjectProvider<DataSource> dataSource) {
      DataSource lazy = (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(),
          new Class<?>[] {DataSource.class}, (proxy, method, args) -> method.invoke(dataSource.getObject(), args));
      return batchers.create("events", JdbcBatchSink.<Long>of(lazy, "INSERT INTO events (id) VALUES (?)",
          (ps, id) -> ps.setLong(1, id)));
    }
  }

  @Test
  void shutdown_batcherDrainsBeforeTheDataSourceCloses() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, BatcherAutoConfiguration.class))
        .withUserConfiguration(LingeringEventsConfiguration.class)
        .withPropertyValues("spring.datasource.url=jdbc:h2:mem:shutdown;DB_CLOSE_DELAY=-1",
            "ringbatch.batchers.events.linger=10m", "ringbatch.batchers.events.max-batch-size=100")
        .run(context -> {
          @SuppressWarnings("unchecked")
          Batcher<Long, Integer> events = context.getBean(Batcher.class);
          try (Connection c = context.getBean(DataSource.class).getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE events (id BIGINT PRIMARY KEY)");
          }
          LingeringEventsConfiguration.PENDING.set(events.submit(42L));
          assertThat(LingeringEventsConfiguration.PENDING.get()).isNotDone(); // held by the 10-minute linger
        });

    // The context is closed: the lifecycle drained the batcher while the pool was still open.
    assertThat(LingeringEventsConfiguration.PENDING.get()).isCompletedWithValue(1);
  }
}
