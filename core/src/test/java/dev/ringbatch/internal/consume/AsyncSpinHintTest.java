package dev.ringbatch.internal.consume;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.internal.ring.ItemFuture;
import java.time.Duration;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Found in review of 14f4513: SpinHint decides whether platform-thread callers spin before they park, "only while
 * the sink writes batches quickly" (docs/architecture.md). Only SyncBatchWriter fed it; an async batcher's hint stayed
 * at its initial {@code true} forever, so its callers spun whatever the sink's latency or the batch size. Both
 * writers now feed it: after slow writes, neither hands out spinning futures.
 */
class AsyncSpinHintTest {

  /** Submits one item, waits until a platform caller is parked on it, then lets the write finish via {@code release}. */
  private static void slowRound(Batcher<Integer, Object> batcher, int item, Runnable release) throws Exception {
    CompletableFuture<Object> future = batcher.submit(item);
    Thread caller = new Thread(() -> future.join(), "review22-caller");
    caller.start();
    // parked on the ItemFuture, i.e. after its spin
    await().atMost(Duration.ofSeconds(10)).until(() -> caller.getState() == Thread.State.WAITING);
    release.run();
    caller.join(TimeUnit.SECONDS.toMillis(10));
    assertThat(future).isCompleted(); // succeeded
  }

  @Test
  @Timeout(60)
  void anAsyncSinkWhoseWritesTakeMillisecondsStopsHandingOutSpinningFutures() throws Exception {
    BatcherConfig config = BatcherConfig.builder().ringSize(64).maxBatchSize(64).build();

    // Control: a sync sink that is slow (the caller parks during each write) turns the spin off.
    BlockingQueue<CountDownLatch> syncWrites = new ArrayBlockingQueue<>(16);
    Batcher<Integer, Object> sync = Batcher.of("review22-sync", config, (dev.ringbatch.BatchSink<Integer, Object>) batch -> {
      CountDownLatch latch = new CountDownLatch(1);
      syncWrites.add(latch);
      latch.await();
      batch.completeRemaining(null);
    });
    try {
      for (int i = 0; i < 4; i++) {
        slowRound(sync, i, () -> {
          try {
            syncWrites.poll(10, TimeUnit.SECONDS).countDown();
          } catch (InterruptedException e) {
            throw new AssertionError(e);
          }
        });
      }
      CompletableFuture<Object> last = sync.submit(99);
      assertThat(last).as("sync batcher after slow writes").isNotInstanceOf(ItemFuture.Spinning.class);
      syncWrites.poll(10, TimeUnit.SECONDS).countDown();
      last.join();
    } finally {
      CountDownLatch next;
      while ((next = syncWrites.poll()) != null) {
        next.countDown();
      }
      sync.close(Duration.ofSeconds(5));
    }

    // The same slow writes through an async sink: the hint is told too, and callers stop spinning.
    BlockingQueue<CompletableFuture<Void>> asyncWrites = new ArrayBlockingQueue<>(16);
    Batcher<Integer, Object> async = Batcher.ofAsync("review22-async", config, batch -> {
      CompletableFuture<Void> stage = new CompletableFuture<>();
      asyncWrites.add(stage);
      batch.completeRemaining(null); // recorded now; the stage's completion settles the batch
      return stage;
    });
    try {
      for (int i = 0; i < 4; i++) {
        slowRound(async, i, () -> {
          try {
            asyncWrites.poll(10, TimeUnit.SECONDS).complete(null);
          } catch (InterruptedException e) {
            throw new AssertionError(e);
          }
        });
      }
      CompletableFuture<Object> last = async.submit(99);
      asyncWrites.poll(10, TimeUnit.SECONDS).complete(null);
      last.join();
      assertThat(last).as("async batcher after the same slow writes").isNotInstanceOf(ItemFuture.Spinning.class);
    } finally {
      CompletableFuture<Void> next;
      while ((next = asyncWrites.poll()) != null) {
        next.complete(null);
      }
      async.close(Duration.ofSeconds(5));
    }
  }
}
