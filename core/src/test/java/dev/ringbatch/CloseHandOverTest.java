package dev.ringbatch;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Regression tests for the hand-over between an abandoning {@code close} and the consumer: every accepted
 * item's future completes exactly once, items the sink wrote are not reported as unwritten, the counters
 * add up, and a close neither gives up because its caller was interrupted nor waits for itself.
 */
@Timeout(value = 30, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class CloseHandOverTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  private final List<CountDownLatch> latches = new CopyOnWriteArrayList<>();
  private final List<Batcher<?, ?>> batchers = new CopyOnWriteArrayList<>();
  private final ExecutorService helper = Executors.newCachedThreadPool(runnable -> {
    Thread thread = new Thread(runnable, "close-hand-over-test-helper");
    thread.setDaemon(true);
    return thread;
  });

  @AfterEach
  void releaseEverything() {
    latches.forEach(CountDownLatch::countDown);
    batchers.forEach(b -> b.close(Duration.ofMillis(500)));
    helper.shutdownNow();
  }

  private CountDownLatch latch() {
    CountDownLatch latch = new CountDownLatch(1);
    latches.add(latch);
    return latch;
  }

  private <T, R> Batcher<T, R> track(Batcher<T, R> batcher) {
    batchers.add(batcher);
    return batcher;
  }

  private static void await30s(CountDownLatch latch) throws InterruptedException {
    if (!latch.await(30, SECONDS)) {
      throw new AssertionError("the test never released the latch");
    }
  }

  // ---------------------------------------------------------------- defect 1

  /**
   * Defect 1. The consumer reads B, finds that it would push [A] past the byte limit, and writes [A] first:
   * B is then neither in the pending batch nor an unread slot. An abandoning close must still fail it.
   */
  @Test
  void byteLimitOverflow_closeAbandonsWhileEarlierBatchInSink_everyFutureCompletes() throws Exception {
    CountDownLatch latch1 = latch();
    CountDownLatch latch2 = latch();
    List<List<String>> calls = new CopyOnWriteArrayList<>();
    BlockingQueue<List<String>> entered = new LinkedBlockingQueue<>();
    BatchSink<String, Integer> sink = batch -> {
      List<String> items = List.copyOf(batch.items());
      calls.add(items);
      entered.add(items);
      await30s(calls.size() == 1 ? latch1 : latch2);
      for (int i = 0; i < batch.size(); i++) {
        batch.complete(i, batch.item(i).length());
      }
    };
    Weigher<String> weigher = item -> item.equals("Z") ? 1 : 6;
    Batcher<String, Integer> batcher = track(Batcher.of("bytes",
        BatcherConfig.builder().maxBatchBytes(10).build(), weigher, sink));

    CompletableFuture<Integer> z = batcher.submit("Z");
    assertThat(entered.poll(10, SECONDS)).as("first sink call").containsExactly("Z");
    CompletableFuture<Integer> a = batcher.submit("A");
    CompletableFuture<Integer> b = batcher.submit("B"); // 6 + 6 > 10: B must start the next batch
    latch1.countDown();
    assertThat(entered.poll(10, SECONDS)).as("second sink call, B already read").containsExactly("A");

    CloseReport report = batcher.close(Duration.ofMillis(50));
    latch2.countDown();

    awaitDone(z, "Z");
    awaitDone(a, "A");
    awaitDone(b, "B");
    assertThat(z).isCompletedWithValue(1);
    if (a.isCompletedExceptionally()) {
      assertThat(closedCause(a).isAbandoned()).isTrue();
    }
    assertThat(closedCause(b).isAbandoned()).as("B was abandoned by the close").isTrue();
    assertThat(calls).as("B never reached the sink").noneMatch(items -> items.contains("B"));
    assertThat(report.drained()).isFalse();
    await().atMost(WAIT).untilAsserted(() -> {
      BatcherStats stats = batcher.stats();
      assertThat(stats.accepted()).as("accepted == written + failed + abandoned in %s", stats)
          .isEqualTo(stats.written() + stats.failed() + stats.abandoned());
    });
  }

  // ---------------------------------------------------------------- defect 2

  /**
   * Defect 2. The consumer is not in the sink but running a slow dependent action of item 1's future (item
   * 1's batch [1, 2] was written, item 2's future not yet completed). A close that times out must not fail
   * items the sink wrote as "before the item was written", nor count them twice.
   */
  @Test
  void closeWhileConsumerRunsSlowDependentAction_writtenItemsAreNotReportedUnwritten() throws Exception {
    CountDownLatch sinkGate = latch();
    CountDownLatch dependentGate = latch();
    CountDownLatch dependentStarted = new CountDownLatch(1);
    Set<Integer> written = ConcurrentHashMap.newKeySet();
    BlockingQueue<List<Integer>> calls = new LinkedBlockingQueue<>();
    BatchSink<Integer, Integer> sink = batch -> {
      written.addAll(batch.items());
      calls.add(List.copyOf(batch.items()));
      if (batch.item(0) == 0) {
        await30s(sinkGate);
      }
      for (int i = 0; i < batch.size(); i++) {
        batch.complete(i, batch.item(i) * 10);
      }
    };
    Batcher<Integer, Integer> batcher = track(Batcher.of("hand-over",
        BatcherConfig.builder().ringSize(64).maxBatchSize(64).build(), sink));

    Map<Integer, CompletableFuture<Integer>> futures = new LinkedHashMap<>();
    futures.put(0, batcher.submit(0));
    assertThat(calls.poll(10, SECONDS)).containsExactly(0);
    futures.put(1, batcher.submit(1));
    futures.put(2, batcher.submit(2));
    futures.get(1).thenRun(() -> { // not async: runs on the thread that completes item 1, the consumer
      dependentStarted.countDown();
      try {
        dependentGate.await(30, SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
    sinkGate.countDown();
    assertThat(calls.poll(10, SECONDS)).as("the sink wrote [1, 2]").containsExactly(1, 2);
    assertThat(dependentStarted.await(10, SECONDS)).as("the dependent action of item 1 started").isTrue();
    for (int i = 3; i <= 6; i++) {
      futures.put(i, batcher.submit(i)); // wait in the ring behind the busy consumer
    }

    CloseReport report = CompletableFuture.supplyAsync(() -> batcher.close(Duration.ofMillis(100)), helper)
        .get(10, SECONDS);
    dependentGate.countDown();

    futures.forEach((item, future) -> awaitDone(future, "item " + item));
    assertThat(futures.get(1)).isCompletedWithValue(10);
    for (Map.Entry<Integer, CompletableFuture<Integer>> entry : futures.entrySet()) {
      int item = entry.getKey();
      CompletableFuture<Integer> future = entry.getValue();
      if (written.contains(item)) {
        if (future.isCompletedExceptionally()) {
          assertThat(causeOf(future)).as("item %s, which the sink wrote", item)
              .hasMessageContaining("may or may not have been written")
              .hasMessageNotContaining("before the item was written");
        } else {
          assertThat(future).as("item %s, which the sink wrote", item).isCompletedWithValue(item * 10);
        }
      } else {
        assertThat(closedCause(future).isAbandoned()).as("item %s, which the sink never saw", item).isTrue();
      }
    }
    assertThat(report.drained()).isFalse();
    await().atMost(WAIT).untilAsserted(() -> {
      BatcherStats stats = batcher.stats();
      assertThat(stats.accepted()).as("accepted == written + failed + abandoned in %s", stats)
          .isEqualTo(stats.written() + stats.failed() + stats.abandoned());
    });
  }

  // ---------------------------------------------------------------- defect 3

  /** Defect 3. An interrupt flag already set on the closing thread must not turn a drain into an abandonment. */
  @Test
  void closeFromInterruptedThread_stillDrainsAndRestoresTheFlag() throws Exception {
    CountDownLatch gate = latch();
    BlockingQueue<List<Integer>> calls = new LinkedBlockingQueue<>();
    BatchSink<Integer, Integer> sink = batch -> {
      calls.add(List.copyOf(batch.items()));
      await30s(gate);
      for (int i = 0; i < batch.size(); i++) {
        batch.complete(i, batch.item(i));
      }
    };
    Batcher<Integer, Integer> batcher = track(Batcher.of("interrupted-close",
        BatcherConfig.builder().ringSize(128).maxBatchSize(128).build(), sink));
    List<CompletableFuture<Integer>> futures = new ArrayList<>();
    futures.add(batcher.submit(0));
    assertThat(calls.poll(10, SECONDS)).containsExactly(0);
    for (int i = 1; i < 100; i++) {
      futures.add(batcher.submit(i));
    }
    helper.execute(() -> {
      await().atMost(WAIT).until(batcher::isClosed);
      gate.countDown();
    });

    Thread.currentThread().interrupt();
    CloseReport report;
    boolean stillInterrupted;
    try {
      report = batcher.close(Duration.ofSeconds(10));
    } finally {
      stillInterrupted = Thread.interrupted(); // read and clear, so that the rest of the test can wait
    }

    assertThat(report.drained()).as("drained despite the caller's interrupt flag: %s", report).isTrue();
    assertThat(report.abandoned()).isZero();
    for (int i = 0; i < futures.size(); i++) {
      assertThat(futures.get(i)).succeedsWithin(WAIT).isEqualTo(i);
    }
    assertThat(report.written()).isEqualTo(100);
    assertThat(stillInterrupted).as("the interrupt flag is restored when close returns").isTrue();
  }

  // ---------------------------------------------------------------- defect 11

  /**
   * Defect 11. A dependent action of an item abandoned by {@code close} calls {@code close()} again, on the
   * thread that is closing: it must not wait for the close it runs inside (closeTimeout is 20 s).
   */
  @Test
  void closeCalledFromDependentActionOfAbandonedItem_doesNotWaitForItself() throws Exception {
    CountDownLatch hung = latch();
    BlockingQueue<List<Integer>> calls = new LinkedBlockingQueue<>();
    BatchSink<Integer, Integer> sink = batch -> {
      calls.add(List.copyOf(batch.items()));
      await30s(hung);
    };
    Batcher<Integer, Integer> batcher = track(Batcher.of("reentrant-close",
        BatcherConfig.builder().closeTimeout(Duration.ofSeconds(20)).build(), sink));
    CompletableFuture<Integer> inSink = batcher.submit(0);
    assertThat(calls.poll(10, SECONDS)).containsExactly(0);
    CompletableFuture<Integer> queued = batcher.submit(1);
    CompletableFuture<Object> inner = new CompletableFuture<>();
    queued.whenComplete((result, failure) -> {
      try {
        batcher.close(); // closeTimeout: 20 s
        inner.complete("returned");
      } catch (Throwable t) {
        inner.complete(t);
      }
    });

    long start = System.nanoTime();
    CompletableFuture<CloseReport> outer =
        CompletableFuture.supplyAsync(() -> batcher.close(Duration.ofMillis(100)), helper);
    try {
      outer.get(5, SECONDS);
    } catch (TimeoutException e) {
      fail("close(100 ms) did not return within 5 s: the close() inside a dependent action of an item it"
          + " abandoned waits for the outer close (closeTimeout 20 s)");
    }
    long elapsedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);

    assertThat(elapsedMillis).as("outer close duration (ms)").isLessThan(5_000);
    assertThat(closedCause(queued).isAbandoned()).isTrue();
    assertThat(inSink).failsWithin(WAIT)
        .withThrowableOfType(java.util.concurrent.ExecutionException.class);
    assertThat(inner).as("the inner close() returned or threw").succeedsWithin(WAIT);
  }

  // ---------------------------------------------------------------- helpers

  private static void awaitDone(CompletableFuture<?> future, String what) {
    try {
      future.handle((result, failure) -> null).get(10, SECONDS);
    } catch (TimeoutException e) {
      fail("the future of " + what + " did not complete within 10 s");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      fail("interrupted while waiting for the future of " + what);
    } catch (ExecutionException impossible) {
      throw new AssertionError(impossible);
    }
  }

  private static Throwable causeOf(CompletableFuture<?> future) {
    assertThat(future).failsWithin(WAIT)
        .withThrowableOfType(java.util.concurrent.ExecutionException.class);
    try {
      future.join();
    } catch (CompletionException e) {
      return e.getCause();
    }
    throw new AssertionError("future did not fail");
  }

  private static BatcherClosedException closedCause(CompletableFuture<?> future) {
    Throwable cause = causeOf(future);
    assertThat(cause).isExactlyInstanceOf(BatcherClosedException.class);
    return (BatcherClosedException) cause;
  }
}
