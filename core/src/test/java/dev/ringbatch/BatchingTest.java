package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.Test;

/** Flush triggers, per-item results and the sink contract. */
class BatchingTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  private final List<Batcher<?, ?>> batchers = new ArrayList<>();

  @AfterEach
  void closeAll() {
    batchers.forEach(b -> b.close(Duration.ofSeconds(5)));
  }

  private <T, R> Batcher<T, R> track(Batcher<T, R> batcher) {
    batchers.add(batcher);
    return batcher;
  }

  private <T> Batcher<T, Integer> batcher(BatcherConfig config, RecordingSink<T> sink) {
    return track(Batcher.of("test", config, sink));
  }

  @Test
  void submit_loneCaller_writtenAloneWithItsResult() {
    RecordingSink<String> sink = new RecordingSink<>();
    Batcher<String, Integer> batcher = batcher(BatcherConfig.ofDefaults(), sink);

    assertThat(batcher.submit("hello")).succeedsWithin(WAIT).isEqualTo(5);
    assertThat(sink.batchSizes()).containsExactly(1);
  }

  @Test
  void submitAndWait_returnsResult() throws Exception {
    Batcher<String, Integer> batcher = batcher(BatcherConfig.ofDefaults(), new RecordingSink<>());

    assertThat(batcher.submitAndWait("four")).isEqualTo(4);
  }

  @Test
  void offer_accepted_written() {
    RecordingSink<String> sink = new RecordingSink<>();
    Batcher<String, Integer> batcher = batcher(BatcherConfig.ofDefaults(), sink);

    assertThat(batcher.offer("x")).isTrue();
    assertThat(batcher.flush()).succeedsWithin(WAIT);
    assertThat(sink.items()).containsExactly("x");
  }

  @Test
  void submit_whileSinkBusy_itemsCoalesceIntoOneBatch() throws Exception {
    RecordingSink<Integer> sink = new RecordingSink<Integer>().hold();
    Batcher<Integer, Integer> batcher = batcher(BatcherConfig.ofDefaults(), sink);
    CompletableFuture<Integer> first = batcher.submit(0);
    sink.awaitEntered();

    List<CompletableFuture<Integer>> rest = new ArrayList<>();
    for (int i = 1; i <= 50; i++) {
      rest.add(batcher.submit(i));
    }
    sink.open();

    assertThat(first).succeedsWithin(WAIT);
    rest.forEach(f -> assertThat(f).succeedsWithin(WAIT));
    assertThat(sink.batchSizes()).containsExactly(1, 50);
    assertThat(sink.items()).containsExactlyElementsOf(range(0, 51));
  }

  @Test
  void maxBatchSize_splitsABacklog() throws Exception {
    RecordingSink<Integer> sink = new RecordingSink<Integer>().hold();
    Batcher<Integer, Integer> batcher = batcher(BatcherConfig.builder().maxBatchSize(4).build(), sink);
    batcher.submit(0);
    sink.awaitEntered();
    for (int i = 1; i <= 10; i++) {
      batcher.submit(i);
    }
    sink.open();

    assertThat(batcher.flush()).succeedsWithin(WAIT);
    assertThat(sink.batchSizes()).containsExactly(1, 4, 4, 2);
  }

  @Test
  void maxBatchBytes_itemThatWouldOverflowStartsNextBatch() throws Exception {
    RecordingSink<String> sink = new RecordingSink<String>().hold();
    Batcher<String, Integer> batcher = track(Batcher.of("test",
        BatcherConfig.builder().maxBatchBytes(8).build(), String::length, sink));
    batcher.submit("a");
    sink.awaitEntered();
    for (String item : List.of("bbb", "ccc", "ddd", "ee")) {
      batcher.submit(item);
    }
    sink.open();

    assertThat(batcher.flush()).succeedsWithin(WAIT);
    assertThat(sink.batches()).containsExactly(List.of("a"), List.of("bbb", "ccc"), List.of("ddd", "ee"));
  }

  @Test
  void maxBatchBytes_itemHeavierThanLimit_writtenAlone() throws Exception {
    RecordingSink<String> sink = new RecordingSink<String>().hold();
    Batcher<String, Integer> batcher = track(Batcher.of("test",
        BatcherConfig.builder().maxBatchBytes(4).build(), String::length, sink));
    batcher.submit("a");
    sink.awaitEntered();
    CompletableFuture<Integer> huge = batcher.submit("0123456789");
    batcher.submit("b");
    sink.open();

    assertThat(huge).succeedsWithin(WAIT).isEqualTo(10);
    assertThat(batcher.flush()).succeedsWithin(WAIT);
    assertThat(sink.batches()).containsExactly(List.of("a"), List.of("0123456789"), List.of("b"));
  }

  @Test
  void linger_holdsASmallBatchUntilItFills() {
    RecordingSink<Integer> sink = new RecordingSink<>();
    Batcher<Integer, Integer> batcher = batcher(
        BatcherConfig.builder().maxBatchSize(3).linger(Duration.ofMinutes(10)).build(), sink);

    List<CompletableFuture<Integer>> futures = List.of(batcher.submit(1), batcher.submit(2), batcher.submit(3));

    futures.forEach(f -> assertThat(f).succeedsWithin(WAIT));
    assertThat(sink.batchSizes()).containsExactly(3);
  }

  @Test
  void linger_flushCutsItShort() {
    RecordingSink<Integer> sink = new RecordingSink<>();
    Batcher<Integer, Integer> batcher = batcher(
        BatcherConfig.builder().linger(Duration.ofMinutes(10)).build(), sink);
    CompletableFuture<Integer> lone = batcher.submit(7);

    assertThat(batcher.flush()).succeedsWithin(WAIT);
    assertThat(lone).isCompletedWithValue(1);
    assertThat(sink.batchSizes()).containsExactly(1);
  }

  @Test
  void linger_deadlinePasses_batchWritten() {
    RecordingSink<Integer> sink = new RecordingSink<>();
    Batcher<Integer, Integer> batcher = batcher(
        BatcherConfig.builder().linger(Duration.ofMillis(20)).build(), sink);

    assertThat(batcher.submit(1)).succeedsWithin(WAIT);
    assertThat(sink.batchSizes()).containsExactly(1);
  }

  @Test
  void setLimits_appliesToLaterItems() throws Exception {
    RecordingSink<Integer> sink = new RecordingSink<Integer>().hold();
    Batcher<Integer, Integer> batcher = batcher(BatcherConfig.builder().maxBatchSize(100).build(), sink);
    batcher.setLimits(batcher.limits().withMaxBatchSize(2));
    batcher.submit(0);
    sink.awaitEntered();
    for (int i = 1; i <= 6; i++) {
      batcher.submit(i);
    }
    sink.open();

    assertThat(batcher.flush()).succeedsWithin(WAIT);
    assertThat(batcher.limits().maxBatchSize()).isEqualTo(2);
    assertThat(sink.batchSizes()).containsExactly(1, 2, 2, 2);
  }

  @Test
  void setLimits_maxBatchSizeAboveRingSize_rejected() {
    Batcher<Integer, Integer> batcher = batcher(BatcherConfig.builder().ringSize(8).maxBatchSize(8).build(),
        new RecordingSink<>());

    assertThatThrownBy(() -> batcher.setLimits(BatchLimits.ofDefaults().withMaxBatchSize(16)))
        .isExactlyInstanceOf(IllegalStateException.class)
        .hasMessage("maxBatchSize (16) must not exceed ringSize (8)");
  }

  @Test
  void setLimits_byteLimitWithoutWeigher_rejected() {
    Batcher<Integer, Integer> batcher = batcher(BatcherConfig.ofDefaults(), new RecordingSink<>());

    assertThatThrownBy(() -> batcher.setLimits(batcher.limits().withMaxBatchBytes(1024)))
        .isExactlyInstanceOf(IllegalStateException.class)
        .hasMessage("maxBatchBytes (1024) needs a weigher, but batcher 'test' was created without one");
  }

  @Test
  void of_byteLimitWithoutWeigher_rejected() {
    BatcherConfig config = BatcherConfig.builder().maxBatchBytes(512).build();

    assertThatThrownBy(() -> Batcher.of("test", config, new RecordingSink<String>()))
        .isExactlyInstanceOf(IllegalStateException.class)
        .hasMessage("maxBatchBytes (512) needs a weigher: use Batcher.of(name, config, weigher, sink)");
  }

  @Test
  void of_blankName_rejected() {
    assertThatThrownBy(() -> Batcher.of(" ", BatcherConfig.ofDefaults(), new RecordingSink<String>()))
        .isExactlyInstanceOf(IllegalArgumentException.class)
        .hasMessage("name must not be blank but was ' '");
  }

  @Test
  void submit_nullItem_rejected() {
    Batcher<String, Integer> batcher = batcher(BatcherConfig.ofDefaults(), new RecordingSink<>());

    assertThatThrownBy(() -> batcher.submit(null)).isInstanceOf(NullPointerException.class).hasMessage("item");
    assertThatThrownBy(() -> batcher.offer(null)).isInstanceOf(NullPointerException.class).hasMessage("item");
  }

  @Test
  void submit_negativeWeight_rejectedAndNotAccepted() {
    Batcher<String, Integer> batcher = track(Batcher.of("test", BatcherConfig.ofDefaults(),
        item -> -7, new RecordingSink<String>()));

    assertThatThrownBy(() -> batcher.submit("bad"))
        .isExactlyInstanceOf(IllegalArgumentException.class)
        .hasMessage("weigher must return a weight of zero or more but returned -7 for bad");
    assertThat(batcher.stats().accepted()).isZero();
  }

  @Test
  void sink_failsOneItem_onlyThatFutureFails() {
    IllegalArgumentException bad = new IllegalArgumentException("row 1 violates a constraint");
    Batcher<Integer, String> batcher = track(Batcher.of("test", BatcherConfig.ofDefaults(),
        (Batch<Integer, String> batch) -> {
          for (int i = 0; i < batch.size(); i++) {
            if (batch.item(i) == 1) {
              batch.fail(i, bad);
            } else {
              batch.complete(i, "ok " + batch.item(i));
            }
          }
        }));

    CompletableFuture<String> good = batcher.submit(0);
    CompletableFuture<String> failing = batcher.submit(1);

    assertThat(good).succeedsWithin(WAIT).isEqualTo("ok 0");
    assertThat(failing).failsWithin(WAIT).withThrowableOfType(java.util.concurrent.ExecutionException.class)
        .withCause(bad);
    assertThat(batcher.flush()).succeedsWithin(WAIT);
    assertThat(batcher.stats().written()).isEqualTo(1);
    assertThat(batcher.stats().failed()).isEqualTo(1);
  }

  @Test
  void sink_throws_wholeBatchFailsAndConsumerCarriesOn() throws Exception {
    AtomicInteger calls = new AtomicInteger();
    IllegalStateException boom = new IllegalStateException("database down");
    RecordingSink<Integer> recording = new RecordingSink<>();
    Batcher<Integer, Integer> batcher = track(Batcher.of("test", BatcherConfig.ofDefaults(),
        (Batch<Integer, Integer> batch) -> {
          if (calls.getAndIncrement() == 0) {
            batch.complete(0, 42); // recorded, but the throw below fails the whole batch regardless
            throw boom;
          }
          recording.write(batch);
        }));

    CompletableFuture<Integer> failed = batcher.submit(1);
    assertThat(failed).failsWithin(WAIT).withThrowableOfType(java.util.concurrent.ExecutionException.class)
        .withCause(boom);
    assertThat(batcher.submit(2)).succeedsWithin(WAIT).isEqualTo(1);
  }

  @Test
  void sink_throwsError_consumerSurvives() {
    AtomicInteger calls = new AtomicInteger();
    Batcher<Integer, Integer> batcher = track(Batcher.of("test", BatcherConfig.ofDefaults(),
        (Batch<Integer, Integer> batch) -> {
          if (calls.getAndIncrement() == 0) {
            throw new StackOverflowError("deep");
          }
          batch.completeRemaining(null);
        }));

    assertThat(batcher.submit(1)).failsWithin(WAIT)
        .withThrowableOfType(java.util.concurrent.ExecutionException.class)
        .withCauseInstanceOf(StackOverflowError.class);
    assertThat(batcher.submit(2)).succeedsWithin(WAIT).isNull();
  }

  @Test
  void submitAndWait_sinkFailure_throwsBatchWriteExceptionWithCause() {
    IllegalStateException boom = new IllegalStateException("disk full");
    Batcher<Integer, Void> batcher = track(Batcher.of("test", BatcherConfig.ofDefaults(),
        BatchSink.noResult(items -> {
          throw boom;
        })));

    assertThatThrownBy(() -> batcher.submitAndWait(1))
        .isExactlyInstanceOf(BatchWriteException.class)
        .hasMessage("Batcher 'test' failed to write the item: java.lang.IllegalStateException: disk full")
        .hasCause(boom);
  }

  @Test
  void withResults_wrongResultCount_failsBatchWithClearMessage() {
    Batcher<Integer, Integer> batcher = track(Batcher.of("test", BatcherConfig.ofDefaults(),
        BatchSink.withResults(items -> List.of())));

    assertThat(batcher.submit(1)).failsWithin(WAIT)
        .withThrowableOfType(java.util.concurrent.ExecutionException.class)
        .havingCause()
        .isExactlyInstanceOf(OutcomeUnknownException.class) // it returned: it may have written the item
        .withMessage("sink returned 0 results for a batch of 1 items; it may have written them");
  }

  @Test
  void sink_completesItemTwice_batchFailsWithClearMessage() {
    Batcher<Integer, Integer> batcher = track(Batcher.of("test", BatcherConfig.ofDefaults(),
        (Batch<Integer, Integer> batch) -> {
          batch.complete(0, 1);
          batch.complete(0, 2);
        }));

    assertThat(batcher.submit(1)).failsWithin(WAIT)
        .withThrowableOfType(java.util.concurrent.ExecutionException.class)
        .havingCause()
        .isExactlyInstanceOf(IllegalStateException.class)
        .withMessage("item 0 of the batch already has an outcome");
  }

  @Test
  void batch_usedAfterWrite_rejected() {
    AtomicInteger index = new AtomicInteger();
    List<Batch<Integer, Integer>> leaked = new ArrayList<>();
    Batcher<Integer, Integer> batcher = track(Batcher.of("test", BatcherConfig.ofDefaults(),
        (Batch<Integer, Integer> batch) -> {
          leaked.add(batch);
          batch.completeRemaining(null);
        }));
    assertThat(batcher.submit(1)).succeedsWithin(WAIT);

    assertThatThrownBy(() -> leaked.get(0).complete(index.get(), 1))
        .isExactlyInstanceOf(IllegalStateException.class)
        .hasMessage("the batch is no longer being written; record outcomes inside write()");
  }

  @Test
  void batch_itemsView_isUnmodifiable() {
    Batcher<Integer, Void> batcher = track(Batcher.of("test", BatcherConfig.ofDefaults(),
        BatchSink.noResult(items -> items.add(3))));

    assertThat(batcher.submit(1)).failsWithin(WAIT)
        .withThrowableOfType(java.util.concurrent.ExecutionException.class)
        .withCauseInstanceOf(UnsupportedOperationException.class);
  }

  @Test
  void flush_idle_completesAtOnce() {
    Batcher<Integer, Integer> batcher = batcher(BatcherConfig.ofDefaults(), new RecordingSink<>());

    assertThat(batcher.flush()).isCompleted();
  }

  @Test
  void flush_completesAfterEverythingSubmittedBefore() throws Exception {
    RecordingSink<Integer> sink = new RecordingSink<Integer>().hold();
    Batcher<Integer, Integer> batcher = batcher(BatcherConfig.ofDefaults(), sink);
    List<CompletableFuture<Integer>> futures = new ArrayList<>();
    futures.add(batcher.submit(0));
    sink.awaitEntered();
    for (int i = 1; i < 20; i++) {
      futures.add(batcher.submit(i));
    }

    CompletableFuture<Void> flushed = batcher.flush();
    assertThat(flushed).isNotDone(); // the sink is held shut, so nothing can be written yet
    sink.open();

    assertThat(flushed).succeedsWithin(WAIT);
    assertThat(futures).allMatch(CompletableFuture::isDone);
  }

  @Test
  void stats_once_aFutureCompleted_includeItsItem() throws Exception {
    AtomicInteger recordedItems = new AtomicInteger();
    Batcher<Integer, Integer> batcher = batcher(BatcherConfig.ofDefaults(), new RecordingSink<>());
    batcher.addStatsRecorder(new dev.ringbatch.stats.StatsRecorder() {
      @Override
      public void recordBatch(int size, long weight, long writeNanos, int failed) {
        recordedItems.addAndGet(size);
      }
    });

    for (int i = 1; i <= 500; i++) {
      batcher.submitAndWait(i);
      assertThat(batcher.stats().written()).as("written after %s completed", i).isEqualTo(i);
      assertThat(recordedItems).as("recorded after %s completed", i).hasValue(i);
    }
  }

  @ParameterizedTest
  @EnumSource(WaitMode.class)
  void waitMode_eachDeliversEveryItem(WaitMode mode) {
    RecordingSink<Integer> sink = new RecordingSink<>();
    Batcher<Integer, Integer> batcher = batcher(BatcherConfig.builder().waitMode(mode).build(), sink);

    for (int round = 0; round < 3; round++) {
      assertThat(batcher.submit(round)).succeedsWithin(WAIT);
    }
    assertThat(sink.items()).containsExactly(0, 1, 2);
  }

  @Test
  void writtenItem_notReachableFromBatcher() {
    Batcher<Object, Integer> batcher = track(Batcher.of("test",
        BatcherConfig.builder().ringSize(8).maxBatchSize(8).build(), new RecordingSinkWithoutCopies()));
    Object item = new Object();
    WeakReference<Object> ref = new WeakReference<>(item);
    assertThat(batcher.submit(item)).succeedsWithin(WAIT);
    item = null;

    Awaitility.await().atMost(10, TimeUnit.SECONDS).until(() -> {
      System.gc();
      return ref.get() == null;
    });
    assertThat(batcher.isClosed()).isFalse(); // the batcher itself is still alive and referenced
  }

  /** Keeps no reference to the items it writes. */
  private static final class RecordingSinkWithoutCopies implements BatchSink<Object, Integer> {
    @Override
    public void write(Batch<Object, Integer> batch) {
      for (int i = 0; i < batch.size(); i++) {
        batch.complete(i, i);
      }
    }
  }

  private static List<Integer> range(int from, int to) {
    List<Integer> list = new ArrayList<>();
    for (int i = from; i < to; i++) {
      list.add(i);
    }
    return list;
  }
}
