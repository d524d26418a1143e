package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Thousands of virtual-thread callers that wait for their own result (issue 14): each gets its own result,
 * every item is written once, callers waiting for room park (on a ring far smaller than the callers), and a
 * close or an interrupt reaches every one of them. Runs on JDK 21+ (skipped before, where virtual threads do
 * not exist); {@code .ci/run} runs the build again on every JDK 21+ installed.
 */
@Timeout(120)
class VirtualThreadCallersTest {
  private ExecutorService callers;
  private Batcher<Integer, Integer> batcher;
  private final CountDownLatch sinkGate = new CountDownLatch(1);

  @BeforeEach
  void virtualThreads() {
    try {
      callers = (ExecutorService) java.util.concurrent.Executors.class
          .getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
    } catch (ReflectiveOperationException e) {
      Assumptions.abort("virtual threads need JDK 21+; this is " + Runtime.version());
    }
  }

  @AfterEach
  void stop() throws InterruptedException {
    sinkGate.countDown();
    if (batcher != null) {
      batcher.close(Duration.ofSeconds(10));
    }
    if (callers != null) { // null: skipped before JDK 21
      callers.shutdownNow();
      assertThat(callers.awaitTermination(30, TimeUnit.SECONDS)).as("callers ended").isTrue();
    }
  }

  @Test
  void twoThousandVirtualCallers_waitingForResults_eachGetsItsOwn_andEveryItemIsWrittenOnce() throws Exception {
    int callerCount = 2_000;
    int calls = 25;
    Map<Integer, Integer> writes = new ConcurrentHashMap<>();
    batcher = Batcher.of("virtual-callers", BatcherConfig.builder().ringSize(256).maxBatchSize(256)
        .overflowPolicy(OverflowPolicy.BLOCK).submitTimeout(BatcherConfig.NO_TIMEOUT).build(),
        BatchSink.withResults((List<Integer> items) -> {
          items.forEach(item -> writes.merge(item, 1, Integer::sum));
          return items.stream().map(item -> 2 * item + 1).collect(Collectors.toList());
        }));
    Queue<String> wrong = new ConcurrentLinkedQueue<>();
    List<Future<?>> running = new ArrayList<>();
    for (int c = 0; c < callerCount; c++) {
      int first = c * calls;
      running.add(callers.submit(() -> {
        for (int item = first; item < first + calls; item++) {
          int result = batcher.submitAndWait(item);
          if (result != 2 * item + 1) {
            wrong.add("item " + item + " got " + result);
          }
        }
        return null;
      }));
    }
    for (Future<?> caller : running) {
      caller.get(90, TimeUnit.SECONDS);
    }

    int items = callerCount * calls;
    assertThat(wrong).as("results given to the wrong callers").isEmpty();
    assertThat(writes).hasSize(items);
    assertThat(writes.values()).as("times each item was written").containsOnly(1);
    BatcherStats stats = batcher.stats();
    assertThat(stats.written()).isEqualTo(items);
    assertThat(stats.batches()).as("batches (natural batching coalesced the callers)").isLessThan(items);
  }

  @Test
  void virtualCallersBlockedOnAFullRing_areEachToldByClose_andOnlyTheWrittenAreTold_written() throws Exception {
    int callerCount = 500;
    Map<Integer, Integer> writes = new ConcurrentHashMap<>();
    batcher = Batcher.of("virtual-blocked", BatcherConfig.builder().ringSize(64).maxBatchSize(64)
        .overflowPolicy(OverflowPolicy.BLOCK).submitTimeout(BatcherConfig.NO_TIMEOUT).build(),
        BatchSink.withResults((List<Integer> items) -> {
          if (!sinkGate.await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("the test never opened the sink");
          }
          items.forEach(item -> writes.merge(item, 1, Integer::sum));
          return items;
        }));
    Queue<Thread> threads = new ConcurrentLinkedQueue<>();
    Map<Integer, Object> outcomes = new ConcurrentHashMap<>();
    for (int c = 0; c < callerCount; c++) {
      int item = c;
      callers.submit(() -> {
        threads.add(Thread.currentThread());
        try {
          outcomes.put(item, batcher.submitAndWait(item));
        } catch (Exception e) {
          outcomes.put(item, e);
        }
      });
    }
    // Every caller is parked: in the ring waiting for its result, or waiting for room on the full ring.
    Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> threads.size() == callerCount
        && threads.stream().allMatch(VirtualThreadCallersTest::parked));
    assertThat(batcher.stats().remainingCapacity()).isZero();

    CompletableFuture<CloseReport> closing =
        CompletableFuture.supplyAsync(() -> batcher.close(Duration.ofSeconds(20)));
    // Callers still waiting for room are told at once, while the sink still holds its batch.
    Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> outcomes.values().stream()
        .anyMatch(o -> o instanceof BatcherClosedException));
    sinkGate.countDown();

    assertThat(closing).succeedsWithin(Duration.ofSeconds(30)).satisfies(r -> assertThat(r.drained()).isTrue());
    Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> outcomes.size() == callerCount);
    for (Map.Entry<Integer, Object> outcome : outcomes.entrySet()) {
      if (outcome.getValue() instanceof Exception e) {
        assertThat(e).as("caller %d", outcome.getKey()).isInstanceOf(BatcherClosedException.class);
        assertThat(writes).as("a caller told it failed").doesNotContainKey(outcome.getKey());
      } else {
        assertThat(outcome.getValue()).isEqualTo(outcome.getKey());
        assertThat(writes.get(outcome.getKey())).as("written once, caller %d", outcome.getKey()).isEqualTo(1);
      }
    }
    assertThat(writes.keySet()).as("every write has a caller told written")
        .allMatch(item -> outcomes.get(item) instanceof Integer);
  }

  @Test
  void interruptedVirtualCallerWaitingForRoom_getsInterruptedException_andItsItemIsNeverWritten() throws Exception {
    Map<Integer, Integer> writes = new ConcurrentHashMap<>();
    CountDownLatch entered = new CountDownLatch(1);
    batcher = Batcher.of("virtual-interrupted", BatcherConfig.builder().ringSize(16).maxBatchSize(16)
        .overflowPolicy(OverflowPolicy.BLOCK).submitTimeout(BatcherConfig.NO_TIMEOUT).build(),
        BatchSink.withResults((List<Integer> items) -> {
          entered.countDown();
          if (!sinkGate.await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("the test never opened the sink");
          }
          items.forEach(item -> writes.merge(item, 1, Integer::sum));
          return items;
        }));
    assertThat(batcher.offer(0)).isTrue();
    assertThat(entered.await(10, TimeUnit.SECONDS)).as("the sink holds item 0").isTrue();
    for (int i = 1; i <= 16; i++) {
      assertThat(batcher.offer(i)).isTrue(); // fills the ring behind it
    }
    assertThat(batcher.stats().remainingCapacity()).isZero();
    CompletableFuture<Thread> caller = new CompletableFuture<>();
    CompletableFuture<Object> outcome = new CompletableFuture<>();
    callers.submit(() -> {
      caller.complete(Thread.currentThread());
      try {
        outcome.complete(batcher.submitAndWait(1_000));
      } catch (Exception e) {
        outcome.complete(e);
      }
    });
    Thread t = caller.get(10, TimeUnit.SECONDS);
    Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> parked(t));

    t.interrupt();

    assertThat(outcome).succeedsWithin(Duration.ofSeconds(10)).isInstanceOf(InterruptedException.class);
    sinkGate.countDown();
    assertThat(batcher.flush()).succeedsWithin(Duration.ofSeconds(10));
    assertThat(writes).doesNotContainKey(1_000).hasSize(17);
  }

  private static boolean parked(Thread t) {
    return t.getState() == Thread.State.WAITING || t.getState() == Thread.State.TIMED_WAITING;
  }
}
