package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.ringbatch.Batch;
import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Lazy;

/** Review findings in the starter: shutdown order, lazy beans, creation listeners, negative nanoTime. */
class LifecycleEdgeCasesTest {

  /** orders' sink forwards every item into audit: orders depends on audit, so audit is created first. */
  @Configuration(proxyBeanMethods = false)
  static class ChainConfiguration {
    static final AtomicReference<CompletableFuture<Void>> PENDING = new AtomicReference<>();

    @Bean
    Batcher<String, Void> audit(BatcherFactory batchers) {
      return batchers.create("audit", BatchSink.noResult(items -> { }));
    }

    @Bean
    Batcher<String, Void> orders(BatcherFactory batchers, @Qualifier("audit") Batcher<String, Void> audit) {
      return batchers.create("orders", BatchSink.noResult(items -> {
        for (String item : items) {
          audit.submitAndWait("audit " + item);
        }
      }));
    }
  }

  /** orders drains (into audit) before audit closes: the lifecycle closes the newest batcher first. */
  @Test
  void shutdown_batcherWhoseSinkFeedsAnotherBatcher_drainsBeforeThatOneCloses() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class))
        .withUserConfiguration(ChainConfiguration.class)
        .withPropertyValues("ringbatch.batchers.orders.linger=10m", "ringbatch.batchers.orders.max-batch-size=100")
        .run(context -> {
          @SuppressWarnings("unchecked")
          Batcher<String, Void> orders = context.getBean("orders", Batcher.class);
          ChainConfiguration.PENDING.set(orders.submit("o1"));
          assertThat(ChainConfiguration.PENDING.get()).isNotDone(); // held by the linger until shutdown
        });
    CompletableFuture<Void> pending = ChainConfiguration.PENDING.get();
    assertThat(pending).isDone();
    assertThat(pending).isCompletedWithValue(null);
  }

  @Configuration(proxyBeanMethods = false)
  static class LazyConfiguration {
    static final AtomicInteger MADE = new AtomicInteger();

    @Bean
    @Lazy
    Batcher<String, Void> rarelyUsed(BatcherFactory batchers) {
      MADE.incrementAndGet();
      return batchers.create("rarely-used", BatchSink.noResult(items -> { }));
    }
  }

  /** A @Lazy Batcher bean nobody asked for must not be created (and its consumer thread started) by the starter. */
  @Test
  void lazyBatcherBean_notCreatedByTheStarter() {
    LazyConfiguration.MADE.set(0);
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class))
        .withUserConfiguration(LazyConfiguration.class)
        .run(context -> assertThat(LazyConfiguration.MADE).hasValue(0));
  }

  /** System.nanoTime() may be negative (its origin is arbitrary); -1 is no "not full" sentinel for it. */
  @Test
  void ringFull_negativeNanoTime_stillDegradedAfterRingFullFor() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class,
            BatcherHealthContributorAutoConfiguration.class))
        .withPropertyValues("ringbatch.batchers.orders.ring-size=4", "ringbatch.batchers.orders.max-batch-size=1",
            "ringbatch.batchers.orders.overflow-policy=drop", "ringbatch.health.ring-full-for=5s",
            "ringbatch.health.degraded-status=DEGRADED")
        .run(context -> {
          AtomicLong now = new AtomicLong(-Duration.ofSeconds(100).toNanos());
          BatcherHealthIndicator health = new BatcherHealthIndicator(context.getBean(BatcherFactory.class),
              context.getBean(BatcherLifecycle.class), context.getBean(BatcherProperties.class).getHealth(), now::get);
          CountDownLatch gate = new CountDownLatch(1);
          Batcher<Integer, Void> orders = context.getBean(BatcherFactory.class).create("orders",
              (Batch<Integer, Void> batch) -> {
                gate.await(10, TimeUnit.SECONDS);
                batch.completeRemaining(null);
              });
          try {
            orders.submit(0);
            await().atMost(Duration.ofSeconds(10)).until(() -> orders.stats().remainingCapacity() == 4);
            for (int i = 1; i <= 4; i++) {
              orders.submit(i);
            }
            assertThat(health.health().getStatus()).isEqualTo(Status.UP);
            now.addAndGet(Duration.ofSeconds(6).toNanos());
            assertThat(health.health().getStatus()).isEqualTo(new Status("DEGRADED"));
          } finally {
            gate.countDown();
          }
        });
  }

  /** A whenCreated listener (the meter binder, a registry MeterFilter) that throws: create() throws, batcher closed. */
  @Test
  void listenerThrows_createThrows_butLeavesARunningBatcherNobodyHolds() {
    BatcherFactory factory = new BatcherFactory(new BatcherProperties());
    factory.whenCreated(b -> {
      throw new IllegalStateException("meter filter says no");
    });
    assertThatThrownBy(() -> factory.create("events", BatchSink.<String>noResult(items -> { })))
        .isInstanceOf(IllegalStateException.class).hasMessage("meter filter says no"); // the caller got no batcher
    try {
      assertThat(factory.created()).allMatch(Batcher::isClosed);
    } finally {
      factory.close();
    }
  }
}
