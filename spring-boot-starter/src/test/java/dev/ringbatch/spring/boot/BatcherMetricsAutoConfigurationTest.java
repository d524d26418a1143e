package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.micrometer.BatcherMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

class BatcherMetricsAutoConfigurationTest {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(MetricsAutoConfiguration.class,
          SimpleMetricsExportAutoConfiguration.class, BatcherAutoConfiguration.class,
          BatcherMetricsAutoConfiguration.class));

  /** A batcher from the factory that the application also binds itself, the way docs/metrics.md shows. */
  @Configuration(proxyBeanMethods = false)
  static class SelfMonitoredConfiguration {
    @Bean
    Batcher<String, Void> orders(BatcherFactory batchers, MeterRegistry registry) {
      return BatcherMetrics.monitor(registry, batchers.create("orders", BatchSink.noResult(items -> { })));
    }
  }

  /** A batcher made with Batcher.of, not the factory: a plain bean. */
  @Configuration(proxyBeanMethods = false)
  static class PlainBeanConfiguration {
    @Bean(destroyMethod = "")
    Batcher<String, Void> audit() {
      return Batcher.of("audit", dev.ringbatch.BatcherConfig.ofDefaults(), BatchSink.noResult(items -> { }));
    }
  }

  @Test
  void batcherCreatedAfterStartup_getsItsMetersOnce() {
    runner.run(context -> {
      MeterRegistry registry = context.getBean(MeterRegistry.class);
      Batcher<String, Void> late = context.getBean(BatcherFactory.class)
          .create("late", BatchSink.noResult(items -> { }));
      for (int i = 0; i < 10; i++) {
        late.submit("item " + i).join();
      }

      assertThat(registry.find("ringbatch.batch.size").tag("name", "late").summaries()).hasSize(1);
      assertThat(registry.get("ringbatch.batch.size").tag("name", "late").summary().count())
          .isEqualTo(late.stats().batches());
      assertThat(registry.get("ringbatch.items").tag("name", "late").tag("result", "written").functionCounter()
          .count()).isEqualTo(10);
      late.close();
      assertThat(registry.find("ringbatch.items").tag("name", "late").meters()).isEmpty();
    });
  }

  @Test
  void itemWaits_measuredByDefault_andOffByProperty() {
    runner.run(context -> {
      MeterRegistry registry = context.getBean(MeterRegistry.class);
      Batcher<String, Void> timed = context.getBean(BatcherFactory.class)
          .create("timed", BatchSink.noResult(items -> { }));
      for (int i = 0; i < 10; i++) {
        timed.submit("item " + i).join();
      }
      assertThat(registry.get("ringbatch.item.wait").tag("name", "timed").timer().count()).isEqualTo(10);
    });
    runner.withPropertyValues("ringbatch.metrics.item-waits=false").run(context -> {
      MeterRegistry registry = context.getBean(MeterRegistry.class);
      Batcher<String, Void> untimed = context.getBean(BatcherFactory.class)
          .create("untimed", BatchSink.noResult(items -> { }));
      untimed.submit("item").join();
      assertThat(registry.find("ringbatch.item.wait").tag("name", "untimed").meters()).isEmpty();
      assertThat(registry.get("ringbatch.batch.size").tag("name", "untimed").summary().count()).isEqualTo(1);
    });
  }

  @Test
  void itemWaits_honourBootsDistributionProperties_likeHikarisAcquireTimer() {
    runner.withPropertyValues("management.metrics.distribution.percentiles-histogram.ringbatch.item.wait=true",
        "management.metrics.distribution.slo.ringbatch.item.wait=50ms,1s").run(context -> {
          MeterRegistry registry = context.getBean(MeterRegistry.class);
          Batcher<String, Void> timed = context.getBean(BatcherFactory.class)
              .create("histogram", BatchSink.noResult(items -> { }));
          for (int i = 0; i < 10; i++) {
            timed.submit("item " + i).join();
          }
          var snapshot = registry.get("ringbatch.item.wait").tag("name", "histogram").timer().takeSnapshot();
          assertThat(snapshot.count()).isEqualTo(10);
          assertThat(snapshot.histogramCounts()).as("the SLO buckets of the properties")
              .extracting(bucket -> bucket.bucket(java.util.concurrent.TimeUnit.MILLISECONDS))
              .contains(50.0, 1000.0);
        });
  }

  @Test
  void applicationAlsoMonitoring_countsEachBatchOnce() {
    runner.withUserConfiguration(SelfMonitoredConfiguration.class).run(context -> {
      MeterRegistry registry = context.getBean(MeterRegistry.class);
      @SuppressWarnings("unchecked")
      Batcher<String, Void> orders = context.getBean(Batcher.class);
      for (int i = 0; i < 10; i++) {
        orders.submit("item " + i).join();
      }

      assertThat(registry.get("ringbatch.batch.size").tag("name", "orders").summary().count())
          .isEqualTo(orders.stats().batches());
      assertThat(registry.get("ringbatch.batch.size").tag("name", "orders").summary().totalAmount())
          .isEqualTo(10);
    });
  }

  @Test
  void plainBatcherBean_getsMeters() {
    runner.withUserConfiguration(PlainBeanConfiguration.class).run(context -> {
      MeterRegistry registry = context.getBean(MeterRegistry.class);
      @SuppressWarnings("unchecked")
      Batcher<String, Void> audit = context.getBean(Batcher.class);
      audit.submit("one").join();

      assertThat(registry.get("ringbatch.items").tag("name", "audit").tag("result", "written").functionCounter()
          .count()).isEqualTo(1);
    });
  }

  /** The registry closes after the batchers: a push registry's last publication must still find their counts. */
  @Test
  void batcherClosedByTheShutdown_keepsItsMetersWithItsFinalCounts() {
    runner.run(context -> {
      MeterRegistry registry = context.getBean(MeterRegistry.class);
      Batcher<String, Void> orders = context.getBean(BatcherFactory.class)
          .create("orders", BatchSink.noResult(items -> { }));
      for (int i = 0; i < 3; i++) {
        orders.submit("item " + i);
      }

      context.stop(); // the shutdown's close of every batcher, before the registry is destroyed

      assertThat(orders.isClosed()).isTrue();
      assertThat(registry.get("ringbatch.items").tag("name", "orders").tag("result", "written").functionCounter()
          .count()).isEqualTo(3);
    });
  }
}
