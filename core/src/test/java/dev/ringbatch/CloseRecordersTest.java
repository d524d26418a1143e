package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.ringbatch.stats.StatsRecorder;
import dev.ringbatch.testing.Holds;
import dev.ringbatch.testing.Holds.Gate;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The recorders a close tells (recordAbandoned, recordClosed) run apart from every other kind of user code: a
 * recorder that blocks holds up no caller and no close, and no blocking callback keeps the recorders from being told
 * (found by the independent review of the session's close changes). A sharded close tells recordClosed after its
 * shards' recordAbandoned.
 */
class CloseRecordersTest {
  @RegisterExtension
  final Holds holds = new Holds();

  /** A batcher whose sink signals {@code inSink} and then blocks until {@code release}. */
  private static Batcher<Integer, Integer> stuckInSink(String name, CountDownLatch inSink, Gate release) {
    return Batcher.of(name, BatcherConfig.builder().ringSize(8).maxBatchSize(8).build(), batch -> {
      inSink.countDown();
      release.awaitInterruptibly();
      batch.completeRemaining(1);
    });
  }

  private static StatsRecorder abandonedInto(CompletableFuture<Long> abandoned) {
    return new StatsRecorder() {
      @Override
      public void recordAbandoned(long count) {
        abandoned.complete(count);
      }
    };
  }

  @Test
  @Timeout(60)
  void aFlushCallbackThatBlocks_doesNotKeepTheRecordersFromBeingTold() throws Exception {
    CountDownLatch inSink = new CountDownLatch(1);
    CountDownLatch inAction = new CountDownLatch(1);
    Gate actionRelease = holds.gate();
    CompletableFuture<Long> recorded = new CompletableFuture<>();
    Batcher<Integer, Integer> batcher = stuckInSink("recorders-flush", inSink, holds.gate());
    batcher.addStatsRecorder(abandonedInto(recorded));
    CompletableFuture<Integer> item = batcher.submit(1);
    assertThat(inSink.await(10, TimeUnit.SECONDS)).isTrue();
    batcher.flush().whenComplete((r, t) -> { // runs where the close completes the flushes
      inAction.countDown();
      actionRelease.awaitInterruptibly();
    });
    CloseReport report = batcher.close(Duration.ofMillis(100));
    assertThat(report.abandoned()).as("report=%s", report).isEqualTo(1);
    assertThat(item).failsWithin(Duration.ofSeconds(10)).withThrowableOfType(ExecutionException.class)
        .withCauseInstanceOf(BatcherClosedException.class);
    assertThat(inAction.await(10, TimeUnit.SECONDS)).as("the flush's callback runs").isTrue();
    assertThat(recorded).as("recordAbandoned while a flush callback blocks; report=%s", report)
        .succeedsWithin(Duration.ofSeconds(10)).isEqualTo(1L);
  }

  @Test
  @Timeout(60)
  void aRecorderThatBlocksInRecordClosed_holdsUpNeitherTheCloseNorAFlush() throws Exception {
    CountDownLatch inSink = new CountDownLatch(1);
    CountDownLatch inRecorder = new CountDownLatch(1);
    Gate recorderRelease = holds.gate();
    Batcher<Integer, Integer> batcher = stuckInSink("recorders-closed", inSink, holds.gate());
    batcher.addStatsRecorder(new StatsRecorder() {
      @Override
      public void recordClosed(CloseReport report) {
        inRecorder.countDown();
        recorderRelease.awaitInterruptibly();
      }
    });
    batcher.submit(1);
    assertThat(inSink.await(10, TimeUnit.SECONDS)).isTrue();
    CompletableFuture<Void> flush = batcher.flush();
    long start = System.nanoTime();
    CloseReport report = batcher.close(Duration.ofMillis(100));
    assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).as("close(100 ms) took, ms")
        .isLessThan(3_000);
    assertThat(inRecorder.await(10, TimeUnit.SECONDS)).as("recordClosed called; report=%s", report).isTrue();
    assertThat(flush).as("told while recordClosed blocks").failsWithin(Duration.ofSeconds(10))
        .withThrowableOfType(ExecutionException.class).withCauseInstanceOf(BatcherClosedException.class);
  }

  @Test
  @Timeout(60)
  void aShardedClose_tellsRecordClosedAfterItsShardsRecordAbandoned() throws Exception {
    for (int round = 0; round < 5; round++) {
      CountDownLatch inSink = new CountDownLatch(1);
      Gate release = holds.gate();
      CountDownLatch both = new CountDownLatch(2);
      List<String> calls = new CopyOnWriteArrayList<>();
      Batcher<Integer, Integer> batcher = Batcher.sharded("recorders-shard-" + round, BatcherConfig.builder()
          .ringSize(8).maxBatchSize(8).build(), 1, shard -> batch -> {
            inSink.countDown();
            release.awaitInterruptibly();
            batch.completeRemaining(1);
          });
      batcher.addStatsRecorder(new StatsRecorder() {
        @Override
        public void recordAbandoned(long count) {
          calls.add("abandoned " + count);
          both.countDown();
        }

        @Override
        public void recordClosed(CloseReport report) {
          calls.add("closed");
          both.countDown();
        }
      });
      batcher.submit(1);
      assertThat(inSink.await(10, TimeUnit.SECONDS)).isTrue();
      CloseReport report = batcher.close(Duration.ofMillis(50));
      assertThat(report.abandoned()).isEqualTo(1);
      assertThat(both.await(10, TimeUnit.SECONDS)).as("both told; calls=%s", calls).isTrue();
      assertThat(calls).as("round %d; report=%s", round, report).containsExactly("abandoned 1", "closed");
    }
  }

  @Test
  @Timeout(60)
  void aShardedCloseWhoseRecordClosedBlocks_stillReturnsInTime() throws Exception {
    CountDownLatch inRecorder = new CountDownLatch(1);
    Gate recorderRelease = holds.gate();
    Batcher<Integer, Integer> batcher = Batcher.sharded("recorders-shard-blocks", BatcherConfig.builder()
        .ringSize(8).maxBatchSize(8).build(), 2, shard -> batch -> batch.completeRemaining(1));
    batcher.addStatsRecorder(new StatsRecorder() {
      @Override
      public void recordClosed(CloseReport report) {
        inRecorder.countDown();
        recorderRelease.awaitInterruptibly();
      }
    });
    assertThat(batcher.submit(1)).succeedsWithin(Duration.ofSeconds(10));
    long start = System.nanoTime();
    CloseReport report = batcher.close(Duration.ofMillis(100));
    assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).as("close(100 ms) took, ms")
        .isLessThan(3_000);
    assertThat(report.drained()).isTrue();
    assertThat(inRecorder.await(10, TimeUnit.SECONDS)).as("recordClosed called").isTrue();
  }

  /**
   * A consumer the close had to leave behind (ORPHANED) fails what it held itself when it gets to run: a caller's
   * dependent action that blocks there must not keep the recorders from being told. The consumer is orphaned by
   * suspending its thread while it is parked idle, which is what a descheduled thread looks like to the close;
   * {@code Thread.suspend} works up to JDK 20 and is gone from JDK 23, so the test runs where it exists.
   */
  @Test
  @Timeout(60)
  void anOrphanedConsumer_whoseCallersDependentActionBlocks_stillTellsTheRecorders() throws Exception {
    assumeTrue(SuspendableConsumer.supported(), "Thread.suspend works on this JDK");
    SuspendableConsumer consumer = new SuspendableConsumer();
    CompletableFuture<Long> recorded = new CompletableFuture<>();
    CountDownLatch inAction = new CountDownLatch(1);
    Gate actionRelease = holds.gate();
    Batcher<Integer, Integer> batcher = Batcher.of("recorders-orphan", BatcherConfig.builder().ringSize(8)
        .maxBatchSize(8).threadFactory(consumer.factory("recorders-orphan")).build(),
        batch -> batch.completeRemaining(1));
    batcher.addStatsRecorder(abandonedInto(recorded));
    assertThat(batcher.submit(0)).succeedsWithin(Duration.ofSeconds(10));
    consumer.suspendWhenIdle();
    CompletableFuture<Integer> item;
    CloseReport report;
    try {
      item = batcher.submit(1); // stays unread in the ring: the consumer holds it
      item.whenComplete((r, t) -> {
        inAction.countDown();
        actionRelease.awaitInterruptibly();
      });
      report = batcher.close(Duration.ofMillis(100));
    } finally {
      consumer.resume();
    }
    assertThat(report.drained()).as("orphaned; report=%s", report).isFalse();
    assertThat(inAction.await(10, TimeUnit.SECONDS)).as("the orphaned consumer told the caller").isTrue();
    assertThat(item).isCompletedExceptionally();
    assertThat(recorded).as("recordAbandoned while a caller's dependent action blocks; report=%s", report)
        .succeedsWithin(Duration.ofSeconds(10)).isEqualTo(1L);
    assertThat(batcher.stats().abandoned()).as("counted").isEqualTo(1);
  }
}
