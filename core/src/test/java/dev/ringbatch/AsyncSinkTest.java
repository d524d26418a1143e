package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class AsyncSinkTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  private final ScheduledExecutorService remote = Executors.newScheduledThreadPool(4);
  private final List<Batcher<?, ?>> batchers = new ArrayList<>();

  @AfterEach
  void stop() {
    batchers.forEach(b -> b.close(Duration.ofSeconds(5)));
    remote.shutdownNow();
  }

  /** A dispatched batch: its items and the stage the test completes. */
  record Call(List<Integer> items, CompletableFuture<Void> stage) {}

  private Batcher<Integer, Integer> batcher(int maxInFlight, AsyncBatchSink<Integer, Integer> sink) {
    Batcher<Integer, Integer> b = Batcher.ofAsync("remote", BatcherConfig.builder().maxInFlightBatches(maxInFlight)
        .build(), sink);
    batchers.add(b);
    return b;
  }

  /** A sink that records each dispatched batch with a stage the test completes. */
  private static AsyncBatchSink<Integer, Integer> recording(BlockingQueue<Call> calls) {
    return batch -> {
      CompletableFuture<Void> stage = new CompletableFuture<>();
      calls.add(new Call(new ArrayList<>(batch.items()), stage));
      return stage.thenRun(() -> batch.completeRemaining(null)); // every item written once the test says so
    };
  }

  @Test
  void inFlightLimit_respectedUnderLoad_andEveryResultMapsBack() throws Exception {
    AtomicInteger inFlight = new AtomicInteger();
    AtomicInteger maxSeen = new AtomicInteger();
    Batcher<Integer, Integer> b = batcher(3, batch -> {
      maxSeen.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
      CompletableFuture<Void> stage = new CompletableFuture<>();
      remote.schedule(() -> {
        for (int i = 0; i < batch.size(); i++) {
          batch.complete(i, batch.item(i) * 2); // outcomes recorded on the remote thread
        }
        inFlight.decrementAndGet();
        stage.complete(null);
      }, ThreadLocalRandom.current().nextInt(50, 500), TimeUnit.MICROSECONDS);
      return stage;
    });
    List<CompletableFuture<Integer>> futures = new ArrayList<>();
    for (int i = 0; i < 20_000; i++) {
      futures.add(b.submit(i));
    }

    for (int i = 0; i < futures.size(); i++) {
      assertThat(futures.get(i).get(10, TimeUnit.SECONDS)).isEqualTo(i * 2);
    }
    // never past the limit; whether it is reached depends on how the threads are scheduled (on a loaded machine
    // each write may end before the next starts), so reaching it is consumerCoalescesWhileBatchesAreInFlight's
    assertThat(maxSeen.get()).isBetween(1, 3);
    assertThat(b.flush()).succeedsWithin(WAIT);
    assertThat(b.stats().written()).isEqualTo(20_000);
  }

  @Test
  void consumerCoalescesWhileBatchesAreInFlight_andWaitsAtTheLimit() throws Exception {
    BlockingQueue<Call> calls = new LinkedBlockingQueue<>();
    Batcher<Integer, Integer> b = batcher(2, recording(calls));
    CompletableFuture<Integer> first = b.submit(1);
    Call one = calls.poll(10, TimeUnit.SECONDS);
    CompletableFuture<Integer> second = b.submit(2);
    Call two = calls.poll(10, TimeUnit.SECONDS); // dispatched while the first is still in flight
    b.submit(3);
    b.submit(4);

    assertThat(one.items()).containsExactly(1);
    assertThat(two.items()).containsExactly(2);
    assertThat(calls.poll(100, TimeUnit.MILLISECONDS)).as("a third batch beyond the limit of 2").isNull();
    assertThat(first).isNotDone();

    two.stage().complete(null); // out of order: the second completes first
    assertThat(second).succeedsWithin(WAIT);
    Call three = calls.poll(10, TimeUnit.SECONDS);
    assertThat(three.items()).containsExactly(3, 4); // coalesced while waiting for room
    CompletableFuture<Void> flushed = b.flush();
    assertThat(first).isNotDone();
    assertThat(flushed).isNotDone();
    one.stage().complete(null);
    three.stage().complete(null);
    assertThat(flushed).succeedsWithin(WAIT);
    assertThat(first).isCompletedWithValue(null);
  }

  @Test
  void failedStage_failsEveryItemOfItsBatch() {
    IllegalStateException down = new IllegalStateException("bulk API answered 503");
    Batcher<Integer, Integer> b = batcher(4, batch -> CompletableFuture.failedFuture(down));

    assertThat(b.submit(1)).failsWithin(WAIT).withThrowableOfType(ExecutionException.class).withCause(down);
    assertThat(b.stats().failed()).isEqualTo(1);
  }

  @Test
  void sinkReturnsNull_batchFailsWithClearMessage() {
    Batcher<Integer, Integer> b = batcher(1, batch -> null);

    assertThat(b.submit(1)).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
        .havingCause().isExactlyInstanceOf(NullPointerException.class)
        .withMessage("the async sink returned null instead of a CompletionStage");
  }

  @Test
  void close_waitsForBatchesInFlight() throws Exception {
    BlockingQueue<Call> calls = new LinkedBlockingQueue<>();
    Batcher<Integer, Integer> b = Batcher.ofAsync("remote", BatcherConfig.builder().maxInFlightBatches(4).build(),
        recording(calls));
    CompletableFuture<Integer> item = b.submit(7);
    Call call = calls.poll(10, TimeUnit.SECONDS);
    CompletableFuture<CloseReport> closing = CompletableFuture.supplyAsync(() -> b.close(WAIT));
    assertThat(closing).isNotDone();

    call.stage().complete(null);

    assertThat(closing).succeedsWithin(WAIT).satisfies(report -> assertThat(report.drained()).isTrue());
    assertThat(item).isCompletedWithValue(null);
  }

  @Test
  void close_timesOut_abandonsBatchesInFlightWithClearCause() throws Exception {
    BlockingQueue<Call> calls = new LinkedBlockingQueue<>();
    Batcher<Integer, Integer> b = Batcher.ofAsync("remote", BatcherConfig.builder().maxInFlightBatches(4).build(),
        recording(calls));
    CompletableFuture<Integer> item = b.submit(7);
    Call call = calls.poll(10, TimeUnit.SECONDS);

    CloseReport report = b.close(Duration.ofMillis(50));
    call.stage().complete(null); // too late: the close settled the batch

    assertThat(report.drained()).isFalse();
    assertThat(report.abandoned()).isEqualTo(1);
    assertThat(item).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
        .havingCause().isExactlyInstanceOf(BatcherClosedException.class)
        .withMessage("Batcher 'remote' is closed (capacity 16384); close timed out after 50 ms while the item's"
            + " batch was in flight in the async sink; it may or may not have been written");
    assertThat(b.stats().written()).isZero();
  }

  @Test
  void maxInFlightBatches_outOfRange_rejected() {
    assertThatThrownBy(() -> BatcherConfig.builder().maxInFlightBatches(0))
        .isExactlyInstanceOf(IllegalArgumentException.class)
        .hasMessage("maxInFlightBatches must be from 1 to 1024 but was 0");
  }
}
