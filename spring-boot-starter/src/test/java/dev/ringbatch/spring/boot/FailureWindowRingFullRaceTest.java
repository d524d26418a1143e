package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherStats;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.support.StaticListableBeanFactory;
import org.springframework.boot.health.contributor.Status;

/**
 * {@code BatcherHealthIndicator.check} reads {@code window.fullSinceNanos} twice: once to decide whether to set
 * it, once to compute how long the ring has been full. A concurrent health check that saw room (the
 * {@code /health} group and {@code /health/ringbatch}, liveness and readiness probes) writes -1 in between, and
 * the first check computes {@code now - (-1)}: the ring "full for" the whole {@code nanoTime} value, so
 * OUT_OF_SERVICE although the ring was seen full for 0 s out of {@code ring-full-for=10s}.
 *
 * <p>A stress test (no sleeps): the batcher's stats say "full" to thread A and "room" to thread B; the clock
 * stands still, so without the race A can never see a full duration above 0. Expected to fail within a
 * fraction of the iterations on any multi-core machine; fix: read {@code fullSinceNanos} once into a local.
 */
class FailureWindowRingFullRaceTest {
  private static final long NOW = 1L << 60;
  private static final int ITERATIONS = 300_000;

  @Test
  void concurrentHealthChecks_ringFullForZeroSeconds_neverDegraded() throws Exception {
    Thread[] fullReader = new Thread[1];
    BatcherStats full = stats(0);
    BatcherStats room = stats(4);
    Batcher<?, ?> batcher = (Batcher<?, ?>) Proxy.newProxyInstance(getClass().getClassLoader(),
        new Class<?>[] {Batcher.class}, (proxy, method, args) -> switch (method.getName()) {
          case "name" -> "orders";
          case "isClosed", "removeStatsRecorder" -> false;
          case "stats" -> Thread.currentThread() == fullReader[0] ? full : room;
          case "shardStats" -> List.of(Thread.currentThread() == fullReader[0] ? full : room);
          case "hashCode" -> System.identityHashCode(proxy);
          case "equals" -> proxy == args[0];
          case "toString" -> "fake batcher";
          default -> null; // addStatsRecorder
        });
    StaticListableBeanFactory beans = new StaticListableBeanFactory(Map.of("orders", batcher));
    @SuppressWarnings({"unchecked", "rawtypes"})
    ObjectProvider<Batcher<?, ?>> provider = (ObjectProvider) beans.getBeanProvider(Batcher.class);
    BatcherProperties properties = new BatcherProperties();
    BatcherFactory factory = new BatcherFactory(properties);
    BatcherLifecycle lifecycle = new BatcherLifecycle(factory, provider, Duration.ofSeconds(1));
    lifecycle.start();
    BatcherHealthIndicator health =
        new BatcherHealthIndicator(factory, lifecycle, properties.getHealth(), () -> NOW);

    CyclicBarrier start = new CyclicBarrier(2);
    AtomicBoolean done = new AtomicBoolean();
    AtomicReference<Object> degraded = new AtomicReference<>();
    Thread a = new Thread(() -> {
      await(start);
      for (int i = 0; i < ITERATIONS && degraded.get() == null; i++) {
        var h = health.health();
        if (!h.getStatus().equals(Status.UP)) {
          degraded.set(h.getDetails());
        }
      }
      done.set(true);
    });
    fullReader[0] = a;
    Thread b = new Thread(() -> {
      await(start);
      while (!done.get()) {
        health.health();
      }
    });
    a.start();
    b.start();
    a.join();
    b.join();
    assertThat(degraded.get()).as("ring seen full for 0 s of ring-full-for=10s, yet degraded").isNull();
  }

  private static BatcherStats stats(long remaining) {
    return new BatcherStats(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, remaining);
  }

  private static void await(CyclicBarrier barrier) {
    try {
      barrier.await();
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
