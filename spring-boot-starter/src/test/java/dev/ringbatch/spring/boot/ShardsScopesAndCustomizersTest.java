package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.ringbatch.Batch;
import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Scope;

/**
 * The starter with sharded batchers (health degraded by one full shard, the earlier shards' sinks closed when a later
 * one cannot be made), prototype-scoped batcher beans (none started behind the application's back) and customizers
 * (an error blames no property left unset). Each test failed before its fix.
 */
class ShardsScopesAndCustomizersTest {

  /**
   * Before its fix: the health reads {@code stats().remainingCapacity()}, the sum over the shards, which is 0
   * only when every shard is full. A keyed sharded batcher whose one shard is stalled refuses that shard's
   * items (here: dropped) while the health says UP forever.
   */
  @Test
  void shardedBatcher_oneShardFull_itemsRefused_healthDegraded() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class,
            BatcherHealthContributorAutoConfiguration.class))
        .withPropertyValues("ringbatch.batchers.orders.ring-size=4", "ringbatch.batchers.orders.max-batch-size=1",
            "ringbatch.batchers.orders.overflow-policy=drop", "ringbatch.batchers.orders.shards=2",
            "ringbatch.health.ring-full-for=0s")
        .run(context -> {
          CountDownLatch gate = new CountDownLatch(1);
          CountDownLatch inSink = new CountDownLatch(1);
          // Integer keys: h ^ (h >>> 16) is h for small h, so even items go to shard 0, odd ones to shard 1.
          Function<Integer, Object> key = item -> item;
          IntFunction<BatchSink<Integer, Void>> sinks = shard -> batch -> {
            if (shard == 0) {
              inSink.countDown();
              gate.await(10, TimeUnit.SECONDS);
            }
            batch.completeRemaining(null);
          };
          Batcher<Integer, Void> orders = context.getBean(BatcherFactory.class).createSharded("orders", key, sinks);
          try {
            orders.submit(0);
            assertThat(inSink.await(10, TimeUnit.SECONDS)).isTrue();
            await().atMost(Duration.ofSeconds(10))
                .until(() -> orders.shardStats().get(0).remainingCapacity() == 4);
            for (int i = 2; i <= 8; i += 2) {
              orders.submit(i);
            }
            assertThat(orders.shardStats().get(0).remainingCapacity()).isZero();
            assertThat(orders.submit(10)).isCompletedExceptionally(); // refused: the shard is full

            HealthIndicator health = context.getBean("ringbatchHealthIndicator", HealthIndicator.class);
            assertThat(health.health().getStatus()).isEqualTo(Status.OUT_OF_SERVICE);
          } finally {
            gate.countDown();
          }
        });
  }

  /**
   * Before its fix: when a shard's sink cannot be made, the sinks the factory already made for the earlier shards
   * are never closed (the core closes the shards it started, not their sinks, and {@code register} never runs).
   */
  @Test
  void createSharded_laterShardSinkFails_earlierSinksClosed() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class))
        .withPropertyValues("ringbatch.batchers.orders.shards=2")
        .run(context -> {
          AtomicBoolean firstClosed = new AtomicBoolean();
          IntFunction<BatchSink<Integer, Void>> sinks = shard -> {
            if (shard == 1) {
              throw new IllegalStateException("cannot connect shard 1");
            }
            return new ClosingSink(firstClosed);
          };
          BatcherFactory factory = context.getBean(BatcherFactory.class);
          assertThatThrownBy(() -> factory.createSharded("orders", sinks)).hasMessage("cannot connect shard 1");
          assertThat(firstClosed).isTrue();
        });
  }

  /**
   * Before its fix: the lifecycle's start, every health check and the endpoint call {@code
   * ObjectProvider.orderedStream()}, which makes a new prototype-scoped batcher (started, with its consumer
   * thread) each time; only the ones made in {@code stop()} are closed.
   */
  @Test
  void prototypeBatcherBean_starterStartsNoneBehindTheApplicationsBack() {
    PrototypeBatcher.MADE.clear();
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class,
            BatcherHealthContributorAutoConfiguration.class))
        .withUserConfiguration(PrototypeBatcher.class)
        .run(context -> {
          HealthIndicator health = context.getBean("ringbatchHealthIndicator", HealthIndicator.class);
          health.health();
          health.health();
        });
    // Asking the provider for a prototype makes and starts a new batcher each time; nobody would close them.
    assertThat(PrototypeBatcher.MADE).isEmpty();
  }

  @Configuration(proxyBeanMethods = false)
  static class PrototypeBatcher {
    static final List<Batcher<?, ?>> MADE = new CopyOnWriteArrayList<>();

    @Bean
    @Scope("prototype")
    Batcher<String, Void> perUse() {
      Batcher<String, Void> batcher = Batcher.of("perUse", BatcherConfig.ofDefaults(),
          BatchSink.noResult(items -> { }));
      MADE.add(batcher);
      return batcher;
    }
  }

  /**
   * Before its fix: a customizer that breaks maxBatchSize <= ringSize, with no property set, is reported as
   * {@code Property ringbatch.defaults.ring-size with value '(customizer)' is invalid}: a property the user
   * never set.
   */
  @Test
  void customizerBreaksTheRule_noPropertySet_errorDoesNotBlameAnUnsetProperty() {
    BatcherProperties properties = new BatcherProperties();
    BatcherFactory factory = new BatcherFactory(properties,
        List.of(BatcherConfigCustomizer.of("orders", b -> b.ringSize(64).maxBatchSize(128))));
    assertThatThrownBy(() -> factory.config("orders"))
        .hasMessageContaining("maxBatchSize (128) must not exceed ringSize (64)")
        .message().doesNotContain("ringbatch.defaults.ring-size").doesNotContain("'(customizer)'");
  }

  @Test
  void customizersLingerAgainstAnAdaptiveProperty_errorBlamesTheCustomizer_notTheRingSizeSet() {
    BatcherProperties properties = new BatcherProperties();
    BatcherProperties.Settings orders = new BatcherProperties.Settings();
    orders.setRingSize(1024);
    orders.setAdaptive(dev.ringbatch.Adaptive.Goal.THROUGHPUT);
    properties.getBatchers().put("orders", orders);
    assertThatThrownBy(() -> new BatcherFactory(properties,
            List.of(BatcherConfigCustomizer.of("orders", b -> b.linger(Duration.ofMillis(5))))))
        .hasMessageStartingWith("the BatcherConfigCustomizer of batcher 'orders' made an invalid configuration")
        .hasMessageContaining("cannot be set with adaptive")
        .message().doesNotContain("ring-size");
  }

  @Test
  void lingerWithAdaptive_andABatchOverTheRing_allProperties_errorNamesTheRuleThatFailed() {
    BatcherProperties properties = new BatcherProperties();
    BatcherProperties.Settings orders = new BatcherProperties.Settings();
    orders.setRingSize(64);
    orders.setMaxBatchSize(128);
    orders.setLinger(Duration.ofMillis(5));
    orders.setAdaptive(dev.ringbatch.Adaptive.Goal.THROUGHPUT);
    properties.getBatchers().put("orders", orders);
    assertThatThrownBy(() -> new BatcherFactory(properties, List.of()))
        .hasMessageContaining("maxBatchSize (128) must not exceed ringSize (64)")
        .message().doesNotContain("linger");
  }

  private static final class ClosingSink implements BatchSink<Integer, Void>, AutoCloseable {
    private final AtomicBoolean closed;

    ClosingSink(AtomicBoolean closed) {
      this.closed = closed;
    }

    @Override
    public void write(Batch<Integer, Void> batch) {
      batch.completeRemaining(null);
    }

    @Override
    public void close() {
      closed.set(true);
    }
  }
}
