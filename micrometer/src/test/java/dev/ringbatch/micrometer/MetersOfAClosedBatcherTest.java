package dev.ringbatch.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringbatch.Batch;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.CloseReport;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A closed batcher's meters keep its final counts until its binder closes or a successor of its name binds; those
 * of a batcher bound with monitor(), which gives no binder, go with its close.
 */
class MetersOfAClosedBatcherTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final List<Batcher<?, ?>> open = new ArrayList<>();

  @AfterEach
  void closeAll() {
    open.forEach(b -> b.close(WAIT));
  }

  private Batcher<Integer, Void> start(String name) {
    Batcher<Integer, Void> b = Batcher.of(name, BatcherConfig.builder().ringSize(64).build(),
        (Batch<Integer, Void> batch) -> batch.completeRemaining(null));
    open.add(b);
    return b;
  }

  private double items(SimpleMeterRegistry in, String result) {
    return in.get("ringbatch.items").tag("result", result).functionCounter().count();
  }

  @Test
  void aClosedBatchersMeters_stayWithItsFinalCounts_untilItsBinderCloses() {
    Batcher<Integer, Void> b = start("orders");
    BatcherMetrics metrics = new BatcherMetrics(b, Tags.empty());
    metrics.bindTo(registry);
    b.submit(1).join();
    b.submit(2);

    b.close(WAIT);
    b.submit(3).exceptionally(e -> null).join(); // refused after the close: not written

    assertThat(items(registry, "written")).isEqualTo(2);
    assertThat(registry.get("ringbatch.batch.size").summary().totalAmount()).isEqualTo(2);
    metrics.close();
    assertThat(registry.getMeters()).isEmpty();
  }

  @Test
  void itemsAClose_abandoned_reachTheLastPublicationOfARegistryClosedAfterTheBatcher() throws Exception {
    AtomicReference<Double> published = new AtomicReference<>();
    SimpleMeterRegistry push = new SimpleMeterRegistry() {
      @Override
      public void close() { // as a push registry's close: one last publication
        for (Meter meter : getMeters()) {
          if (meter.getId().getName().equals("ringbatch.items")
              && "abandoned".equals(meter.getId().getTag("result"))) {
            published.set(((FunctionCounter) meter).count());
          }
        }
        super.close();
      }
    };
    CountDownLatch inSink = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    Batcher<Integer, Void> b = Batcher.of("orders",
        BatcherConfig.builder().ringSize(64).maxBatchSize(1).build(), (Batch<Integer, Void> batch) -> {
          inSink.countDown();
          release.await(10, TimeUnit.SECONDS);
          batch.completeRemaining(null);
        });
    open.add(b);
    new BatcherMetrics(b, Tags.empty()).bindTo(push);
    b.submit(1);
    assertThat(inSink.await(10, TimeUnit.SECONDS)).isTrue();
    CompletableFuture<Void> queued = b.submit(2);

    CloseReport report = b.close(Duration.ofMillis(100));
    release.countDown();
    push.close();

    assertThat(queued).failsWithin(WAIT).withThrowableOfType(java.util.concurrent.ExecutionException.class);
    assertThat(report.abandoned()).isPositive();
    assertThat(published.get()).isEqualTo((double) report.abandoned());
  }

  @Test
  void aBatcherCreatedAgainUnderItsName_takesOverTheClosedOnesMeters() {
    Batcher<Integer, Void> first = start("orders");
    new BatcherMetrics(first, Tags.empty()).bindTo(registry);
    first.submit(1).join();
    first.close(WAIT);

    Batcher<Integer, Void> second = BatcherMetrics.monitor(registry, start("orders"));
    second.submit(2).join();
    second.submit(3).join();

    assertThat(items(registry, "written")).isEqualTo(2);
    assertThat(registry.get("ringbatch.batch.size").summary().totalAmount()).isEqualTo(2);
    assertThat(registry.find("ringbatch.items").tag("result", "written").meters()).hasSize(1);
  }

  @Test
  void twoRunningBatchersOfOneName_onOneRegistry_refusedAtTheSecondBind() {
    Batcher<Integer, Void> first = BatcherMetrics.monitor(registry, start("orders"));
    Batcher<Integer, Void> second = start("orders");

    assertThatThrownBy(() -> BatcherMetrics.monitor(registry, second))
        .isExactlyInstanceOf(IllegalStateException.class)
        .hasMessageContaining("batcher 'orders'")
        .hasMessageContaining("another running batcher is bound there with the same name and tags");
    first.close(WAIT); // the first's close leaves its meters to it alone; the second binds once it is gone
    BatcherMetrics.monitor(registry, second);
    second.submit(1).join();
    assertThat(items(registry, "written")).isEqualTo(1);
  }

  @Test
  void twoRunningBatchersOfOneName_withTagsThatTellThemApart_bothBound() {
    Batcher<Integer, Void> first = BatcherMetrics.monitor(registry, start("orders"), "region", "eu");
    Batcher<Integer, Void> second = BatcherMetrics.monitor(registry, start("orders"), "region", "us");
    second.submit(1).join();

    assertThat(registry.get("ringbatch.items").tags("region", "us", "result", "written").functionCounter().count())
        .isEqualTo(1);
    assertThat(registry.get("ringbatch.items").tags("region", "eu", "result", "written").functionCounter().count())
        .isZero();
    assertThat(first.isClosed()).isFalse();
  }

  @Test
  void aMonitoredBatchersClose_removesItsMeters_soBatchersOfEverNewNamesLeaveNone() {
    for (int i = 0; i < 5; i++) {
      Batcher<Integer, Void> b = BatcherMetrics.monitor(registry, start("tenant-" + i));
      b.submit(i).join();
      b.close(WAIT);
    }

    assertThat(registry.getMeters()).isEmpty();
  }

  @Test
  void monitorWithoutItemWaits_removesTheMetersAtTheClose_too() {
    for (int i = 0; i < 5; i++) {
      Batcher<Integer, Void> b = BatcherMetrics.monitor(registry, start("tenant-" + i), false, Tags.empty());
      b.submit(i).join();
      b.close(WAIT);
    }

    assertThat(registry.getMeters()).isEmpty();
  }
}
