package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Review 22: a caller on a ForkJoinPool worker (a parallel stream, the common pool: parallelism 1 on a 2-core machine)
 * blocks in submitAndWait / join. CompletableFuture's waits go through ForkJoinPool.managedBlock, so the pool adds a
 * spare worker while the caller blocks; ItemFuture parks with plain LockSupport.park, so the pool does not compensate.
 * An async sink that completes its stage on that pool (supplyAsync/runAsync on the common pool is the default) then
 * never runs: the caller waits forever.
 */
@Timeout(60)
class ForkJoinPoolCallerTest {
  private final ForkJoinPool pool = new ForkJoinPool(1); // as the common pool on this 2-core machine
  private Batcher<Integer, Integer> batcher;

  @AfterEach
  void close() {
    if (batcher != null) {
      batcher.close(Duration.ofSeconds(5));
    }
    pool.shutdownNow();
  }

  @Test
  void control_completableFutureCompletedOnThePool_callerOnThePoolGetsIt() throws Exception {
    Future<Integer> caller = pool.submit(() -> {
      CompletableFuture<Integer> f = new CompletableFuture<>();
      CompletableFuture.runAsync(() -> f.complete(5), pool); // queued behind this very task
      return f.join();
    });
    assertThat(caller.get(10, TimeUnit.SECONDS)).isEqualTo(5);
  }

  @Test
  void callerOnAForkJoinWorker_asyncSinkCompletingOnThatPool_getsItsResult() throws Exception {
    batcher = doublingOnThePool("review22-fj");
    Future<Integer> caller = pool.submit(() -> batcher.submitAndWait(21));
    assertThat(caller.get(10, TimeUnit.SECONDS)).as("the caller's result").isEqualTo(42);
  }

  @Test
  void callerOnAForkJoinWorker_joinOnSubmitFuture_getsItsResult() throws Exception {
    batcher = doublingOnThePool("review22-fj-join");
    Future<Integer> caller = pool.submit(() -> batcher.submit(21).join());
    assertThat(caller.get(10, TimeUnit.SECONDS)).as("the caller's result").isEqualTo(42);
  }

  /** An async batcher whose sink doubles each item on {@code pool}, the pool its callers run on. */
  private Batcher<Integer, Integer> doublingOnThePool(String name) {
    return Batcher.ofAsync(name, BatcherConfig.builder().ringSize(64).maxBatchSize(64).build(),
        batch -> CompletableFuture.runAsync(() -> {
          for (int i = 0; i < batch.size(); i++) {
            batch.complete(i, batch.item(i) * 2);
          }
        }, pool));
  }
}
