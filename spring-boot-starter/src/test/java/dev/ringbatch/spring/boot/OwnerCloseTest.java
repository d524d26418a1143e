package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * A batcher its owner closes while the application runs is deregistered: gone from the health, the endpoint,
 * the meters and the factory, its name free again, the application's health unaffected (issue 21 item 6).
 */
@ExtendWith(OutputCaptureExtension.class)
class OwnerCloseTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class,
          BatcherHealthContributorAutoConfiguration.class, BatchersEndpointAutoConfiguration.class,
          BatcherMetricsAutoConfiguration.class, MetricsAutoConfiguration.class,
          SimpleMetricsExportAutoConfiguration.class))
      .withPropertyValues("management.endpoints.web.exposure.include=batchers");

  @Configuration(proxyBeanMethods = false)
  static class OrdersBean {
    @Bean
    Batcher<String, Void> orders(BatcherFactory batchers) {
      return batchers.create("orders", BatchSink.noResult(items -> { }));
    }
  }

  @Test
  void runtimeBatcherClosedByItsOwner_deregistered_healthStaysUp(CapturedOutput output) {
    runner.withUserConfiguration(OrdersBean.class).run(context -> {
      BatcherFactory factory = context.getBean(BatcherFactory.class);
      AtomicInteger sinkClosed = new AtomicInteger();
      Batcher<String, Void> tenant = factory.create("tenant-1", new ClosingSink(sinkClosed));
      tenant.submit("one").get();
      HealthIndicator health = context.getBean("ringbatchHealthIndicator", HealthIndicator.class);
      BatchersEndpoint endpoint = context.getBean(BatchersEndpoint.class);
      MeterRegistry registry = context.getBean(MeterRegistry.class);
      assertThat(health.health().getDetails()).containsKeys("orders", "tenant-1");
      assertThat(registry.find("ringbatch.items").tag("name", "tenant-1").meters()).isNotEmpty();

      tenant.close(WAIT);

      Health after = health.health();
      assertThat(after.getStatus()).isEqualTo(Status.UP);
      assertThat(after.getDetails()).containsOnlyKeys("orders");
      assertThat(endpoint.batchers()).containsOnlyKeys("orders");
      assertThat(registry.find("ringbatch.items").tag("name", "tenant-1").meters()).isEmpty();
      assertThat(registry.find("ringbatch.items").tag("name", "orders").meters()).isNotEmpty();
      assertThat(factory.created()).extracting(Batcher::name).containsExactly("orders");
      assertThat(sinkClosed).hasValue(1);
      assertThat(output).contains("ringbatch batcher 'tenant-1' closed by its owner and deregistered:"
          + " CloseReport{drained=true, written=1");

      Batcher<String, Void> again = factory.create("tenant-1", BatchSink.noResult(items -> { }));
      assertThat(again.submit("two")).succeedsWithin(WAIT);
      assertThat(endpoint.batchers()).containsOnlyKeys("orders", "tenant-1");
    });
  }

  @Test
  void beanBatcherClosedByItsOwner_deregistered_healthStaysUp() {
    runner.withUserConfiguration(OrdersBean.class).run(context -> {
      Batcher<?, ?> orders = context.getBean(Batcher.class);
      HealthIndicator health = context.getBean("ringbatchHealthIndicator", HealthIndicator.class);

      orders.close(WAIT);

      Health after = health.health();
      assertThat(after.getStatus()).isEqualTo(Status.UP);
      assertThat(after.getDetails()).isEmpty();
      assertThat(context.getBean(BatchersEndpoint.class).batchers()).isEmpty();
    });
  }

  /** A sink the factory owns: it closes it when the batcher is deregistered. */
  private record ClosingSink(AtomicInteger closed) implements BatchSink<String, Void>, AutoCloseable {
    @Override
    public void write(dev.ringbatch.Batch<String, Void> batch) {
      batch.completeRemaining(null);
    }

    @Override
    public void close() {
      closed.incrementAndGet();
    }
  }
}
