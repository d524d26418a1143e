package dev.ringbatch.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.ringbatch.Batch;
import dev.ringbatch.BatchLimits;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.OverflowPolicy;
import dev.ringbatch.RetryPolicy;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class BatcherMetricsTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final CountDownLatch gate = new CountDownLatch(1);
  private Batcher<Integer, Void> batcher;

  @AfterEach
  void close() {
    gate.countDown();
    if (batcher != null) {
      batcher.close(WAIT);
    }
  }

  /** Fails odd items; waits at the gate while the item 1000 is in the batch. */
  private Batcher<Integer, Void> start(int ringSize) {
    batcher = Batcher.of("orders", BatcherConfig.builder().ringSize(ringSize).maxBatchSize(ringSize)
        .overflowPolicy(OverflowPolicy.DROP).build(), (Batch<Integer, Void> batch) -> {
          for (int i = 0; i < batch.size(); i++) {
            if (batch.item(i) == 1000) {
              gate.await(10, TimeUnit.SECONDS);
            }
            if (batch.item(i) % 2 == 1) {
              batch.fail(i, new IllegalArgumentException("odd"));
            }
          }
          batch.completeRemaining(null);
        });
    return batcher;
  }

  @Test
  void monitor_afterRealTraffic_countsOutcomesBatchesAndWriteTimes() {
    Batcher<Integer, Void> b = BatcherMetrics.monitor(registry, start(64), "service", "shop");
    List<CompletableFuture<Void>> futures = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      futures.add(b.submit(i));
    }
    futures.forEach(f -> f.exceptionally(e -> null).join());

    assertThat(count("ringbatch.items", "result", "written")).isEqualTo(5);
    assertThat(count("ringbatch.items", "result", "failed")).isEqualTo(5);
    assertThat(count("ringbatch.items", "result", "rejected")).isZero();
    assertThat(count("ringbatch.items", "result", "abandoned")).isZero();
    assertThat(registry.get("ringbatch.batch.size").tag("name", "orders").tag("service", "shop").summary()
        .totalAmount()).isEqualTo(10);
    long batches = b.stats().batches();
    assertThat(registry.get("ringbatch.batch.size").summary().count()).isEqualTo(batches);
    assertThat(writes("success") + writes("partial") + writes("failure")).isEqualTo(batches);
    assertThat(registry.get("ringbatch.ring.capacity").gauge().value()).isEqualTo(64);
    assertThat(registry.get("ringbatch.inflight").gauge().value()).isZero();
    assertThat(registry.get("ringbatch.limits.batch.size").gauge().value()).isEqualTo(64);
    assertThat(registry.get("ringbatch.limits.linger").gauge().value()).isZero();
    b.setLimits(BatchLimits.of(32, BatchLimits.NO_BYTE_LIMIT, Duration.ofMillis(3)));
    assertThat(registry.get("ringbatch.limits.batch.size").gauge().value()).isEqualTo(32);
    assertThat(registry.get("ringbatch.limits.linger").gauge().value()).isEqualTo(0.003);
  }

  @Test
  void lingerGauge_readsALingerOfForever_inSeconds_notNaN() {
    Batcher<Integer, Void> b = BatcherMetrics.monitor(registry, start(64));
    b.setLimits(BatchLimits.of(32, BatchLimits.NO_BYTE_LIMIT, java.time.temporal.ChronoUnit.FOREVER.getDuration()));
    assertThat(registry.get("ringbatch.limits.linger").gauge().value()).as("linger %s", b.limits().linger())
        .isNotNaN().isGreaterThan(1e9); // decades, as the core keeps it
  }

  @Test
  void rejections_countedByReason_andRingGaugeSeesTheBacklog() throws Exception {
    Batcher<Integer, Void> b = BatcherMetrics.monitor(registry, start(4));
    b.submit(1000); // holds the consumer at the gate
    org.awaitility.Awaitility.await().atMost(WAIT).until(() -> b.stats().remainingCapacity() == 4);
    for (int i = 0; i < 6; i++) {
      b.offer(i * 2); // 4 fit in the ring, 2 are dropped
    }

    assertThat(count("ringbatch.rejected", "reason", "full")).isEqualTo(2);
    assertThat(count("ringbatch.rejected", "reason", "timeout")).isZero();
    assertThat(count("ringbatch.items", "result", "rejected")).isEqualTo(2);
    assertThat(registry.get("ringbatch.ring.remaining").gauge().value()).isZero();
    assertThat(registry.get("ringbatch.inflight").gauge().value()).isEqualTo(5);
  }

  @Test
  void everyMeter_hasNameTagDescriptionAndBaseUnit() {
    BatcherMetrics.monitor(registry, start(64));

    assertThat(registry.getMeters()).hasSize(4 + 4 + 3 + 1 + 3 + 1 + 1 + 2); // + the limits in force
    for (Meter meter : registry.getMeters()) {
      assertThat(meter.getId().getName()).startsWith("ringbatch.");
      assertThat(meter.getId().getTag("name")).isEqualTo("orders");
      assertThat(meter.getId().getDescription()).isNotBlank();
      String name = meter.getId().getName();
      if (name.equals("ringbatch.batch.retries")) {
        assertThat(meter.getId().getBaseUnit()).isEqualTo("retries");
      } else if (name.equals("ringbatch.limits.linger")) {
        assertThat(meter.getId().getBaseUnit()).isEqualTo("seconds");
      } else if (!name.equals("ringbatch.batch.write") && !name.startsWith("ringbatch.item.wait")) {
        assertThat(meter.getId().getBaseUnit()).isEqualTo("items");
      }
    }
  }

  @Test
  void binderClose_removesEveryMeterAndStopsRecording() {
    Batcher<Integer, Void> b = start(64);
    BatcherMetrics metrics = new BatcherMetrics(b, Tags.empty());
    metrics.bindTo(registry);

    metrics.close();
    b.submit(2).join();

    assertThat(registry.getMeters()).isEmpty();
  }

  @Test
  void bindTo_twice_rejected() {
    BatcherMetrics metrics = new BatcherMetrics(start(64), Tags.empty());
    metrics.bindTo(registry);

    assertThatThrownBy(() -> metrics.bindTo(new SimpleMeterRegistry()))
        .isExactlyInstanceOf(IllegalStateException.class)
        .hasMessage("BatcherMetrics of batcher 'orders' is already bound");
  }

  @Test
  void writeTimer_taggedByOutcome() {
    Batcher<Integer, Void> b = BatcherMetrics.monitor(registry, start(64));
    b.submit(2).join();                                              // success
    b.submit(3).exceptionally(e -> null).join();                     // failure: its only item failed
    b.flush().join();

    assertThat(writes("success")).isEqualTo(1);
    assertThat(writes("failure")).isEqualTo(1);
    assertThat(writes("partial")).isZero();
  }

  @Test
  void writeTimer_partialBatch_taggedPartial() throws Exception {
    Batcher<Integer, Void> b = BatcherMetrics.monitor(registry, start(64));
    b.submit(1000); // holds the consumer at the gate, alone in its batch
    org.awaitility.Awaitility.await().atMost(WAIT).until(() -> b.stats().remainingCapacity() == 64);
    CompletableFuture<Void> even = b.submit(4);
    CompletableFuture<Void> odd = b.submit(5);
    gate.countDown();
    even.join();
    odd.exceptionally(e -> null).join();

    assertThat(writes("success")).isEqualTo(1);
    assertThat(writes("partial")).isEqualTo(1);
    assertThat(writes("failure")).isZero();
  }

  @Test
  void retries_counted() {
    AtomicInteger calls = new AtomicInteger();
    batcher = Batcher.of("orders", BatcherConfig.builder()
        .retryPolicy(RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ZERO).maxBackoff(Duration.ZERO)
            .build()).build(), (Batch<Integer, Void> batch) -> {
          if (calls.incrementAndGet() < 3) {
            throw new IllegalStateException("down");
          }
          batch.completeRemaining(null);
        });
    BatcherMetrics.monitor(registry, batcher);

    batcher.submit(1).join();

    assertThat(registry.get("ringbatch.batch.retries").tag("name", "orders").counter().count()).isEqualTo(2);
    assertThat(writes("success")).isEqualTo(1);
  }

  @Test
  void monitor_twiceOnOneRegistry_countsEveryBatchOnce() {
    Batcher<Integer, Void> b = BatcherMetrics.monitor(registry, start(64));
    BatcherMetrics.monitor(registry, b, "service", "shop");
    for (int i = 0; i < 10; i++) {
      b.submit(i * 2).join();
    }

    assertThat(registry.get("ringbatch.batch.size").summary().count()).isEqualTo(b.stats().batches());
    assertThat(registry.get("ringbatch.batch.size").summary().totalAmount()).isEqualTo(10);
    assertThat(registry.find("ringbatch.items").tag("service", "shop").meters()).isEmpty();
  }

  @Test
  void monitor_onTwoRegistries_bindsBoth_andCloseOfTheRepeatRemovesNothing() {
    SimpleMeterRegistry other = new SimpleMeterRegistry();
    Batcher<Integer, Void> b = BatcherMetrics.monitor(registry, start(64));
    BatcherMetrics.monitor(other, b);
    BatcherMetrics repeat = new BatcherMetrics(b, Tags.empty());
    repeat.bindTo(registry);
    repeat.close();
    b.submit(2).join();

    assertThat(registry.get("ringbatch.batch.size").summary().count()).isEqualTo(1);
    assertThat(other.get("ringbatch.batch.size").summary().count()).isEqualTo(1);
  }

  @Test
  void binderClose_thenRebind_bindsAgain() {
    Batcher<Integer, Void> b = start(64);
    BatcherMetrics first = new BatcherMetrics(b, Tags.empty());
    first.bindTo(registry);
    first.close();
    BatcherMetrics.monitor(registry, b);
    b.submit(2).join();

    assertThat(registry.get("ringbatch.batch.size").summary().count()).isEqualTo(1);
  }

  @Test
  void itemWaits_countEveryItem_andSeeTheTimeQueuedBehindASlowWrite() throws Exception {
    Batcher<Integer, Void> b = BatcherMetrics.monitor(registry, start(64));
    CompletableFuture<Void> slow = b.submit(1000); // holds the consumer at the gate
    await().atMost(WAIT).until(() -> b.stats().remainingCapacity() == 64);
    CompletableFuture<Void> queued = b.submit(2);
    CompletableFuture<Void> alsoQueued = b.submit(4);
    gate.countDown();
    CompletableFuture.allOf(slow, queued, alsoQueued).get(10, TimeUnit.SECONDS);

    var waits = registry.get("ringbatch.item.wait").tag("name", "orders").timer();
    assertThat(waits.count()).isEqualTo(3);
    assertThat(waits.totalTime(TimeUnit.NANOSECONDS)).isPositive();
    assertThat(waits.max(TimeUnit.NANOSECONDS)).isPositive()
        .isGreaterThanOrEqualTo(waits.totalTime(TimeUnit.NANOSECONDS) / 3);
  }

  @Test
  void itemWaits_areATimer_thatHonoursTheRegistrysPercentilesAndSlos() throws Exception {
    SimpleMeterRegistry configured = new SimpleMeterRegistry();
    configured.config().meterFilter(new io.micrometer.core.instrument.config.MeterFilter() {
      @Override
      public io.micrometer.core.instrument.distribution.DistributionStatisticConfig configure(
          io.micrometer.core.instrument.Meter.Id id,
          io.micrometer.core.instrument.distribution.DistributionStatisticConfig config) {
        return io.micrometer.core.instrument.distribution.DistributionStatisticConfig.builder()
            .percentiles(0.99).serviceLevelObjectives(java.time.Duration.ofSeconds(60).toNanos())
            .build().merge(config);
      }
    });
    Batcher<Integer, Void> b = BatcherMetrics.monitor(configured, start(64));
    gate.countDown();
    for (int i = 0; i < 10; i++) {
      b.submit(2).get(10, TimeUnit.SECONDS);
    }

    var snapshot = configured.get("ringbatch.item.wait").timer().takeSnapshot();
    assertThat(snapshot.count()).isEqualTo(10);
    assertThat(snapshot.percentileValues()).as("the p99 the registry asked for").hasSize(1);
    assertThat(snapshot.histogramCounts()).as("the SLO bucket: every wait under a minute")
        .singleElement().satisfies(bucket -> assertThat(bucket.count()).isEqualTo(10));
  }

  @Test
  void itemWaitsOff_registersNoWaitMeters() {
    Batcher<Integer, Void> b = start(64);
    new BatcherMetrics(b, Tags.empty(), false).bindTo(registry);
    b.submit(2).join();

    assertThat(registry.find("ringbatch.item.wait").meters()).isEmpty();
    assertThat(registry.get("ringbatch.batch.size").summary().count()).isEqualTo(1);
  }

  private long writes(String outcome) {
    return registry.get("ringbatch.batch.write").tag("name", "orders").tag("outcome", outcome).timer().count();
  }

  private double count(String name, String tag, String value) {
    return registry.get(name).tag("name", "orders").tag(tag, value).functionCounter().count();
  }

  /**
   * Bound to a composite (as Spring Boot binds) and then to one of its registries, a batcher counts each batch
   * once there: the second bind does nothing.
   */
  @Test
  void boundToACompositeAndThenToItsChild_countsEachBatchOnceInTheChild() {
    CompositeMeterRegistry composite = new CompositeMeterRegistry();
    composite.add(registry);
    Batcher<Integer, Void> b = BatcherMetrics.monitor(composite, start(16));
    BatcherMetrics.monitor(registry, b);

    b.submit(2).join();
    b.submit(4).join();

    assertThat(registry.get("ringbatch.batch.size").summary().count()).as("batch.size count, %s", b.stats())
        .isEqualTo(b.stats().batches()).isEqualTo(2);
    assertThat(registry.get("ringbatch.item.wait").timer().count()).as("item.wait count").isEqualTo(2);
  }
}
