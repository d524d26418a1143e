package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.autoconfigure.endpoint.EndpointAutoConfiguration;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

class BatchersEndpointTest {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(EndpointAutoConfiguration.class, BatcherAutoConfiguration.class,
          BatchersEndpointAutoConfiguration.class))
      .withPropertyValues("management.endpoints.web.exposure.include=batchers",
          "ringbatch.batchers.orders.ring-size=64", "ringbatch.batchers.orders.max-batch-size=10",
          "ringbatch.batchers.orders.linger=10m");

  @Test
  void lists_reads_changesLimits_andFlushes() {
    runner.run(context -> {
      BatcherFactory factory = context.getBean(BatcherFactory.class);
      Batcher<String, Void> orders = factory.create("orders", BatchSink.noResult(items -> { }));
      factory.create("audit", BatchSink.noResult(items -> { }));
      BatchersEndpoint endpoint = context.getBean(BatchersEndpoint.class);

      assertThat(endpoint.batchers()).containsOnlyKeys("orders", "audit");
      Map<String, Object> one = endpoint.batcher("orders");
      assertThat(one).containsEntry("closed", false);
      assertThat(one.get("limits")).isEqualTo(Map.of("maxBatchSize", 10, "linger", "PT10M"));
      assertThat(endpoint.batcher("nope")).isNull();

      Map<String, Object> changed = endpoint.limits("orders", 32, null, Duration.ofMinutes(20));
      assertThat(changed.get("limits")).isEqualTo(Map.of("maxBatchSize", 32, "linger", "PT20M"));
      assertThat(orders.limits().maxBatchSize()).isEqualTo(32);
      assertThatThrownBy(() -> endpoint.limits("orders", 128, null, null))
          .isInstanceOf(InvalidEndpointRequestException.class)
          .hasMessageContaining("128").hasMessageContaining("64");
      assertThat(orders.limits().maxBatchSize()).isEqualTo(32);

      CompletableFuture<Void> lingering = orders.submit("held by the 20-minute linger");
      assertThat(lingering).isNotDone();
      Map<String, Object> flushed = endpoint.action("orders", "flush");
      assertThat(flushed).containsEntry("flushed", true);
      assertThat(lingering).isDone();
      assertThatThrownBy(() -> endpoint.action("orders", "drain"))
          .isInstanceOf(InvalidEndpointRequestException.class)
          .hasMessage("Unknown action 'drain'; the only action is 'flush'");
    });
  }

  @Test
  void anAdaptiveBatcher_showsItsModeBesideTheLimitsInForce_andAChangeHerePinsThem() {
    runner.withPropertyValues("ringbatch.batchers.bulk.adaptive=throughput").run(context -> {
      BatcherFactory factory = context.getBean(BatcherFactory.class);
      Batcher<String, Void> bulk = factory.create("bulk", BatchSink.noResult(items -> { }));
      BatchersEndpoint endpoint = context.getBean(BatchersEndpoint.class);

      assertThat(endpoint.batcher("bulk").get("limits")).isEqualTo(Map.of("maxBatchSize", 4096, "linger", "PT0S",
          "adaptive", "Adaptive{throughput, maxLinger=PT0.001S}"));
      Map<String, Object> changed = endpoint.limits("bulk", 8, null, Duration.ofMillis(5));
      assertThat(changed.get("limits")).isEqualTo(Map.of("maxBatchSize", 8, "linger", "PT0.005S",
          "adaptive", "Adaptive{throughput, maxLinger=PT0.001S}"));
      assertThat(bulk.limits().linger()).isEqualTo(Duration.ofMillis(5)); // pinned: beyond the mode's own cap
    });
  }

  @Test
  void notExposed_noEndpoint() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(EndpointAutoConfiguration.class, BatcherAutoConfiguration.class,
            BatchersEndpointAutoConfiguration.class))
        .run(context -> assertThat(context).doesNotHaveBean(BatchersEndpoint.class));
  }
}
