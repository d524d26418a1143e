package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringbatch.AsyncBatchSink;
import dev.ringbatch.Batch;
import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import io.micrometer.core.instrument.LongTaskTimer;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * A hung sink is seen (issue 21 item 1, the starter's part): the long-task timer
 * {@code ringbatch.batch.write.active}, the age of the oldest write in the health details, and the health
 * degraded once a write is older than {@code ringbatch.health.max-write-age}.
 */
class WriteInProgressTest {
  private static final Duration WAIT = Duration.ofSeconds(10);
  private final AtomicLong now = new AtomicLong(-5);

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class,
          BatcherHealthContributorAutoConfiguration.class, BatcherMetricsAutoConfiguration.class,
          MetricsAutoConfiguration.class, SimpleMetricsExportAutoConfiguration.class))
      .withBean(WriteTracker.class, () -> new WriteTracker(now::get))
      .withPropertyValues("ringbatch.health.max-write-age=5s", "ringbatch.batchers.orders.max-batch-size=1");

  @Test
  void hungSyncWrite_activeTimerAndAgeShown_degradedAfterMaxWriteAge_upWhenItReturns() {
    runner.run(context -> {
      CountDownLatch inSink = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      Batcher<Integer, Void> orders = context.getBean(BatcherFactory.class).create("orders",
          blocking(inSink, release));
      HealthIndicator health = context.getBean("ringbatchHealthIndicator", HealthIndicator.class);
      LongTaskTimer active = context.getBean(MeterRegistry.class).get("ringbatch.batch.write.active")
          .tag("name", "orders").tag("sink", "sync").longTaskTimer();
      CompletableFuture<Void> item;
      try {
        item = orders.submit(1);
        assertThat(inSink.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(active.activeTasks()).isEqualTo(1);

        now.addAndGet(Duration.ofSeconds(4).toNanos());
        Health young = health.health();
        assertThat(young.getStatus()).isEqualTo(Status.UP);
        assertThat(detail(young)).containsEntry("oldestWriteAge", "PT4S");

        now.addAndGet(Duration.ofSeconds(1).toNanos());
        Health hung = health.health();
        assertThat(hung.getStatus()).isEqualTo(Status.OUT_OF_SERVICE);
        assertThat(detail(hung)).containsEntry("oldestWriteAge", "PT5S")
            .containsEntry("reason", "a sink write has run for PT5S, at least max-write-age PT5S");
      } finally {
        release.countDown();
      }
      assertThat(item).succeedsWithin(WAIT);
      assertThat(active.activeTasks()).isZero();
      Health after = health.health();
      assertThat(after.getStatus()).isEqualTo(Status.UP);
      assertThat(detail(after)).doesNotContainKey("oldestWriteAge");
    });
  }

  @Test
  void throwingSyncWrite_endsItsWrite() {
    runner.run(context -> {
      Batcher<Integer, Void> orders = context.getBean(BatcherFactory.class).create("orders",
          (Batch<Integer, Void> batch) -> {
            throw new IllegalStateException("database down");
          });
      assertThat(orders.submit(1)).failsWithin(WAIT)
        .withThrowableOfType(java.util.concurrent.ExecutionException.class);
      assertThat(context.getBean(MeterRegistry.class).get("ringbatch.batch.write.active").tag("name", "orders")
          .longTaskTimer().activeTasks()).isZero();
      assertThat(detail(context.getBean("ringbatchHealthIndicator", HealthIndicator.class).health()))
          .doesNotContainKey("oldestWriteAge");
    });
  }

  @Test
  void asyncWriteThrowingARawThrowable_endsItsWrite() {
    WriteTracker tracker = new WriteTracker();
    AsyncBatchSink<Integer, Void> sneaky = tracker.decorateAsync("sneaky", batch -> {
      throw WriteInProgressTest.<RuntimeException>sneakyThrow(new Throwable("neither an Exception nor an Error"));
    });
    assertThatThrownBy(() -> sneaky.write(null)).hasMessage("neither an Exception nor an Error");
    assertThat(tracker.of("sneaky").oldestAge()).as("no write left in progress").isNull();
  }

  @SuppressWarnings("unchecked")
  private static <E extends Throwable> E sneakyThrow(Throwable t) throws E {
    throw (E) t;
  }

  @Test
  void asyncWrite_activeUntilItsStageCompletes() {
    runner.run(context -> {
      CompletableFuture<Void> stage = new CompletableFuture<>();
      CountDownLatch written = new CountDownLatch(1);
      Batcher<Integer, Void> orders = context.getBean(BatcherFactory.class).createAsync("orders",
          batch -> {
            written.countDown();
            return stage.thenRun(() -> batch.completeRemaining(null));
          });
      LongTaskTimer active = context.getBean(MeterRegistry.class).get("ringbatch.batch.write.active")
          .tag("name", "orders").tag("sink", "async").longTaskTimer();
      CompletableFuture<Void> item = orders.submit(1);
      try {
        assertThat(written.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(active.activeTasks()).isEqualTo(1);
      } finally {
        stage.complete(null);
      }
      assertThat(item).succeedsWithin(WAIT);
      assertThat(active.activeTasks()).isZero();
    });
  }

  @Test
  void newBatcherOfAClosedOnesName_doesNotInheritItsHungWrite() {
    runner.run(context -> {
      BatcherFactory factory = context.getBean(BatcherFactory.class);
      CompletableFuture<Void> never = new CompletableFuture<>();
      CountDownLatch written = new CountDownLatch(1);
      Batcher<Integer, Void> old = factory.createAsync("tenant", batch -> {
        written.countDown();
        return never;
      });
      try {
        old.submit(1);
        assertThat(written.await(10, TimeUnit.SECONDS)).isTrue();
        old.close(Duration.ofMillis(100)); // gives up on the hung write; its owner closed it: deregistered

        Batcher<Integer, Void> fresh = factory.create("tenant", (Batch<Integer, Void> batch) ->
            batch.completeRemaining(null));
        HealthIndicator health = context.getBean("ringbatchHealthIndicator", HealthIndicator.class);
        @SuppressWarnings("unchecked")
        Map<String, Object> detail = (Map<String, Object>) health.health().getDetails().get("tenant");
        assertThat(detail).doesNotContainKey("oldestWriteAge");
        assertThat(context.getBean(MeterRegistry.class).get("ringbatch.batch.write.active").tag("name", "tenant")
            .longTaskTimer().activeTasks()).isZero();
        assertThat(fresh.submit(2)).succeedsWithin(WAIT);
      } finally {
        never.complete(null);
      }
    });
  }

  @Test
  void closedBatcher_activeTimerRemoved() {
    runner.run(context -> {
      Batcher<Integer, Void> orders = context.getBean(BatcherFactory.class).create("orders",
          (Batch<Integer, Void> batch) -> batch.completeRemaining(null));
      MeterRegistry registry = context.getBean(MeterRegistry.class);
      assertThat(registry.find("ringbatch.batch.write.active").meters()).hasSize(1);
      orders.close(WAIT);
      assertThat(registry.find("ringbatch.batch.write.active").meters()).isEmpty();
    });
  }

  @Test
  void observationMeterHandler_oneActiveTimer_eachWriteCountedOnce() {
    runner.withConfiguration(AutoConfigurations.of(BatcherObservationAutoConfiguration.class))
        .withBean(ObservationRegistry.class, ObservationRegistry::create)
        .run(context -> {
          MeterRegistry registry = context.getBean(MeterRegistry.class);
          context.getBean(ObservationRegistry.class).observationConfig()
              .observationHandler(new DefaultMeterObservationHandler(registry));
          CountDownLatch inSink = new CountDownLatch(1);
          CountDownLatch release = new CountDownLatch(1);
          Batcher<Integer, Void> orders = context.getBean(BatcherFactory.class).create("orders",
              blocking(inSink, release));
          try {
            orders.submit(1);
            assertThat(inSink.await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(registry.find("ringbatch.batch.write.active").longTaskTimers()).singleElement()
                .satisfies(timer -> {
                  assertThat(timer.getId().getTag("sink")).isEqualTo("sync");
                  assertThat(timer.activeTasks()).isEqualTo(1);
                });
          } finally {
            release.countDown();
          }
        });
  }

  /** A sink that says it was called, then blocks until released (the test releases it in a finally). */
  private static BatchSink<Integer, Void> blocking(CountDownLatch inSink, CountDownLatch release) {
    return batch -> {
      inSink.countDown();
      release.await(10, TimeUnit.SECONDS);
      batch.completeRemaining(null);
    };
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> detail(Health health) {
    return (Map<String, Object>) health.getDetails().get("orders");
  }
}
