package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.Batch;
import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * A hung batcher does not use up the shutdown budget of the others (issue 21 item 3): the batchers close in
 * parallel, each keeping its own close-timeout, so a healthy batcher with 100 ms writes drains while the hung
 * one waits out its budget. (That a feeding batcher still drains into the one it feeds first is
 * {@code LifecycleEdgeCasesTest}'s.)
 */
@ExtendWith(OutputCaptureExtension.class)
class ParallelShutdownTest {

  /** Created in the order healthy, idle, hung: the hung one is newest, so its close begins first. */
  @Configuration(proxyBeanMethods = false)
  static class HealthyIdleHung {
    final List<Integer> rows = new CopyOnWriteArrayList<>();
    final CountDownLatch hungInSink = new CountDownLatch(1);
    final CountDownLatch releaseHung = new CountDownLatch(1);

    @Bean
    Batcher<Integer, Void> healthy(BatcherFactory batchers) {
      return batchers.create("healthy", (Batch<Integer, Void> batch) -> {
        for (Integer row : batch.items()) {
          Thread.sleep(100); // a slow row insert: the work being drained, not a synchronisation
          rows.add(row);
        }
        batch.completeRemaining(null);
      });
    }

    @Bean
    Batcher<Integer, Void> idle(BatcherFactory batchers) {
      return batchers.create("idle", BatchSink.noResult(items -> { }));
    }

    @Bean
    Batcher<Integer, Void> hung(BatcherFactory batchers) {
      return batchers.create("hung", (Batch<Integer, Void> batch) -> {
        hungInSink.countDown();
        releaseHung.await(); // until the close gives up and interrupts it
      });
    }
  }

  @Test
  void shutdown_hungBatcherBesideAHealthyOne_healthyDrainsAllItsRows(CapturedOutput output) throws Exception {
    HealthyIdleHung app = new HealthyIdleHung();
    List<CompletableFuture<Void>> healthyFutures = new ArrayList<>();
    List<CompletableFuture<Void>> hungFuture = new ArrayList<>();
    try {
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class))
          .withBean(HealthyIdleHung.class, () -> app)
          .withPropertyValues("ringbatch.shutdown-timeout=2s",
              // the healthy rows linger as one batch until the shutdown flushes them
              "ringbatch.batchers.healthy.linger=10m", "ringbatch.batchers.healthy.max-batch-size=10",
              "ringbatch.batchers.hung.max-batch-size=1")
          .run(context -> {
            @SuppressWarnings("unchecked")
            Batcher<Integer, Void> hung = context.getBean("hung", Batcher.class);
            @SuppressWarnings("unchecked")
            Batcher<Integer, Void> healthy = context.getBean("healthy", Batcher.class);
            hungFuture.add(hung.submit(-1));
            assertThat(app.hungInSink.await(10, TimeUnit.SECONDS)).isTrue();
            for (int row = 0; row < 5; row++) {
              healthyFutures.add(healthy.submit(row));
            }
            assertThat(app.rows).isEmpty(); // held by the linger
          });
    } finally {
      app.releaseHung.countDown();
    }

    assertThat(app.rows).containsExactly(0, 1, 2, 3, 4);
    assertThat(healthyFutures).allSatisfy(f -> assertThat(f).isCompleted().isNotCompletedExceptionally());
    assertThat(hungFuture.get(0)).isCompletedExceptionally();
    assertThat(output).contains("ringbatch batcher 'healthy' closed on shutdown: CloseReport{drained=true")
        .contains("ringbatch batcher 'idle' closed on shutdown: CloseReport{drained=true")
        .doesNotContain("'idle' closed on shutdown without draining");
  }

  @Test
  void shutdown_aBudgetOfCenturies_stillDrains() {
    List<Integer> rows = new CopyOnWriteArrayList<>();
    List<CompletableFuture<Void>> futures = new ArrayList<>();
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class))
        .withPropertyValues("ringbatch.shutdown-timeout=106752d", "ringbatch.batchers.orders.linger=1h",
            "ringbatch.batchers.orders.max-batch-size=8")
        .run(context -> {
          assertThat(context).hasNotFailed();
          Batcher<Integer, Void> orders = context.getBean(BatcherFactory.class)
              .create("orders", BatchSink.noResult(rows::addAll));
          futures.add(orders.submit(1)); // lingers: only the shutdown's close writes it
        });

    assertThat(futures).singleElement().satisfies(f -> assertThat(f).isCompleted().isNotCompletedExceptionally());
    assertThat(rows).containsExactly(1);
  }

  @Test
  void shutdown_hungNewerBatcher_delaysAnOlderOne_butLeavesItItsCloseTimeout() throws Exception {
    HealthyIdleHung app = new HealthyIdleHung();
    List<CompletableFuture<Void>> healthyFutures = new ArrayList<>();
    try {
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class))
          .withBean(HealthyIdleHung.class, () -> app)
          .withPropertyValues("ringbatch.shutdown-timeout=3s", "ringbatch.batchers.healthy.close-timeout=2s",
              "ringbatch.batchers.healthy.linger=10m", "ringbatch.batchers.healthy.max-batch-size=10",
              "ringbatch.batchers.hung.max-batch-size=1")
          .run(context -> {
            @SuppressWarnings("unchecked")
            Batcher<Integer, Void> hung = context.getBean("hung", Batcher.class);
            @SuppressWarnings("unchecked")
            Batcher<Integer, Void> healthy = context.getBean("healthy", Batcher.class);
            hung.submit(-1);
            assertThat(app.hungInSink.await(10, TimeUnit.SECONDS)).isTrue();
            for (int row = 0; row < 5; row++) {
              healthyFutures.add(healthy.submit(row));
            }
          });
    } finally {
      app.releaseHung.countDown();
    }

    // healthy waited for the hung close until only its own 2 s were left of the 3 s, then drained in them
    assertThat(app.rows).containsExactly(0, 1, 2, 3, 4);
    assertThat(healthyFutures).allSatisfy(f -> assertThat(f).isCompleted().isNotCompletedExceptionally());
  }

  @Test
  void shutdown_eachBatcherWithinItsOwnCloseTimeout_boundedByTheBudget(CapturedOutput output) throws Exception {
    HealthyIdleHung app = new HealthyIdleHung();
    long started;
    try {
      started = System.nanoTime();
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class))
          .withBean(HealthyIdleHung.class, () -> app)
          .withPropertyValues("ringbatch.shutdown-timeout=30s", "ringbatch.batchers.hung.close-timeout=300ms",
              "ringbatch.batchers.hung.max-batch-size=1")
          .run(context -> {
            @SuppressWarnings("unchecked")
            Batcher<Integer, Void> hung = context.getBean("hung", Batcher.class);
            hung.submit(-1);
            assertThat(app.hungInSink.await(10, TimeUnit.SECONDS)).isTrue();
          });
    } finally {
      app.releaseHung.countDown();
    }

    // The hung batcher gave up after its own 300 ms (plus the core's hand-over grace), not the 30 s budget.
    assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(20));
    assertThat(output).contains("ringbatch batcher 'hung' closed on shutdown without draining");
  }
}
