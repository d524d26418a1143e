package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The order a close that takes over keeps: flushes behind a taken batch, and recorders before abandoned callers. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CloseTakeOverOrderTest {
  private final List<CountDownLatch> releases = new CopyOnWriteArrayList<>();
  private final List<Batcher<?, ?>> batchers = new CopyOnWriteArrayList<>();

  @AfterEach
  void releaseEverything() {
    releases.forEach(CountDownLatch::countDown);
    batchers.forEach(b -> b.close(Duration.ofSeconds(5)));
  }

  private CountDownLatch release() {
    CountDownLatch latch = new CountDownLatch(1);
    releases.add(latch);
    return latch;
  }

  private <B extends Batcher<?, ?>> B track(B batcher) {
    batchers.add(batcher);
    return batcher;
  }

  private static void await(CountDownLatch latch) {
    try {
      latch.await(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * An async batch the close takes over (stage still pending) is removed from the in-order list of dispatched
   * batches; a later batch that settled before the take-over and finishes its completions afterwards then moves
   * flush progress past the abandoned batch, so a flush covering it completes normally, as if every item before it
   * had been written or failed, instead of failing with the close's BatcherClosedException.
   */
  @Test
  void asyncClose_takesEarlierBatch_laterBatchFinishing_doesNotCompleteFlushNormally() throws Exception {
    BlockingQueue<CompletableFuture<Void>> stages = new LinkedBlockingQueue<>();
    Batcher<Integer, Integer> batcher = track(Batcher.ofAsync("flush-past-taken", BatcherConfig.builder()
        .ringSize(16).maxBatchSize(1).maxInFlightBatches(4).build(), batch -> {
          CompletableFuture<Void> stage = new CompletableFuture<>();
          stages.add(stage);
          return stage.thenRun(() -> batch.completeRemaining(batch.item(0)));
        }));
    CompletableFuture<Integer> first = batcher.submit(1); // T1: its stage never completes
    CompletableFuture<Void> firstStage = stages.poll(10, TimeUnit.SECONDS);
    assertThat(firstStage).isNotNull();
    CompletableFuture<Integer> second = batcher.submit(2); // T2: settles, and its completion blocks
    CompletableFuture<Void> secondStage = stages.poll(10, TimeUnit.SECONDS);
    assertThat(secondStage).isNotNull();
    CompletableFuture<Void> flush = batcher.flush(); // covers T1 and T2
    CountDownLatch inDependent = new CountDownLatch(1);
    CountDownLatch proceed = release();
    second.whenComplete((r, t) -> {
      inDependent.countDown();
      await(proceed);
    });
    Thread completer = new Thread(() -> secondStage.complete(null), "completes-T2");
    completer.setDaemon(true);
    completer.start();
    assertThat(inDependent.await(10, TimeUnit.SECONDS)).isTrue();
    CompletableFuture<CloseReport> closing = CompletableFuture.supplyAsync(() -> batcher.close(Duration.ofMillis(100)));
    // the close took T1 over (counted before it waits for T2's completions): now T2's completion finishes
    Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> batcher.stats().abandoned() == 1);
    proceed.countDown();
    CloseReport report = closing.get(10, TimeUnit.SECONDS);
    assertThat(report.abandoned()).isEqualTo(1);
    assertThat(first).failsWithin(Duration.ofSeconds(10)).withThrowableOfType(java.util.concurrent.ExecutionException.class);
    Awaitility.await().atMost(Duration.ofSeconds(10)).until(flush::isDone);
    assertThat(flush).as("a flush covering an abandoned item fails (Batcher.flush), report=%s", report)
        .isCompletedExceptionally();
  }
  /**
   * user-guide.md: an abandoned item's future completes once the recorders were told (recordAbandoned), "or 100 ms
   * after the close's report if a recorder still blocks then". When the close's report came out late in its grace
   * (here: it waited for a dependent action of an earlier batch), the callers' wait for the recorders used to end
   * before it started: the caller was told at once, before a recorder that takes 50 ms had run.
   */
  @Test
  void closeReportingLateInItsGrace_tellsAbandonedCallerBeforeRecordAbandoned() throws Exception {
    CountDownLatch inSink = new CountDownLatch(1);
    CountDownLatch write = release();
    Batcher<Integer, Integer> batcher = track(Batcher.of("recorders-first", BatcherConfig.builder().ringSize(16)
        .maxBatchSize(1).build(), batch -> {
          inSink.countDown();
          await(write); // until the dependent action below is attached: it then runs on the consumer thread
          batch.completeRemaining(batch.item(0));
        }));
    java.util.concurrent.atomic.AtomicBoolean abandonedRecorded = new java.util.concurrent.atomic.AtomicBoolean();
    batcher.addStatsRecorder(new dev.ringbatch.stats.StatsRecorder() {
      @Override
      public void recordAbandoned(long count) {
        // a recorder that takes a while (a remote call, say), but less than the 100 ms the callers wait for it
        java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
        abandonedRecorded.set(true);
      }
    });
    CountDownLatch inDependent = new CountDownLatch(1);
    CountDownLatch proceed = release();
    CompletableFuture<Integer> first = batcher.submit(1);
    assertThat(inSink.await(10, TimeUnit.SECONDS)).isTrue();
    first.whenComplete((r, t) -> { // on the consumer thread: the close waits for it, up to its grace's end
      inDependent.countDown();
      await(proceed);
    });
    write.countDown();
    assertThat(inDependent.await(10, TimeUnit.SECONDS)).isTrue();
    CompletableFuture<Integer> abandoned = batcher.submit(2); // unread in the ring: the close abandons it
    CompletableFuture<Boolean> recordedWhenTold = abandoned.handle((r, t) -> abandonedRecorded.get());
    CloseReport report = batcher.close(Duration.ofMillis(100));
    assertThat(report.abandoned()).isEqualTo(1);
    assertThat(recordedWhenTold.get(10, TimeUnit.SECONDS))
        .as("once the future is done, recordAbandoned includes the item (user-guide.md, Stats)").isTrue();
  }
}
