package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * The memory bound docs/user-guide.md (ringSize row) and docs/tuning.md give: with an async sink, the ring, every
 * batch in flight, and one more the consumer fills while it waits for a slot.
 */
class AsyncMemoryBoundTest {

  @Test
  void asyncSinkWithBatchesInFlight_holdsNoMoreItemsThanTheDocumentedBound() throws Exception {
    int ringSize = 4;
    int maxBatchSize = 4;
    int inFlight = 4;
    List<CompletableFuture<Void>> stages = new CopyOnWriteArrayList<>();
    java.util.concurrent.atomic.AtomicBoolean released = new java.util.concurrent.atomic.AtomicBoolean();
    Batcher<Integer, Void> batcher = Batcher.ofAsync("bound", BatcherConfig.builder().ringSize(ringSize)
        .limits(BatchLimits.ofDefaults().withMaxBatchSize(maxBatchSize)).maxInFlightBatches(inFlight)
        .overflowPolicy(OverflowPolicy.DROP).build(), batch -> {
          CompletableFuture<Void> stage = new CompletableFuture<>(); // completes when the test ends
          stages.add(stage);
          if (released.get()) {
            stage.complete(null);
          }
          return stage.thenRun(() -> batch.completeRemaining(null));
        });
    try {
      List<CompletableFuture<Void>> held = new ArrayList<>();
      // Offer until the batcher refuses one: every accepted item is then held in memory by the batcher.
      Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> {
        CompletableFuture<Void> f = batcher.submit(held.size());
        if (f.isCompletedExceptionally()) {
          return true;
        }
        held.add(f);
        return false;
      });
      long notDone = held.stream().filter(f -> !f.isDone()).count();
      assertThat(notDone).as("items accepted and held (not written, not failed) with %s stages in flight; stats %s",
          stages.size(), batcher.stats()).isGreaterThan(ringSize + maxBatchSize) // more than a sync sink holds
          .isLessThanOrEqualTo(ringSize + (inFlight + 1) * maxBatchSize);
    } finally {
      released.set(true);
      stages.forEach(s -> s.complete(null));
      assertThat(batcher.close(Duration.ofSeconds(5)).drained()).isTrue();
    }
  }
}
