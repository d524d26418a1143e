package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Second hostile review: HandOver.start() returns true when the state is already OWNED, so a consumer Runnable
 * run a second time while the first run is live (a hostile ThreadFactory, or a Thread subclass whose run()
 * also hands the target to another thread) becomes a second consumer of the same ring and batch.
 */
class ConsumerRunnableRunTwiceTest {

  @Test
  @Timeout(60)
  void threadFactoryRunningTheConsumerTwice_itemsWrittenTwice() throws Exception {
    Map<Integer, AtomicInteger> writes = new ConcurrentHashMap<>();
    List<Thread> extra = new ArrayList<>();
    Batcher<Integer, Void> batcher = Batcher.of("sr-tf1", BatcherConfig.builder().ringSize(1024).maxBatchSize(16)
        .threadFactory(r -> {
          Thread second = new Thread(r, "ringbatch-sr-tf1-second");
          second.setDaemon(true);
          extra.add(second);
          second.start(); // the same Runnable, run a second time, concurrently
          Thread t = new Thread(r, "ringbatch-sr-tf1");
          t.setDaemon(true);
          return t;
        }).build(), BatchSink.<Integer>noResult(items -> {
          for (Integer i : items) {
            writes.computeIfAbsent(i, k -> new AtomicInteger()).incrementAndGet();
          }
        }));
    List<CompletableFuture<Void>> futures = new ArrayList<>();
    for (int i = 0; i < 2000; i++) {
      futures.add(batcher.submit(i));
    }
    CompletableFuture<Void> all = CompletableFuture.allOf(futures.toArray(new CompletableFuture<?>[0]));
    all.handle((r, t) -> null).completeOnTimeout(null, 10, TimeUnit.SECONDS).get();
    CloseReport report = batcher.close(Duration.ofSeconds(2));
    long twice = writes.values().stream().filter(c -> c.get() > 1).count();
    long pending = futures.stream().filter(f -> !f.isDone()).count();
    assertThat(twice + pending)
        .as("items written more than once (%s) + futures never completed (%s); report=%s", twice, pending, report)
        .isZero();
  }
}
