package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringbatch.stats.StatsRecorder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A full ring under each overflow policy, and submissions from the consumer thread itself. A ring of 4
 * is full once the consumer holds one batch inside the held sink and 4 more items wait in the ring.
 */
class OverflowTest {
  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final int RING = 4;

  private final List<Batcher<?, ?>> batchers = new ArrayList<>();
  private final RecordingSink<Integer> sink = new RecordingSink<Integer>().hold();

  @AfterEach
  void closeAll() {
    sink.open();
    batchers.forEach(b -> b.close(Duration.ofSeconds(5)));
  }

  private Batcher<Integer, Integer> fullBatcher(OverflowPolicy policy, Duration submitTimeout) throws Exception {
    Batcher<Integer, Integer> batcher = Batcher.of("orders", BatcherConfig.builder()
        .ringSize(RING).maxBatchSize(RING).overflowPolicy(policy).submitTimeout(submitTimeout).build(), sink);
    batchers.add(batcher);
    batcher.submit(0);
    sink.awaitEntered();
    for (int i = 1; i <= RING; i++) {
      assertThat(batcher.offer(i)).isTrue();
    }
    assertThat(batcher.stats().remainingCapacity()).isZero();
    return batcher;
  }

  @Test
  void submit_whenFull_dropPolicy_failsFutureAtOnce() throws Exception {
    Batcher<Integer, Integer> batcher = fullBatcher(OverflowPolicy.DROP, Duration.ofSeconds(5));

    CompletableFuture<Integer> dropped = batcher.submit(99);

    assertThat(dropped).isCompletedExceptionally();
    BatcherFullException e = causeOf(dropped, BatcherFullException.class);
    assertThat(e).hasMessage("Batcher 'orders' is full (capacity 4); item dropped");
    assertThat(e.batcherName()).isEqualTo("orders");
    assertThat(e.capacity()).isEqualTo(RING);
    assertThat(e.reason()).isEqualTo(RejectionReason.FULL);
    assertThat(batcher.stats().rejected(RejectionReason.FULL)).isEqualTo(1);
  }

  @Test
  void offer_whenFull_dropPolicy_returnsFalseAndCounts() throws Exception {
    Batcher<Integer, Integer> batcher = fullBatcher(OverflowPolicy.DROP, Duration.ofSeconds(5));

    assertThat(batcher.offer(99)).isFalse();
    assertThat(batcher.offer(100)).isFalse();

    BatcherStats stats = batcher.stats();
    assertThat(stats.rejected()).isEqualTo(2);
    assertThat(stats.submitted()).isEqualTo(stats.accepted() + 2);
  }

  @Test
  void submit_whenFull_blockPolicy_rejectsAfterTimeout() throws Exception {
    Batcher<Integer, Integer> batcher = fullBatcher(OverflowPolicy.BLOCK, Duration.ofMillis(30));

    CompletableFuture<Integer> rejected = batcher.submit(99);

    BatcherFullException e = causeOf(rejected, BatcherFullException.class);
    assertThat(e).hasMessage("Batcher 'orders' is full (capacity 4); item rejected after waiting 30 ms for room");
    assertThat(e.reason()).isEqualTo(RejectionReason.TIMEOUT);
    assertThat(batcher.stats().rejected(RejectionReason.TIMEOUT)).isEqualTo(1);
  }

  @Test
  void submit_whenFull_blockPolicy_waitsForRoomThenSucceeds() throws Exception {
    Batcher<Integer, Integer> batcher = fullBatcher(OverflowPolicy.BLOCK, BatcherConfig.NO_TIMEOUT);

    CompletableFuture<CompletableFuture<Integer>> producer = CompletableFuture.supplyAsync(() -> batcher.submit(99));
    assertThat(producer).isNotDone(); // the ring stays full while the sink is held
    sink.open();

    assertThat(producer).succeedsWithin(WAIT);
    assertThat(producer.join()).succeedsWithin(WAIT).isEqualTo(2);
    assertThat(batcher.stats().rejected()).isZero();
  }

  @Test
  void submit_whenFull_interruptedProducer_rejectedAndFlagKept() throws Exception {
    Batcher<Integer, Integer> batcher = fullBatcher(OverflowPolicy.BLOCK, BatcherConfig.NO_TIMEOUT);

    Thread.currentThread().interrupt();
    CompletableFuture<Integer> rejected;
    boolean flagKept;
    try {
      rejected = batcher.submit(99);
    } finally {
      flagKept = Thread.interrupted();
    }

    assertThat(flagKept).isTrue();
    BatcherFullException e = causeOf(rejected, BatcherFullException.class);
    assertThat(e.reason()).isEqualTo(RejectionReason.INTERRUPTED);
    assertThat(e).hasMessage(
        "Batcher 'orders' is full (capacity 4); item rejected: the producer was interrupted while waiting for room");
  }

  @Test
  void submitAndWait_whenFull_interrupted_throwsInterruptedException() throws Exception {
    Batcher<Integer, Integer> batcher = fullBatcher(OverflowPolicy.BLOCK, BatcherConfig.NO_TIMEOUT);

    Thread.currentThread().interrupt();
    try {
      assertThatThrownBy(() -> batcher.submitAndWait(99))
          .isInstanceOf(InterruptedException.class)
          .hasCauseInstanceOf(BatcherFullException.class);
    } finally {
      Thread.interrupted();
    }
  }

  @Test
  void submitAndWait_whenFull_dropPolicy_throwsBatcherFullException() throws Exception {
    Batcher<Integer, Integer> batcher = fullBatcher(OverflowPolicy.DROP, Duration.ofSeconds(5));

    assertThatThrownBy(() -> batcher.submitAndWait(99))
        .isExactlyInstanceOf(BatcherFullException.class)
        .hasMessage("Batcher 'orders' is full (capacity 4); item dropped");
  }

  @Test
  void rejection_reportedToStatsRecorder() throws Exception {
    Batcher<Integer, Integer> batcher = fullBatcher(OverflowPolicy.DROP, Duration.ofSeconds(5));
    List<RejectionReason> seen = new CopyOnWriteArrayList<>();
    batcher.addStatsRecorder(new StatsRecorder() {
      @Override
      public void recordRejected(RejectionReason reason) {
        seen.add(reason);
      }
    });

    batcher.offer(99);

    assertThat(seen).containsExactly(RejectionReason.FULL);
  }

  @Test
  void sinkSubmitsIntoOwnFullRing_blockPolicy_rejectedAtOnceNoDeadlock() throws Exception {
    AtomicReference<Batcher<String, Void>> self = new AtomicReference<>();
    List<CompletableFuture<Void>> fromSink = new CopyOnWriteArrayList<>();
    RecordingSink<String> gate = new RecordingSink<String>().hold();
    Batcher<String, Void> batcher = Batcher.of("logs", BatcherConfig.builder().ringSize(2).maxBatchSize(2)
        .overflowPolicy(OverflowPolicy.BLOCK).submitTimeout(BatcherConfig.NO_TIMEOUT).build(),
        (Batch<String, Void> batch) -> {
          if (batch.item(0).startsWith("user")) {
            gate.write(new SinkView(batch)); // park until the test has filled the ring
            for (int i = 0; i < 3; i++) {
              fromSink.add(self.get().submit("log from sink " + i)); // ring of 2: the third cannot fit
            }
          }
          batch.completeRemaining(null);
        });
    batchers.add(batcher);
    self.set(batcher);
    CompletableFuture<Void> user = batcher.submit("user 0");
    gate.awaitEntered();
    batcher.offer("user 1");
    batcher.offer("user 2"); // ring full: 2 slots taken
    gate.open();

    assertThat(user).succeedsWithin(WAIT);
    // Batch [user 0] logged into a full ring: all three refused at once. Batch [user 1, user 2] logged
    // after the consumer had taken both slots: two fit, the third is refused.
    org.awaitility.Awaitility.await().atMost(WAIT)
        .until(() -> fromSink.size() == 6 && fromSink.stream().allMatch(CompletableFuture::isDone));
    for (CompletableFuture<Void> refused : fromSink.subList(0, 3)) {
      assertThat(causeOf(refused, BatcherFullException.class)).hasMessage("Batcher 'logs' is full (capacity 2);"
          + " item dropped: submitted on the batcher's own consumer thread, which must not wait for room");
    }
    assertThat(fromSink.subList(3, 6)).filteredOn(f -> !f.isCompletedExceptionally()).hasSize(2);
    assertThat(batcher.stats().rejected(RejectionReason.FULL)).isEqualTo(4);
  }

  @Test
  void sinkCallsSubmitAndWait_rejectedWithClearMessage() {
    AtomicReference<Batcher<String, Void>> self = new AtomicReference<>();
    Batcher<String, Void> batcher = Batcher.of("logs", BatcherConfig.ofDefaults(),
        (Batch<String, Void> batch) -> {
          if (batch.item(0).equals("outer")) {
            self.get().submitAndWait("inner");
          }
        });
    batchers.add(batcher);
    self.set(batcher);

    assertThat(batcher.submit("outer")).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
        .havingCause().isExactlyInstanceOf(IllegalStateException.class)
        .withMessage("submitAndWait must not be called on the consumer thread of batcher 'logs'"
            + " (for example from its sink): it would wait for itself; use submit or offer");
  }

  @Test
  void sinkCallsClose_rejectedWithClearMessage() {
    AtomicReference<Batcher<String, Void>> self = new AtomicReference<>();
    Batcher<String, Void> batcher = Batcher.of("logs", BatcherConfig.ofDefaults(),
        (Batch<String, Void> batch) -> self.get().close());
    batchers.add(batcher);
    self.set(batcher);

    assertThat(batcher.submit("x")).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
        .havingCause().isExactlyInstanceOf(IllegalStateException.class)
        .withMessage("close() must not be called on the consumer thread of batcher 'logs'"
            + " (for example from its sink): it would wait for itself");
    assertThat(batcher.isClosed()).isFalse();
  }

  private static <E extends Throwable> E causeOf(CompletableFuture<?> future, Class<E> type) {
    assertThat(future).failsWithin(WAIT)
        .withThrowableOfType(java.util.concurrent.ExecutionException.class);
    try {
      future.join();
    } catch (java.util.concurrent.CompletionException e) {
      assertThat(e.getCause()).isInstanceOf(type);
      return type.cast(e.getCause());
    }
    throw new AssertionError("future did not fail");
  }

  /** Adapts a Batch of one result type to the RecordingSink's, just to reuse its gate. */
  private static final class SinkView implements Batch<String, Integer> {
    private final Batch<String, Void> batch;

    SinkView(Batch<String, Void> batch) {
      this.batch = batch;
    }

    @Override
    public int size() {
      return batch.size();
    }

    @Override
    public String item(int index) {
      return batch.item(index);
    }

    @Override
    public List<String> items() {
      return batch.items();
    }

    @Override
    public long weight() {
      return batch.weight();
    }

    @Override
    public void complete(int index, Integer result) {
      batch.complete(index, null);
    }

    @Override
    public void fail(int index, Throwable cause) {
      batch.fail(index, cause);
    }
  }
}
