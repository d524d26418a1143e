package dev.ringbatch;

import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Regression tests for linger: only the batch's own deadline, its size limits, a flush that waits for it,
 * or a close may end it; not a wake-up left over from a flush that an earlier write satisfied, nor the
 * completion of another batch.
 */
@Timeout(value = 30, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class LingerTest {
  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final Duration AN_HOUR = Duration.ofHours(1);

  private final CountDownLatch gate = new CountDownLatch(1);
  private final List<CompletableFuture<?>> stages = new CopyOnWriteArrayList<>();
  private final List<Batcher<?, ?>> batchers = new CopyOnWriteArrayList<>();

  @AfterEach
  void stop() {
    gate.countDown();
    stages.forEach(stage -> stage.complete(null));
    batchers.forEach(b -> b.close(Duration.ofSeconds(1)));
  }

  private <T, R> Batcher<T, R> track(Batcher<T, R> batcher) {
    batchers.add(batcher);
    return batcher;
  }

  private static void awaitTaken(Batcher<?, ?> batcher) {
    await().atMost(WAIT).until(() -> batcher.stats().remainingCapacity() == batcher.stats().ringSize());
  }

  /**
   * Defect 10a. A flush that the write in progress satisfies leaves nothing behind that ends the next
   * batch's linger. Item b is submitted by a dependent action of a's future, i.e. on the consumer thread
   * before it waits again, so that it is read before any leftover wake-up could be consumed while idle.
   */
  @Test
  void syncFlushSatisfiedByWriteInProgress_doesNotEndTheNextBatchsLinger() throws Exception {
    BlockingQueue<List<String>> calls = new LinkedBlockingQueue<>();
    List<List<String>> batches = new CopyOnWriteArrayList<>();
    BatchSink<String, Integer> sink = batch -> {
      List<String> items = List.copyOf(batch.items());
      batches.add(items);
      calls.add(items);
      if (items.contains("a") && !gate.await(30, SECONDS)) {
        throw new AssertionError("the test never opened the gate");
      }
      for (int i = 0; i < batch.size(); i++) {
        batch.complete(i, batch.item(i).length());
      }
    };
    Batcher<String, Integer> batcher = track(Batcher.of("linger-sync",
        BatcherConfig.builder().linger(AN_HOUR).maxBatchSize(100).build(), sink));

    CompletableFuture<Integer> a = batcher.submit("a");
    CompletableFuture<CompletableFuture<Integer>> bHolder = new CompletableFuture<>();
    a.thenRun(() -> bHolder.complete(batcher.submit("b")));
    CompletableFuture<Void> flushA = batcher.flush(); // cuts a's linger
    assertThat(calls.poll(10, SECONDS)).containsExactly("a");
    CompletableFuture<Void> flushAgain = batcher.flush(); // satisfied by the write in progress
    gate.countDown();
    assertThat(a).succeedsWithin(WAIT).isEqualTo(1);
    assertThat(flushA).succeedsWithin(WAIT);
    assertThat(flushAgain).succeedsWithin(WAIT);
    CompletableFuture<Integer> b = bHolder.get(10, SECONDS);

    awaitTaken(batcher);
    assertThat(b).as("b lingers (1 hour)").isNotDone();
    CompletableFuture<Integer> c = batcher.submit("c");
    assertThat(batcher.flush()).succeedsWithin(WAIT);

    assertThat(b).succeedsWithin(WAIT).isEqualTo(1);
    assertThat(c).succeedsWithin(WAIT).isEqualTo(1);
    assertThat(batches).containsExactly(List.of("a"), List.of("b", "c"));
  }

  /** One async sink call: its items and the stage the test completes. */
  record Call(List<String> items, CompletableFuture<Void> stage) {}

  private Batcher<String, Integer> asyncBatcher(String name, Duration linger, BlockingQueue<Call> calls) {
    AsyncBatchSink<String, Integer> sink = batch -> {
      CompletableFuture<Void> stage = new CompletableFuture<>();
      stages.add(stage);
      calls.add(new Call(List.copyOf(batch.items()), stage));
      return stage.thenRun(() -> batch.completeRemaining(null)); // every item written once the test says so
    };
    return track(Batcher.ofAsync(name,
        BatcherConfig.builder().linger(linger).maxBatchSize(100).maxInFlightBatches(2).build(), sink));
  }

  /**
   * Defect 10b. The completion of an in-flight batch must not end the linger of the batch being filled.
   * After the completion the test checks for 500 ms that no batch is dispatched (the buggy consumer
   * dispatches [b] within microseconds); then c must join b.
   */
  @Test
  void asyncCompletionOfInFlightBatch_doesNotEndTheOpenBatchsLinger() throws Exception {
    BlockingQueue<Call> calls = new LinkedBlockingQueue<>();
    Batcher<String, Integer> batcher = asyncBatcher("linger-async-completion", Duration.ZERO, calls);
    CompletableFuture<Integer> a = batcher.submit("a"); // no linger yet: dispatched at once
    Call one = calls.poll(10, SECONDS);
    assertThat(one.items()).containsExactly("a");
    batcher.setLimits(batcher.limits().withLinger(AN_HOUR));

    CompletableFuture<Integer> b = batcher.submit("b");
    awaitTaken(batcher);
    await().atMost(WAIT).until(() -> one.stage().getNumberOfDependents() > 0);
    one.stage().complete(null); // the completion runs here, on the test thread
    assertThat(a).succeedsWithin(WAIT);
    assertThat(calls.poll(500, MILLISECONDS)).as("a batch dispatched while b lingers").isNull();
    CompletableFuture<Integer> c = batcher.submit("c");
    awaitTaken(batcher);
    CompletableFuture<Void> flushed = batcher.flush();

    Call two = calls.poll(10, SECONDS);
    assertThat(two).isNotNull();
    assertThat(two.items()).as("the batch after [a]").containsExactly("b", "c");
    two.stage().complete(null);
    assertThat(flushed).succeedsWithin(WAIT);
    assertThat(b).succeedsWithin(WAIT);
    assertThat(c).succeedsWithin(WAIT);
  }

  /**
   * Defect 10b. A flush that waits only for a batch already in flight must not keep the next batch from
   * lingering: b and c, submitted after it, coalesce.
   */
  @Test
  void asyncFlushWaitingOnlyForInFlightBatch_doesNotEndTheNextBatchsLinger() throws Exception {
    BlockingQueue<Call> calls = new LinkedBlockingQueue<>();
    Batcher<String, Integer> batcher = asyncBatcher("linger-async-flush", AN_HOUR, calls);
    CompletableFuture<Integer> a = batcher.submit("a");
    CompletableFuture<Void> flushA = batcher.flush(); // cuts a's linger
    Call one = calls.poll(10, SECONDS);
    assertThat(one.items()).containsExactly("a");
    CompletableFuture<Void> flushInFlight = batcher.flush(); // waits only for [a], in flight

    CompletableFuture<Integer> b = batcher.submit("b");
    awaitTaken(batcher);
    CompletableFuture<Integer> c = batcher.submit("c");
    awaitTaken(batcher);
    one.stage().complete(null);
    assertThat(a).succeedsWithin(WAIT);
    assertThat(flushA).succeedsWithin(WAIT);
    assertThat(flushInFlight).succeedsWithin(WAIT);
    CompletableFuture<Void> flushed = batcher.flush();

    Call two = calls.poll(10, SECONDS);
    assertThat(two).isNotNull();
    assertThat(two.items()).as("the batch after [a]").containsExactly("b", "c");
    two.stage().complete(null);
    assertThat(flushed).succeedsWithin(WAIT);
    assertThat(b).succeedsWithin(WAIT);
    assertThat(c).succeedsWithin(WAIT);
  }
}
