package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringbatch.stats.StatsRecorder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class CloseTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  private final RecordingSink<Integer> sink = new RecordingSink<Integer>().hold();
  private final AtomicReference<Thread> consumerThread = new AtomicReference<>();
  private final ThreadFactory capturingFactory = runnable -> {
    Thread thread = new Thread(runnable, "test-consumer");
    thread.setDaemon(true);
    if (runnable.getClass().getSimpleName().equals("CoalescingConsumer")) { // not the close helper
      consumerThread.set(thread);
    }
    return thread;
  };

  @AfterEach
  void releaseSink() {
    sink.open();
  }

  private Batcher<Integer, Integer> batcher(int ringSize) {
    return Batcher.of("orders", BatcherConfig.builder().ringSize(ringSize).maxBatchSize(ringSize)
        .threadFactory(capturingFactory).build(), sink);
  }

  @Test
  void close_drainsEverythingAcceptedAndStopsTheThread() throws Exception {
    Batcher<Integer, Integer> batcher = batcher(64);
    List<CompletableFuture<Integer>> futures = new ArrayList<>();
    futures.add(batcher.submit(0));
    sink.awaitEntered();
    for (int i = 1; i < 40; i++) {
      futures.add(batcher.submit(i));
    }

    CompletableFuture<CloseReport> closing = CompletableFuture.supplyAsync(() -> batcher.close(WAIT));
    assertThat(closing).isNotDone(); // the held sink keeps the drain from finishing
    sink.open();
    CloseReport report = closing.get(10, TimeUnit.SECONDS);

    assertThat(report.drained()).isTrue();
    assertThat(report.abandoned()).isZero();
    assertThat(report.written()).isEqualTo(40);
    assertThat(futures).allMatch(f -> f.isDone() && !f.isCompletedExceptionally());
    assertThat(sink.items()).hasSize(40).doesNotHaveDuplicates();
    assertThat(consumerThread.get().isAlive()).isFalse();
  }

  @Test
  void close_lingeringBatch_writtenNotAbandoned() {
    Batcher<Integer, Integer> batcher = Batcher.of("orders",
        BatcherConfig.builder().linger(Duration.ofMinutes(10)).build(), new RecordingSink<>());
    CompletableFuture<Integer> lingering = batcher.submit(5);

    CloseReport report = batcher.close(WAIT);

    assertThat(report.drained()).isTrue();
    assertThat(lingering).isCompletedWithValue(1);
  }

  @Test
  void close_isIdempotent() {
    sink.open();
    Batcher<Integer, Integer> batcher = batcher(8);

    CloseReport first = batcher.close(WAIT);
    CloseReport second = batcher.close(WAIT);

    assertThat(second).isSameAs(first);
    assertThat(batcher.closeReport()).isSameAs(first);
    assertThat(batcher.isClosed()).isTrue();
  }

  @Test
  void submit_afterClose_failsAndIsCounted() {
    sink.open();
    Batcher<Integer, Integer> batcher = batcher(8);
    batcher.close(WAIT);

    CompletableFuture<Integer> late = batcher.submit(1);

    assertThat(late).isCompletedExceptionally();
    assertThatThrownBy(late::join).cause()
        .isExactlyInstanceOf(BatcherClosedException.class)
        .hasMessage("Batcher 'orders' is closed (capacity 8); item rejected");
    assertThat(batcher.offer(2)).isFalse();
    assertThatThrownBy(() -> batcher.submitAndWait(3)).isExactlyInstanceOf(BatcherClosedException.class);
    assertThat(batcher.stats().rejected(RejectionReason.CLOSED)).isEqualTo(3);
    assertThat(batcher.flush()).isCompleted();
  }

  @Test
  void submit_afterCloseManyTimes_neverBlocksOnTheDeadRing() {
    sink.open();
    Batcher<Integer, Integer> batcher = batcher(4);
    batcher.close(WAIT);

    for (int i = 0; i < 100; i++) {
      assertThat(batcher.offer(i)).isFalse();
    }
    assertThat(batcher.stats().rejected(RejectionReason.CLOSED)).isEqualTo(100);
    assertThat(batcher.stats().accepted()).isZero();
  }

  @Test
  void close_timesOutOnHungSink_failsEveryPendingFutureAndReportsThem() throws Exception {
    Batcher<Integer, Integer> batcher = batcher(8);
    AtomicLong abandonedSeen = new AtomicLong();
    // Recorders are told on a close helper thread: normally before close returns, after it under a long stall.
    CompletableFuture<Void> allSixSeen = new CompletableFuture<>();
    batcher.addStatsRecorder(new StatsRecorder() {
      @Override
      public void recordAbandoned(long count) {
        if (abandonedSeen.addAndGet(count) >= 6) {
          allSixSeen.complete(null);
        }
      }
    });
    CompletableFuture<Integer> inSink = batcher.submit(0);
    sink.awaitEntered();
    List<CompletableFuture<Integer>> queued = new ArrayList<>();
    for (int i = 1; i <= 5; i++) {
      queued.add(batcher.submit(i));
    }
    CompletableFuture<Void> flush = batcher.flush();

    long start = System.nanoTime();
    CloseReport report = batcher.close(Duration.ofMillis(100));
    long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);

    assertThat(tookMillis).isLessThan(5_000); // timeout plus the hand-over grace, with room for a slow machine
    assertThat(report.drained()).isFalse();
    assertThat(report.abandoned()).isEqualTo(6);
    assertThat(allSixSeen).as("recorder told of the abandoned items").succeedsWithin(WAIT);
    assertThat(abandonedSeen).hasValue(6);
    BatcherClosedException inSinkCause = closedCause(inSink);
    assertThat(inSinkCause.isAbandoned()).isTrue();
    assertThat(inSinkCause).hasMessage("Batcher 'orders' is closed (capacity 8); close timed out after 100 ms"
        + " while the item's batch was inside the sink; it may or may not have been written");
    for (CompletableFuture<Integer> future : queued) {
      assertThat(closedCause(future)).hasMessage("Batcher 'orders' is closed (capacity 8);"
          + " close timed out after 100 ms before the item was written; item abandoned");
    }
    assertThat(flush).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
        .withCauseInstanceOf(BatcherClosedException.class);
    BatcherStats stats = report.stats();
    assertThat(stats.accepted()).isEqualTo(stats.written() + stats.failed() + stats.abandoned());
  }

  @Test
  void close_hungSinkReleasedLater_neverCompletesAFutureTwiceNorWritesQueuedItems() throws Exception {
    Batcher<Integer, Integer> batcher = batcher(8);
    CompletableFuture<Integer> inSink = batcher.submit(0);
    sink.awaitEntered();
    CompletableFuture<Integer> queued = batcher.submit(1);
    batcher.close(Duration.ofMillis(50));

    sink.open(); // the hung write returns after the close took over
    consumerThread.get().join(10_000);

    assertThat(consumerThread.get().isAlive()).isFalse();
    assertThat(closedCause(inSink).isAbandoned()).isTrue();
    assertThat(closedCause(queued).isAbandoned()).isTrue();
    assertThat(sink.items()).containsExactly(0); // item 1 was never handed to the sink
  }

  @Test
  void close_zeroTimeout_abandonsAtOnce() throws Exception {
    Batcher<Integer, Integer> batcher = batcher(8);
    CompletableFuture<Integer> inSink = batcher.submit(0);
    sink.awaitEntered();

    CloseReport report = batcher.close(Duration.ZERO);

    assertThat(report.abandoned()).isEqualTo(1);
    // The sink still holds the batch (opened only after the test): only the close can have failed the item.
    assertThat(closedCause(inSink).isAbandoned()).isTrue();
  }

  @Test
  void close_producersBlockedOnFullRing_areReleasedWithClosedRejection() throws Exception {
    Batcher<Integer, Integer> batcher = Batcher.of("orders", BatcherConfig.builder().ringSize(2).maxBatchSize(2)
        .submitTimeout(BatcherConfig.NO_TIMEOUT).build(), sink);
    batcher.submit(0);
    sink.awaitEntered();
    batcher.offer(1);
    batcher.offer(2);
    CountDownLatch started = new CountDownLatch(1);
    CompletableFuture<CompletableFuture<Integer>> blocked = CompletableFuture.supplyAsync(() -> {
      started.countDown();
      return batcher.submit(3);
    });
    assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();

    batcher.close(Duration.ofMillis(50));

    CompletableFuture<Integer> result = blocked.get(10, TimeUnit.SECONDS);
    assertThat(closedCause(result).isAbandoned()).isFalse();
  }

  @Test
  void consumerInterruptedWhileIdle_clearsTheFlagAndParksAgain() throws Exception {
    sink.open();
    Batcher<Integer, Integer> batcher = batcher(8);
    assertThat(batcher.submit(1)).succeedsWithin(WAIT); // the consumer thread exists and has run

    consumerThread.get().interrupt();

    // Parked again, not spinning on a set interrupt flag (park() returns at once while it is set).
    org.awaitility.Awaitility.await().atMost(WAIT).until(() ->
        consumerThread.get().getState() == Thread.State.WAITING && !consumerThread.get().isInterrupted());
    assertThat(batcher.submit(2)).succeedsWithin(WAIT);
    assertThat(batcher.close(WAIT).drained()).isTrue();
  }

  @Test
  void sinkLeavesThreadInterrupted_nextBatchDoesNotSeeIt() throws Exception {
    List<Boolean> interruptedOnEntry = new java.util.concurrent.CopyOnWriteArrayList<>();
    Batcher<Integer, Void> batcher = Batcher.of("orders", BatcherConfig.ofDefaults(),
        (Batch<Integer, Void> batch) -> {
          interruptedOnEntry.add(Thread.currentThread().isInterrupted());
          Thread.currentThread().interrupt(); // a careless sink
          batch.completeRemaining(null);
        });

    assertThat(batcher.submit(1)).succeedsWithin(WAIT);
    assertThat(batcher.submit(2)).succeedsWithin(WAIT);
    assertThat(batcher.close(WAIT).drained()).isTrue();

    assertThat(interruptedOnEntry).containsExactly(false, false);
  }

  @Test
  void close_negativeTimeout_rejected() {
    sink.open();
    Batcher<Integer, Integer> batcher = batcher(8);
    try {
      assertThatThrownBy(() -> batcher.close(Duration.ofMillis(-1)))
          .isExactlyInstanceOf(IllegalArgumentException.class)
          .hasMessage("timeout must not be negative but was PT-0.001S");
    } finally {
      batcher.close(WAIT);
    }
  }

  private static BatcherClosedException closedCause(CompletableFuture<?> future) {
    assertThat(future).failsWithin(WAIT)
        .withThrowableOfType(java.util.concurrent.ExecutionException.class);
    try {
      future.join();
    } catch (CompletionException e) {
      assertThat(e.getCause()).isExactlyInstanceOf(BatcherClosedException.class);
      return (BatcherClosedException) e.getCause();
    }
    throw new AssertionError("future did not fail");
  }
}
