package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.ringbatch.Batch;
import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The starter's registry and shutdown: the order batchers feed one another in, names freed or refused, owner closes and
 * the shutdown bounded whatever a sink's close does, and a write in progress counted once.
 */
class StarterRegistryAndShutdownTest {

  /** orders' sink forwards into audit; audit is created first, so orders is "newer" and must drain first. */
  static class Chain {
    final CountDownLatch ordersInSink = new CountDownLatch(1);
    final CountDownLatch release = new CountDownLatch(1);
    final List<String> audited = new CopyOnWriteArrayList<>();

    Batcher<String, Void> audit(BatcherFactory batchers) {
      return batchers.create("audit", BatchSink.noResult(audited::addAll));
    }

    Batcher<String, Void> orders(BatcherFactory batchers, Batcher<String, Void> audit) {
      return batchers.create("orders", (Batch<String, Void> batch) -> {
        ordersInSink.countDown();
        release.await(10, TimeUnit.SECONDS);
        for (String item : batch.items()) {
          audit.submitAndWait("audit " + item);
        }
        batch.completeRemaining(null);
      });
    }
  }

  private static void feedingOrder(String closeTimeout) {
    feedingOrder(closeTimeout, ChainBeans.class);
  }

  private static void feedingOrder(String closeTimeout, Class<?> beans) {
    Chain app = new Chain();
    AtomicReference<CompletableFuture<Void>> pending = new AtomicReference<>();
    AtomicReference<Boolean> auditClosedWhileOrdersDraining = new AtomicReference<>();
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class))
        .withBean(Chain.class, () -> app)
        .withUserConfiguration(beans)
        .withPropertyValues("ringbatch.shutdown-timeout=5s",
            "ringbatch.batchers.audit.close-timeout=" + closeTimeout,
            "ringbatch.batchers.orders.close-timeout=" + closeTimeout,
            "ringbatch.batchers.orders.max-batch-size=1")
        .run(context -> {
          @SuppressWarnings("unchecked")
          Batcher<String, Void> orders = context.getBean("orders", Batcher.class);
          @SuppressWarnings("unchecked")
          Batcher<String, Void> audit = context.getBean("audit", Batcher.class);
          pending.set(orders.submit("o1"));
          assertThat(app.ordersInSink.await(5, TimeUnit.SECONDS)).isTrue();
          CompletableFuture<Void> shutdown = CompletableFuture.runAsync(context::close);
          await().atMost(Duration.ofSeconds(5)).until(orders::isClosed); // the shutdown has begun
          try {
            await().atMost(Duration.ofSeconds(1)).until(audit::isClosed);
          } catch (ConditionTimeoutException expected) {
            // audit waits for orders: right
          }
          auditClosedWhileOrdersDraining.set(audit.isClosed());
          app.release.countDown();
          shutdown.get(15, TimeUnit.SECONDS);
        });
    assertThat(pending.get()).as("orders item o1, fed into audit at shutdown (audit closed early: %s)", auditClosedWhileOrdersDraining.get()).succeedsWithin(Duration.ofSeconds(1));
    assertThat(auditClosedWhileOrdersDraining.get())
        .as("audit (fed by orders) closed while orders was still draining into it").isFalse();
    assertThat(app.audited).containsExactly("audit o1");
  }

  @Configuration(proxyBeanMethods = false)
  static class ChainBeans {
    @Bean
    Batcher<String, Void> audit(Chain chain, BatcherFactory batchers) {
      return chain.audit(batchers);
    }

    @Bean
    Batcher<String, Void> orders(Chain chain, BatcherFactory batchers, @Qualifier("audit") Batcher<String, Void> audit) {
      return chain.orders(batchers, audit);
    }
  }

  /** audit is a hand-made Batcher bean (not from the factory), orders a factory batcher feeding it. */
  @Configuration(proxyBeanMethods = false)
  static class HandMadeAuditBeans {
    @Bean
    Batcher<String, Void> audit(Chain chain) {
      return Batcher.of("audit", dev.ringbatch.BatcherConfig.builder().closeTimeout(Duration.ofSeconds(2)).build(),
          BatchSink.noResult(chain.audited::addAll));
    }

    @Bean
    Batcher<String, Void> orders(Chain chain, BatcherFactory batchers, @Qualifier("audit") Batcher<String, Void> audit) {
      return chain.orders(batchers, audit);
    }
  }

  @Test
  void feedingOrder_factoryBatcherFeedsAHandMadeBatcherBean_kept() {
    feedingOrder("2s", HandMadeAuditBeans.class);
  }

  /** Control: close-timeout 2s of a 5s budget: audit may begin only at 3s, so it waits for orders. */
  @Test
  void feedingOrder_closeTimeoutBelowBudget_kept() {
    feedingOrder("2s");
  }

  /** close-timeout equal to (or above) ringbatch.shutdown-timeout: own == budget, so no wait for newer ones. */
  @Test
  void feedingOrder_closeTimeoutEqualToBudget_kept() {
    feedingOrder("5s");
  }

  /** A createAsync refused as a duplicate must not touch the existing batcher's tracked writes. */
  @Test
  void duplicateCreateAsync_refused_doesNotRetagTheExistingSyncBatcher() {
    WriteTracker tracker = new WriteTracker();
    BatcherFactory factory = new BatcherFactory(new BatcherProperties(), List.of(), List.of(tracker));
    try {
      factory.create("a", BatchSink.noResult(items -> { }));
      assertThat(tracker.of("a").async).isFalse();
      assertThatThrownBy(() -> factory.createAsync("a", batch -> CompletableFuture.completedFuture(null)))
          .isInstanceOf(IllegalStateException.class).hasMessageContaining("already exists");
      io.micrometer.core.instrument.simple.SimpleMeterRegistry registry =
          new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
      @SuppressWarnings({"unchecked", "rawtypes"})
      org.springframework.beans.factory.ObjectProvider<Batcher<?, ?>> none = (org.springframework.beans.factory.ObjectProvider)
          new org.springframework.beans.factory.support.StaticListableBeanFactory(java.util.Map.of())
              .getBeanProvider(Batcher.class);
      new BatcherMeterBinder(factory, none, true, tracker).bindTo(registry); // a registry bound after the create
      assertThat(registry.find(BatcherMeterBinder.WRITE_ACTIVE).tag("name", "a").longTaskTimer().getId().getTag("sink"))
          .as("sink tag of the live sync batcher 'a' after a refused createAsync").isEqualTo("sync");
    } finally {
      factory.close();
    }
  }

  /** A failed createAsync (a customizer throws) leaves no tracked writes behind for a name with no batcher. */
  @Test
  void failedCreateAsync_leavesNoTrackerEntry() {
    WriteTracker tracker = new WriteTracker();
    BatcherConfigCustomizer failing = new BatcherConfigCustomizer() {
      @Override
      public String name() {
        return "b";
      }

      @Override
      public void customize(dev.ringbatch.BatcherConfig.Builder builder) {
        throw new IllegalStateException("boom");
      }
    };
    BatcherFactory factory;
    try {
      factory = new BatcherFactory(new BatcherProperties(), List.of(failing), List.of(tracker));
    } catch (RuntimeException checkedAtConstruction) {
      return; // customizers run by checkAll: not reachable this way
    }
    try {
      assertThatThrownBy(() -> factory.createAsync("b", batch -> CompletableFuture.completedFuture(null)))
          .hasMessageContaining("boom");
      assertThat(tracker.of("b")).as("tracked writes of a name whose create failed").isNull();
    } finally {
      factory.close();
    }
  }

  /** A batcher its owner closes before the lifecycle starts (during refresh) is never deregistered. */
  @Configuration(proxyBeanMethods = false)
  static class ClosedDuringStartup {
    @Bean
    String probe(BatcherFactory batchers) {
      Batcher<String, Void> scratch = batchers.create("scratch", BatchSink.noResult(items -> { }));
      scratch.close(Duration.ofSeconds(5));
      return "probed";
    }
  }

  @Test
  void batcherClosedByItsOwnerDuringStartup_nameFreeAndNotListed() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class))
        .withUserConfiguration(ClosedDuringStartup.class)
        .run(context -> {
          assertThat(context).hasNotFailed();
          BatcherFactory factory = context.getBean(BatcherFactory.class);
          BatcherLifecycle lifecycle = context.getBean(BatcherLifecycle.class);
          assertThat(lifecycle.batchers()).extracting(Batcher::name)
              .as("batchers listed (health, endpoint) after the owner closed 'scratch'").doesNotContain("scratch");
        });
  }

  @Test
  void batcherClosedByItsOwnerDuringStartup_nameFreeAgain() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class))
        .withUserConfiguration(ClosedDuringStartup.class)
        .run(context -> {
          BatcherFactory factory = context.getBean(BatcherFactory.class);
          Batcher<String, Void> again = factory.create("scratch", BatchSink.noResult(items -> { }));
          assertThat(again.isClosed()).isFalse();
        });
  }

  /** A hand-made Batcher bean "x": start() refuses a duplicate of its name, but a create after startup does not. */
  @Configuration(proxyBeanMethods = false)
  static class HandMade {
    @Bean(destroyMethod = "")
    Batcher<String, Void> x() {
      return Batcher.of("x", dev.ringbatch.BatcherConfig.ofDefaults(), BatchSink.noResult(items -> { }));
    }
  }

  @Test
  void factoryCreateAfterStartup_nameOfAHandMadeBatcherBean_refused() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class))
        .withUserConfiguration(HandMade.class)
        .run(context -> {
          BatcherFactory factory = context.getBean(BatcherFactory.class);
          assertThatThrownBy(() -> factory.create("x", BatchSink.noResult(items -> { })))
              .as("a second batcher named 'x' beside the Batcher bean 'x'").isInstanceOf(IllegalStateException.class);
          assertThat(context.getBean(BatcherLifecycle.class).batchers()).extracting(Batcher::name)
              .containsOnlyOnce("x");
        });
  }

  /** A sink whose close() hangs: the owner's batcher.close(timeout) must still return within about its timeout. */
  static final class HangingCloseSink implements BatchSink<String, Void>, AutoCloseable {
    final CountDownLatch release = new CountDownLatch(1);

    @Override
    public void write(Batch<String, Void> batch) {
      batch.completeRemaining(null);
    }

    @Override
    public void close() {
      try {
        release.await(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  @Test
  void ownerClose_sinkCloseHangs_ownerCloseStillBoundedByItsTimeout() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class))
        .withPropertyValues("ringbatch.shutdown-timeout=2s")
        .run(context -> {
          BatcherFactory factory = context.getBean(BatcherFactory.class);
          HangingCloseSink sink = new HangingCloseSink();
          Batcher<String, Void> tenant = factory.create("tenant", sink);
          tenant.submit("x").get(5, TimeUnit.SECONDS);
          CompletableFuture<Void> ownerClose = CompletableFuture.runAsync(() -> tenant.close(Duration.ofMillis(200)));
          try {
            assertThat(ownerClose).as("owner's close(200ms) with a sink whose close() hangs")
                .succeedsWithin(Duration.ofSeconds(3));
          } finally {
            sink.release.countDown();
          }
        });
  }

  /** defaults say block without timeout; batcher 'a' says explicitly it does not: its own setting wins elsewhere. */
  @Test
  void blockWithoutTimeout_falseOnTheBatcher_overridesTrueInTheDefaults() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class))
        .withPropertyValues("ringbatch.defaults.block-without-timeout=true",
            "ringbatch.batchers.a.block-without-timeout=false")
        .run(context -> {
          assertThat(context).hasNotFailed();
          assertThat(context.getBean(BatcherFactory.class).config("a").submitTimeout())
              .as("submit-timeout of 'a', which set block-without-timeout=false")
              .isNotEqualTo(dev.ringbatch.BatcherConfig.NO_TIMEOUT);
        });
  }

  /** block-without-timeout=false written out on a batcher, its default, leaves the defaults' submit-timeout. */
  @Test
  void blockWithoutTimeout_falseOnTheBatcher_keepsTheSubmitTimeoutOfTheDefaults() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class))
        .withPropertyValues("ringbatch.defaults.submit-timeout=2s",
            "ringbatch.batchers.a.block-without-timeout=false")
        .run(context -> assertThat(context.getBean(BatcherFactory.class).config("a").submitTimeout())
            .isEqualTo(Duration.ofSeconds(2)));
  }

  /** One sink write in progress is one active task of ringbatch.batch.write.active, not two. */
  @Configuration(proxyBeanMethods = false)
  static class SlowOrders {
    static final CountDownLatch IN_SINK = new CountDownLatch(1);
    static final CountDownLatch RELEASE = new CountDownLatch(1);

    @Bean
    Batcher<String, Void> orders(BatcherFactory batchers) {
      return batchers.create("orders", (Batch<String, Void> batch) -> {
        IN_SINK.countDown();
        RELEASE.await(10, TimeUnit.SECONDS);
        batch.completeRemaining(null);
      });
    }
  }

  @Test
  void writeActive_oneWriteInProgress_countedOnce() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class,
            BatcherMetricsAutoConfiguration.class,
            org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration.class,
            org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration.class))
        .withUserConfiguration(SlowOrders.class)
        .run(context -> {
          @SuppressWarnings("unchecked")
          Batcher<String, Void> orders = context.getBean("orders", Batcher.class);
          io.micrometer.core.instrument.MeterRegistry registry =
              context.getBean(io.micrometer.core.instrument.MeterRegistry.class);
          CompletableFuture<Void> done = orders.submit("o1");
          try {
            assertThat(SlowOrders.IN_SINK.await(5, TimeUnit.SECONDS)).isTrue();
            assertThat(registry.get(BatcherMeterBinder.WRITE_ACTIVE).tag("name", "orders").longTaskTimer()
                .activeTasks()).as("active tasks with one write in progress").isEqualTo(1);
          } finally {
            SlowOrders.RELEASE.countDown();
          }
          done.get(5, TimeUnit.SECONDS);
        });
  }

  /** Held-up check: a sink whose close() hangs holds the shutdown to about budget + grace, no longer. */
  @Test
  void shutdown_sinkCloseHangs_boundedByBudgetPlusGrace() throws Exception {
    HangingCloseSink sink = new HangingCloseSink();
    AtomicReference<CompletableFuture<Void>> shutdown = new AtomicReference<>();
    try {
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class))
          .withPropertyValues("ringbatch.shutdown-timeout=1s")
          .run(context -> {
            context.getBean(BatcherFactory.class).create("hanging-close", sink);
            shutdown.set(CompletableFuture.runAsync(context::close));
            assertThat(shutdown.get()).succeedsWithin(Duration.ofSeconds(4));
          });
    } finally {
      sink.release.countDown();
    }
  }

  /** Held-up check: an owner's close racing the shutdown closes the sink exactly once. */
  @Test
  void ownerCloseRacingShutdown_sinkClosedOnce() throws Exception {
    java.util.concurrent.atomic.AtomicInteger sinkCloses = new java.util.concurrent.atomic.AtomicInteger();
    final class CountingSink implements BatchSink<String, Void>, AutoCloseable {
      @Override
      public void write(Batch<String, Void> batch) {
        batch.completeRemaining(null);
      }

      @Override
      public void close() {
        sinkCloses.incrementAndGet();
      }
    }
    for (int round = 0; round < 20; round++) {
      sinkCloses.set(0);
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class))
          .run(context -> {
            Batcher<String, Void> b = context.getBean(BatcherFactory.class).create("t", new CountingSink());
            java.util.concurrent.CyclicBarrier go = new java.util.concurrent.CyclicBarrier(2);
            CompletableFuture<Void> owner = CompletableFuture.runAsync(() -> {
              try {
                go.await(5, TimeUnit.SECONDS);
              } catch (Exception e) {
                throw new IllegalStateException(e);
              }
              b.close(Duration.ofSeconds(2));
            });
            go.await(5, TimeUnit.SECONDS);
            context.close();
            owner.get(5, TimeUnit.SECONDS);
          });
      assertThat(sinkCloses.get()).as("round " + round).isEqualTo(1);
    }
  }
}
