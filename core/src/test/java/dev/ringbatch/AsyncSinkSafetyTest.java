package dev.ringbatch;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiConsumer;
import java.util.function.BiFunction;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Regression tests for async sinks and for sinks that misuse the {@link Batch}: a caller waiting inside a
 * dependent action, a stage that fires its callbacks twice, and outcomes recorded into a batch after it was
 * written must never touch another batch's callers.
 */
@Timeout(value = 30, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class AsyncSinkSafetyTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  private final ExecutorService remote = Executors.newCachedThreadPool(runnable -> {
    Thread thread = new Thread(runnable, "async-sink-safety-remote");
    thread.setDaemon(true);
    return thread;
  });
  private final List<Batcher<?, ?>> batchers = new CopyOnWriteArrayList<>();
  private final List<CompletableFuture<?>> stages = new CopyOnWriteArrayList<>();

  @AfterEach
  void stop() {
    stages.forEach(stage -> stage.complete(null));
    batchers.forEach(b -> b.close(Duration.ofSeconds(1)));
    remote.shutdownNow();
  }

  private <T, R> Batcher<T, R> track(Batcher<T, R> batcher) {
    batchers.add(batcher);
    return batcher;
  }

  /** One call of the async sink: the items, the batch handed over and the stage the test completes. */
  record Call<S extends CompletableFuture<Void>>(List<Integer> items, Batch<Integer, Integer> batch, S stage) {}

  // ---------------------------------------------------------------- defect 5

  /**
   * Defect 5. A dependent action (not async) of a future runs on the thread that completed the sink's
   * stage; a submitAndWait there must not wait for a batch slot that thread itself holds.
   */
  @Test
  void submitAndWaitInDependentActionOnCompletingThread_returns() throws Exception {
    BlockingQueue<Call<CompletableFuture<Void>>> calls = new LinkedBlockingQueue<>();
    AsyncBatchSink<Integer, Integer> sink = batch -> {
      for (int i = 0; i < batch.size(); i++) {
        batch.complete(i, batch.item(i) * 10);
      }
      if (batch.item(0) != 1) {
        return CompletableFuture.completedFuture(null);
      }
      CompletableFuture<Void> stage = new CompletableFuture<>();
      stages.add(stage);
      calls.add(new Call<>(List.copyOf(batch.items()), batch, stage));
      return stage;
    };
    Batcher<Integer, Integer> batcher = track(Batcher.ofAsync("nested-wait",
        BatcherConfig.builder().maxInFlightBatches(1).build(), sink));

    CompletableFuture<Integer> first = batcher.submit(1);
    Call<CompletableFuture<Void>> call = calls.poll(10, SECONDS);
    assertThat(call).isNotNull();
    CompletableFuture<Integer> nested = new CompletableFuture<>();
    first.thenRun(() -> {
      try {
        nested.complete(batcher.submitAndWait(2));
      } catch (Throwable t) {
        nested.completeExceptionally(t);
      }
    });
    // Complete the stage only once the batcher has registered on it, so that its callback runs on the
    // remote thread (not inline, on the consumer thread, at registration).
    await().atMost(WAIT).until(() -> call.stage().getNumberOfDependents() > 0);
    remote.execute(() -> call.stage().complete(null)); // a separate thread completes the stage

    // Nothing waits on `first` before this: a thread waiting on a future may run its dependent actions.
    assertThat(nested).as("submitAndWait inside the dependent action").succeedsWithin(WAIT).isEqualTo(20);
    assertThat(first).isCompletedWithValue(10);
  }

  // ---------------------------------------------------------------- defect 6

  /**
   * A stage that remembers the callbacks registered on it, so that the test can fire them a second time
   * (a buggy client library). Derived stages are plain CompletableFutures.
   */
  static final class ReplayableStage extends CompletableFuture<Void> {
    private final List<Runnable> replays = new CopyOnWriteArrayList<>();

    @Override
    public <U> CompletableFuture<U> newIncompleteFuture() {
      return new CompletableFuture<>();
    }

    @Override
    public CompletableFuture<Void> whenComplete(BiConsumer<? super Void, ? super Throwable> action) {
      replays.add(() -> action.accept(null, null));
      return super.whenComplete(action);
    }

    @Override
    public CompletableFuture<Void> whenCompleteAsync(BiConsumer<? super Void, ? super Throwable> action) {
      replays.add(() -> action.accept(null, null));
      return super.whenCompleteAsync(action);
    }

    @Override
    public CompletableFuture<Void> whenCompleteAsync(BiConsumer<? super Void, ? super Throwable> action,
        Executor executor) {
      replays.add(() -> action.accept(null, null));
      return super.whenCompleteAsync(action, executor);
    }

    @Override
    public <U> CompletableFuture<U> handle(BiFunction<? super Void, Throwable, ? extends U> fn) {
      replays.add(() -> fn.apply(null, null));
      return super.handle(fn);
    }

    @Override
    public <U> CompletableFuture<U> handleAsync(BiFunction<? super Void, Throwable, ? extends U> fn) {
      replays.add(() -> fn.apply(null, null));
      return super.handleAsync(fn);
    }

    @Override
    public <U> CompletableFuture<U> handleAsync(BiFunction<? super Void, Throwable, ? extends U> fn,
        Executor executor) {
      replays.add(() -> fn.apply(null, null));
      return super.handleAsync(fn, executor);
    }

    /** Calls every registered callback once more, as if the stage had completed (normally) again. */
    void fireAgain() {
      assertThat(replays).as("callbacks the batcher registered on the stage").isNotEmpty();
      replays.forEach(Runnable::run);
    }
  }

  @Test
  void stageFiringItsCallbackTwice_doesNotSettleALaterBatch() throws Exception {
    BlockingQueue<Call<ReplayableStage>> calls = new LinkedBlockingQueue<>();
    AsyncBatchSink<Integer, Integer> sink = batch -> {
      ReplayableStage stage = new ReplayableStage();
      stages.add(stage);
      calls.add(new Call<>(List.copyOf(batch.items()), batch, stage));
      return stage;
    };
    Batcher<Integer, Integer> batcher = track(Batcher.ofAsync("twice",
        BatcherConfig.builder().maxInFlightBatches(1).build(), sink));

    CompletableFuture<Integer> first = batcher.submit(1);
    Call<ReplayableStage> one = calls.poll(10, SECONDS);
    one.batch().complete(0, 100);
    one.stage().complete(null);
    assertThat(first).succeedsWithin(WAIT).isEqualTo(100);

    CompletableFuture<Integer> second = batcher.submit(2);
    Call<ReplayableStage> two = calls.poll(10, SECONDS);
    assertThat(two.items()).containsExactly(2);
    one.stage().fireAgain();
    assertThat(second).as("batch 2's caller after batch 1's callback fired again").isNotDone();
    two.batch().complete(0, 200);
    two.stage().complete(null);
    assertThat(second).succeedsWithin(WAIT).isEqualTo(200);

    CompletableFuture<Integer> third = batcher.submit(3);
    Call<ReplayableStage> three = calls.poll(10, SECONDS);
    assertThat(three.items()).containsExactly(3);
    one.stage().fireAgain();
    two.stage().fireAgain();
    assertThat(third).as("batch 3's caller after batches 1 and 2 fired their callbacks again").isNotDone();
    three.batch().complete(0, 300);
    three.stage().complete(null);
    assertThat(third).succeedsWithin(WAIT).isEqualTo(300);

    assertThat(batcher.flush()).succeedsWithin(WAIT);
    assertThat(batcher.stats().written()).isEqualTo(3);
    assertThat(batcher.stats().failed()).isZero();
  }

  // ---------------------------------------------------------------- defect 7

  /** How a misbehaving sink records into a batch it kept. */
  enum LateRecord {
    COMPLETE {
      @Override
      void into(Batch<?, Integer> batch) {
        batch.complete(0, -1);
      }
    },
    FAIL {
      @Override
      void into(Batch<?, Integer> batch) {
        batch.fail(0, new IllegalStateException("stale outcome"));
      }
    };

    abstract void into(Batch<?, Integer> batch);

    /** Records into {@code batch} and returns what that threw, or null if it was accepted. */
    Throwable attempt(Batch<?, Integer> batch) {
      return catchThrowable(() -> into(batch));
    }
  }

  @ParameterizedTest
  @EnumSource(LateRecord.class)
  void syncSinkRecordingIntoAnEarlierBatch_isRefusedAndLeavesTheCurrentBatchAlone(LateRecord late)
      throws Exception {
    AtomicReference<Batch<String, Integer>> kept = new AtomicReference<>();
    CompletableFuture<Throwable> lateAttempt = new CompletableFuture<>();
    BatchSink<String, Integer> sink = batch -> {
      if (kept.get() == null) {
        kept.set(batch); // a sink must not keep the batch past write(); this one does
      } else {
        lateAttempt.complete(late.attempt(kept.get()));
      }
      for (int i = 0; i < batch.size(); i++) {
        batch.complete(i, batch.item(i).length());
      }
    };
    Batcher<String, Integer> batcher = track(Batcher.of("kept-batch", BatcherConfig.ofDefaults(), sink));

    assertThat(batcher.submit("a")).succeedsWithin(WAIT).isEqualTo(1);
    CompletableFuture<Integer> second = batcher.submit("bb");

    assertThat(lateAttempt).succeedsWithin(WAIT)
        .as("recording into batch 1 during batch 2's write").isInstanceOf(IllegalStateException.class);
    assertThat(second).as("batch 2's item").succeedsWithin(WAIT).isEqualTo(2);
  }

  @ParameterizedTest
  @EnumSource(LateRecord.class)
  void asyncSinkRecordingIntoACompletedBatch_isRefusedAndLeavesTheBatchInFlightAlone(LateRecord late)
      throws Exception {
    BlockingQueue<Call<CompletableFuture<Void>>> calls = new LinkedBlockingQueue<>();
    AsyncBatchSink<Integer, Integer> sink = batch -> {
      CompletableFuture<Void> stage = new CompletableFuture<>();
      stages.add(stage);
      calls.add(new Call<>(List.copyOf(batch.items()), batch, stage));
      return stage;
    };
    Batcher<Integer, Integer> batcher = track(Batcher.ofAsync("kept-async-batch",
        BatcherConfig.builder().maxInFlightBatches(1).build(), sink));

    CompletableFuture<Integer> first = batcher.submit(1);
    Call<CompletableFuture<Void>> one = calls.poll(10, SECONDS);
    one.batch().complete(0, 10);
    one.stage().complete(null);
    assertThat(first).succeedsWithin(WAIT).isEqualTo(10);

    // Try batch 1's reference while each later batch is in flight (a pool may hand its object to either).
    CompletableFuture<Integer> second = batcher.submit(2);
    Call<CompletableFuture<Void>> two = calls.poll(10, SECONDS);
    assertThat(two.items()).containsExactly(2);
    assertThat(late.attempt(one.batch())).as("recording into batch 1 while batch 2 is in flight")
        .isInstanceOf(IllegalStateException.class);
    two.batch().complete(0, 20);
    two.stage().complete(null);
    assertThat(second).succeedsWithin(WAIT).isEqualTo(20);

    CompletableFuture<Integer> third = batcher.submit(3);
    Call<CompletableFuture<Void>> three = calls.poll(10, SECONDS);
    assertThat(three.items()).containsExactly(3);
    assertThat(late.attempt(one.batch())).as("recording into batch 1 while batch 3 is in flight")
        .isInstanceOf(IllegalStateException.class);
    assertThat(late.attempt(two.batch())).as("recording into batch 2 while batch 3 is in flight")
        .isInstanceOf(IllegalStateException.class);
    three.batch().complete(0, 30);
    three.stage().complete(null);
    assertThat(third).succeedsWithin(WAIT).isEqualTo(30);
  }
}
