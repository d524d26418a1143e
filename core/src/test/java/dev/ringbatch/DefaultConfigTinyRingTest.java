package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A batcher given nothing but its ring size runs the adaptive limits (the default) with the ring as its cap: on
 * rings of 1, 2 and 64, with a sync, an async and a sharded sink, every item is written exactly once with its own
 * result, no batch exceeds the ring, and the close drains.
 */
class DefaultConfigTinyRingTest {
  private static final int CALLERS = 8;
  private static final int PER_CALLER = 500;

  @ParameterizedTest(name = "ring {0}, {1}")
  @CsvSource({"1, sync", "2, sync", "64, sync", "1, async", "2, async", "64, async", "1, sharded", "64, sharded"})
  void ringAlone_everyItemWrittenOnceWithItsResult_noBatchOverTheRing(int ringSize, String kind) throws Exception {
    BatcherConfig config = BatcherConfig.builder().ringSize(ringSize).build();
    assertThat(config.adaptive()).isEqualTo(Adaptive.throughput());
    assertThat(config.limits().maxBatchSize()).isEqualTo(ringSize);
    ConcurrentHashMap<Integer, AtomicInteger> writes = new ConcurrentHashMap<>();
    AtomicInteger largest = new AtomicInteger();
    BatchSink<Integer, Integer> sink = batch -> {
      largest.accumulateAndGet(batch.size(), Math::max);
      for (int i = 0; i < batch.size(); i++) {
        writes.computeIfAbsent(batch.item(i), k -> new AtomicInteger()).incrementAndGet();
        batch.complete(i, -batch.item(i));
      }
    };
    Batcher<Integer, Integer> batcher = switch (kind) {
      case "sync" -> Batcher.of("tiny", config, sink);
      case "async" -> Batcher.ofAsync("tiny", config, batch -> {
        sink.write(batch);
        return CompletableFuture.completedFuture(null);
      });
      default -> Batcher.sharded("tiny", config, 3, shard -> sink);
    };
    List<Thread> callers = new ArrayList<>();
    AtomicReferenceArray<CompletableFuture<Integer>> futures = new AtomicReferenceArray<>(CALLERS * PER_CALLER);
    for (int c = 0; c < CALLERS; c++) {
      int caller = c;
      Thread t = new Thread(() -> {
        for (int i = 0; i < PER_CALLER; i++) {
          int id = caller * PER_CALLER + i;
          CompletableFuture<Integer> f = batcher.submit(id);
          futures.set(id, f);
          if (i % 3 == 0) {
            f.join(); // closed loop part of the time: the tuning sees callers come back
          }
        }
      });
      t.start();
      callers.add(t);
    }
    for (Thread t : callers) {
      t.join(TimeUnit.SECONDS.toMillis(30));
      assertThat(t.isAlive()).as("a caller stuck").isFalse();
    }
    CloseReport report = batcher.close(Duration.ofSeconds(10));
    assertThat(report.drained()).isTrue();
    for (int id = 0; id < CALLERS * PER_CALLER; id++) {
      assertThat(futures.get(id)).as("item %s", id).isCompletedWithValue(-id);
      assertThat(writes.get(id)).as("item %s written once", id).hasValue(1);
    }
    assertThat(largest.get()).isLessThanOrEqualTo(ringSize);
    assertThat(report.stats().written()).isEqualTo(CALLERS * PER_CALLER);
  }
}
