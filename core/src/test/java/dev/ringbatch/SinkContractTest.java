package dev.ringbatch;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Regression tests for the outcome contract between a sink and its batch. */
@Timeout(value = 30, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class SinkContractTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  private final CountDownLatch gate = new CountDownLatch(1);
  private final List<Batcher<?, ?>> batchers = new CopyOnWriteArrayList<>();

  @AfterEach
  void stop() {
    gate.countDown();
    batchers.forEach(b -> b.close(Duration.ofSeconds(1)));
  }

  private <T, R> Batcher<T, R> track(Batcher<T, R> batcher) {
    batchers.add(batcher);
    return batcher;
  }

  /**
   * Defect 8. A raw sink that records outcomes for some items but forgets one: that item must fail, not
   * silently succeed with null.
   */
  @Test
  void itemWithoutRecordedOutcome_failsNamingBatcherAndItemAndIsCounted() throws Exception {
    BlockingQueue<List<String>> calls = new LinkedBlockingQueue<>();
    BatchSink<String, Integer> forgetful = batch -> {
      calls.add(List.copyOf(batch.items()));
      if (batch.item(0).equals("warm-up")) {
        if (!gate.await(30, SECONDS)) {
          throw new AssertionError("the test never opened the gate");
        }
        batch.complete(0, 0);
        return;
      }
      for (int i = 0; i < batch.size(); i++) {
        if (i != 2) {
          batch.complete(i, 100 + i); // forgets item 2
        }
      }
    };
    Batcher<String, Integer> batcher = track(Batcher.of("forgetful", BatcherConfig.ofDefaults(), forgetful));
    CompletableFuture<Integer> warmUp = batcher.submit("warm-up");
    assertThat(calls.poll(10, SECONDS)).containsExactly("warm-up");
    List<CompletableFuture<Integer>> futures = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      futures.add(batcher.submit("item-" + i));
    }
    gate.countDown();

    assertThat(warmUp).succeedsWithin(WAIT).isEqualTo(0);
    assertThat(calls.poll(10, SECONDS)).as("one batch of four")
        .containsExactly("item-0", "item-1", "item-2", "item-3");
    assertThat(futures.get(0)).succeedsWithin(WAIT).isEqualTo(100);
    assertThat(futures.get(1)).succeedsWithin(WAIT).isEqualTo(101);
    assertThat(futures.get(3)).succeedsWithin(WAIT).isEqualTo(103);
    assertThat(futures.get(2)).as("the item the sink gave no outcome").failsWithin(WAIT)
        .withThrowableOfType(ExecutionException.class)
        .havingCause().isInstanceOf(IllegalStateException.class)
        .withMessageContaining("'forgetful'")
        .withMessageContaining("item 2");
    assertThat(batcher.stats().failed()).as("failed items").isEqualTo(1);
    assertThat(batcher.stats().written()).as("written items").isEqualTo(4);
  }

  /** Guard for the fix of defect 8: a sink without per-item results still succeeds every item with null. */
  @Test
  void noResultSink_succeedsEveryItemWithNull() throws Exception {
    BlockingQueue<List<String>> calls = new LinkedBlockingQueue<>();
    BatchSink<String, Void> sink = BatchSink.noResult(items -> {
      calls.add(List.copyOf(items));
      if (items.get(0).equals("warm-up") && !gate.await(30, SECONDS)) {
        throw new AssertionError("the test never opened the gate");
      }
    });
    Batcher<String, Void> batcher = track(Batcher.of("no-result", BatcherConfig.ofDefaults(), sink));
    CompletableFuture<Void> warmUp = batcher.submit("warm-up");
    assertThat(calls.poll(10, SECONDS)).containsExactly("warm-up");
    List<CompletableFuture<Void>> futures = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      futures.add(batcher.submit("item-" + i));
    }
    gate.countDown();

    assertThat(warmUp).succeedsWithin(WAIT).isNull();
    assertThat(calls.poll(10, SECONDS)).hasSize(4);
    for (CompletableFuture<Void> future : futures) {
      assertThat(future).succeedsWithin(WAIT).isNull();
    }
    assertThat(batcher.stats().failed()).isZero();
    assertThat(batcher.stats().written()).isEqualTo(5);
  }
}
