package dev.ringbatch.internal.consume;

import static dev.ringbatch.internal.ModelCheck.check;

import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.CloseReport;
import dev.ringbatch.internal.ModelCheck;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * Model checks {@code flush()} racing the consumer finishing a batch and a close.
 *
 * <h2>On the real batcher ({@link FlushCloseScenario})</h2>
 * A real {@link DisruptorBatcher} (ring of 4, {@code maxBatchSize} 2, a synchronous sink) whose consumer thread runs under the model
 * checker: the main thread submits an item, then one thread calls {@code flush()} while another closes the
 * batcher, both racing the consumer writing the item. Invariants:
 * once close returned, a flush future the flushing thread holds is done; every flush future completes; a
 * flush that completes normally does so after the future of the item submitted before it, except (see the
 * disabled {@code flush_vs_consumer_vs_abandoningClose_neverBeforeTheItemsFuture}) when an abandoning close
 * took over while the consumer settled that item's batch: the item must then succeed. With
 * {@code Duration.ZERO} the close abandons and completes waiting flushes itself ({@code FlushWaiters
 * .completeAll}); with a positive timeout it drains (the model checker's clock does not move). Left out:
 * linger (the wake-up that cuts it short), async sinks (their out-of-order settling), several flushes.
 *
 * <h2>{@link FlushWaiters} alone ({@link AwaitAdvanceScenario})</h2>
 * Two flushing threads await targets 0 and 1 while the consumer thread advances the finished sequence to 0
 * and then 1, as {@code SyncBatchWriter} does per batch. Invariant: both futures complete, neither before
 * its target finished: the register-then-recheck in {@code await} against the write-then-look in
 * {@code advance}. Left out: {@code completeAll} (exercised above through the close).
 */
class ModelCheckFlushTest {

  @Test
  void flush_vs_consumer_vs_drainingClose() {
    ModelCheck.exploreWithConsumer(40, new FlushCloseScenario(Duration.ofSeconds(30), true));
  }

  /**
   * Found by this model check on e5cbe45 (with {@code -Dringbatch.modelcheck.factor=10}), fixed since (issue 19):
   * the same race as {@code ModelCheckCloseTest.submit_vs_abandoningClose_reportExactAndFuturesDone}. A close
   * that took over after the consumer won its batch's {@code SETTLING} CAS, before it completed the futures,
   * abandoned nothing and completed the waiting flush normally while the item's future was still pending. The
   * close now waits, up to its grace, for that batch's futures before it reports and releases flushes.
   */
  @Test
  void flush_vs_consumer_vs_abandoningClose_neverBeforeTheItemsFuture() {
    ModelCheck.exploreWithConsumer(80, new FlushCloseScenario(Duration.ZERO, true));
  }

  @Test
  void await_vs_advance() {
    ModelCheck.explore(300, new AwaitAdvanceScenario());
  }

  static final class FlushCloseScenario implements Runnable {
    private final Duration closeTimeout;
    /**
     * Whether a normal flush must always follow the item's future. Otherwise it may come first if the
     * consumer had settled the item's batch (counted it written) when the close took over: it must then succeed.
     */
    private final boolean strict;

    private Batcher<Integer, Void> batcher;
    private Thread consumerThread;
    private CompletableFuture<Void> item;
    private CompletableFuture<Void> flush;
    private CloseReport report;
    private boolean flushedBeforeItem;
    private String violation;

    FlushCloseScenario(Duration closeTimeout, boolean strict) {
      this.closeTimeout = closeTimeout;
      this.strict = strict;
    }

    @Override
    public void run() {
      consumerThread = null;
      item = null;
      flush = null;
      report = null;
      flushedBeforeItem = false;
      violation = null;
      BatcherConfig config = BatcherConfig.builder()
          .ringSize(4)
          .maxBatchSize(2)
          .threadFactory(this::newConsumerThread)
          .build();
      batcher = Batcher.of("model", config, BatchSink.noResult(items -> { }));

      item = batcher.submit(1); // the consumer, already running, races to write it
      Thread flusher = ModelCheck.start("flush", this::flush);
      Thread closer = ModelCheck.start("close", this::close);
      ModelCheck.join(flusher, closer);
      ModelCheck.join(consumerThread);

      check(violation == null, String.valueOf(violation));
      check(item.isDone(), "the item's future is pending");
      check(flush.isDone(), "the flush future is pending after close returned and every thread ended");
      check(!flushedBeforeItem || !strict && !report.drained(),
          "the flush completed normally before the item's future (close report " + report + ")");
      check(!flushedBeforeItem || !item.isCompletedExceptionally(),
          "the flush completed normally before the item, which then failed: " + report);
    }

    private Thread newConsumerThread(Runnable consumer) {
      Thread thread = new Thread(consumer, "consumer");
      thread.setDaemon(true);
      if (consumer instanceof CoalescingConsumer) { // not the close helper
        consumerThread = thread;
      }
      return thread;
    }

    private void flush() {
      flush = batcher.flush();
      // Runs when the flush completes, or at once if it has: a normal completion means the item finished.
      flush.whenComplete((ignored, failure) -> {
        if (failure == null && !item.isDone()) {
          flushedBeforeItem = true;
        }
      });
    }

    private void close() {
      report = batcher.close(closeTimeout);
      CompletableFuture<Void> held = flush;
      if (held != null && !held.isDone()) {
        violation = "close returned with a flush future still pending";
      }
    }
  }

  static final class AwaitAdvanceScenario implements Runnable {
    private FlushWaiters waiters;
    private volatile long finished;
    private CompletableFuture<Void> upToZero;
    private CompletableFuture<Void> upToOne;
    private String violation;

    @Override
    public void run() {
      waiters = new FlushWaiters();
      finished = -1;
      upToZero = null;
      upToOne = null;
      violation = null;

      Thread first = ModelCheck.start("flush-0", () -> upToZero = await(0));
      Thread second = ModelCheck.start("flush-1", () -> upToOne = await(1));
      Thread consumer = ModelCheck.start("consumer", this::finish);
      ModelCheck.join(first, second, consumer);

      check(violation == null, String.valueOf(violation));
      check(upToZero.isDone(), "the flush up to 0 is pending after 0 finished");
      check(upToOne.isDone(), "the flush up to 1 is pending after 1 finished");
    }

    private CompletableFuture<Void> await(long target) {
      CompletableFuture<Void> future = waiters.await(target, () -> { });
      future.whenComplete((ignored, failure) -> {
        if (finished < target) {
          violation = "the flush up to " + target + " completed while only " + finished + " finished";
        }
      });
      return future;
    }

    /** The consumer: each batch's sequences are finished once its futures completed (SyncBatchWriter). */
    private void finish() {
      finished = 0;
      waiters.advance(0);
      finished = 1;
      waiters.advance(1);
    }
  }
}
