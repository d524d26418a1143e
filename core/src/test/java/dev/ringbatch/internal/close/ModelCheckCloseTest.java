package dev.ringbatch.internal.close;

import static dev.ringbatch.internal.ModelCheck.check;

import com.lmax.disruptor.RingBuffer;
import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherClosedException;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.BatcherStats;
import dev.ringbatch.CloseReport;
import dev.ringbatch.OverflowPolicy;
import dev.ringbatch.WaitMode;
import dev.ringbatch.internal.ModelCheck;
import dev.ringbatch.internal.consume.Abandonment;
import dev.ringbatch.internal.consume.BatchCompleter;
import dev.ringbatch.internal.consume.CoalescingConsumer;
import dev.ringbatch.internal.consume.ConsumerCounters;
import dev.ringbatch.internal.consume.ConsumerStop;
import dev.ringbatch.internal.consume.ConsumerWaitStrategy;
import dev.ringbatch.internal.consume.FlushWaiters;
import dev.ringbatch.internal.consume.HandOver;
import dev.ringbatch.internal.consume.LostFailureLog;
import dev.ringbatch.internal.consume.PendingBatch;
import dev.ringbatch.internal.consume.SyncBatchWriter;
import dev.ringbatch.internal.pacing.SelfClock;
import dev.ringbatch.internal.pacing.SpinHint;
import dev.ringbatch.internal.ring.ConsumerGroup;
import dev.ringbatch.internal.ring.PublishGate;
import dev.ringbatch.internal.ring.SubmissionSlot;
import dev.ringbatch.internal.shared.GuardedStatsRecorders;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.Test;

/**
 * Model checks a producer's submits racing a close racing the consumer, on the real batcher, and the
 * publish-vs-close-marker protocol of {@link PublishGate} on a real Disruptor ring.
 *
 * <h2>Submit vs close vs consumer ({@link SubmitCloseScenario})</h2>
 * A real {@link DisruptorBatcher} (ring of 4, {@code maxBatchSize} 1, a synchronous sink, the default
 * blocking wait) whose consumer thread runs under the model checker like the other two: a producer submits
 * two items, a closing thread calls {@code close(timeout)}. Every class of the path runs for real:
 * {@link PublishGate}, {@link CoalescingConsumer}, {@link SyncBatchWriter}, {@link PendingBatch},
 * {@link HandOver}, {@link CloseProtocol}, {@link BatchCompleter}, {@link FlushWaiters}, the Disruptor's
 * ring, sequencer and barrier. Invariants:
 * <ul>
 *   <li>when close returns, every future the producer already holds is done, except (see the disabled
 *       {@code submit_vs_abandoningClose_reportExactAndFuturesDone}) those of a batch the consumer had
 *       already settled when the close took over: each of those must then succeed;</li>
 *   <li>after a draining close returned the sink is never called again; after an abandoning one it may be,
 *       by design, only with items the close failed as "outcome unknown" (it took over from a consumer
 *       about to call the sink or inside it);</li>
 *   <li>every future completes, and agrees with the sink: an item the sink got is never failed as "not
 *       written", an item it did not get never succeeds (only "outcome unknown" may go either way);</li>
 *   <li>the final stats add up ({@code accepted == written + failed + abandoned}) and match the futures
 *       (accepted, written and abandoned counted once each); the close report does too, and nothing is
 *       counted after it, for a draining close; for an abandoning one the report may lag in the two ways the
 *       disabled {@code submit_vs_abandoningClose_reportExactAndFuturesDone} pins, and in no other.</li>
 * </ul>
 * With {@code Duration.ZERO} the close abandons at once and takes over (from the consumer in the sink, or by
 * its yield at a checkpoint); with a positive timeout it waits for the drain, since the model checker's clock
 * does not move. Left out: a close that gives up on the hand-over ({@code ORPHANED}, see
 * {@code ModelCheckHandOverTest}), retries, linger, byte limits, async sinks, a full ring.
 *
 * <h2>Sync write vs take-over ({@link WriteTakeOverScenario})</h2>
 * The real {@link SyncBatchWriter} writes a one-item {@link PendingBatch} on the consumer thread (then meets a
 * checkpoint or the marker), while the closing thread asks for the holdings, takes over as
 * {@code CloseProtocol.takeOver} does, and fails what {@code CoalescingConsumer.failHoldings} fails of the
 * batches (the batch being filled by its {@code FILLING} CAS, the batch in the sink through
 * {@code failInFlight}). Invariant: the item's future completes once, agrees with the sink, and is counted
 * once; a sink call that begins after close returned holds only items failed as "outcome unknown", and the
 * sink is never called with an empty batch (the known bug below; only the disabled test checks that). Left
 * out: ring slots, retries (the backoff state).
 *
 * <h2>Publish vs close marker ({@link PublishMarkerScenario})</h2>
 * Two producers call {@link PublishGate#accept} while a closing thread calls the gate as
 * {@code CloseProtocol} does: {@code beginClose}, {@code awaitRoom}, {@code publishCloseMarker}. Invariant: an
 * accepted item's sequence lies before the marker's, every other claim is a tombstone, and
 * {@code accepted()} counts exactly the accepted items. Left out: the consumer (nothing is written), a full
 * ring.
 */
class ModelCheckCloseTest {

  @Test
  void submit_vs_drainingClose_vs_consumer() {
    ModelCheck.exploreWithConsumer(40, new SubmitCloseScenario(Duration.ofSeconds(30), true));
  }

  /**
   * Found by this model check on e5cbe45 (with {@code -Dringbatch.modelcheck.factor=10}) and fixed since (issue
   * 19): the close now waits, up to its grace, for a batch the consumer settled before the take-over, a batch is
   * counted in the step that wins its settle, and a tombstone is counted before its slot is published. Before,
   * every future still completed once and the final counts were right, but the close's own view was off:
   * <ol>
   *   <li>A close that takes over while the consumer has won its batch's {@code SETTLING} CAS (the sink
   *       returned) but not finished {@code BatchCompleter.complete} finds nothing to fail ({@code failInFlight}
   *       skips a settling batch) and returns while that batch's futures are pending: the consumer completes
   *       them, as written, right after. If the close took over before the consumer counted the batch, the
   *       report says {@code accepted = written + failed + abandoned + 1} ({@code inFlight=1}).</li>
   *   <li>A producer refused by the closing state (its claim came after the marker) that has published its
   *       tombstone but not yet counted it ({@code tombstones.increment()}) counts as accepted in a report taken
   *       meanwhile: {@code accepted} one too high.</li>
   * </ol>
   */
  @Test
  void submit_vs_abandoningClose_reportExactAndFuturesDone() {
    ModelCheck.exploreWithConsumer(60, new SubmitCloseScenario(Duration.ZERO, true));
  }

  /**
   * Found by this model check on e5cbe45, fixed since (issue 19: a batch a close takes as FILLING is no longer
   * cleared, so it stays settled, and PendingBatch.open refuses a batch that is not IN_SINK): a close that takes over while the consumer is between
   * {@code handOver.callOut()} and its {@code FILLING -> IN_SINK} CAS in {@code SyncBatchWriter.write} fails the
   * batch as never written, and {@code BatchCompleter.abandon} clears it, which sets its state back to
   * {@code FILLING}. The consumer's CAS then succeeds on the emptied batch and it calls the sink with no items,
   * after close returned (and counts a batch of 0 after the close report). No item is lost or completed twice:
   * the sink sees none of them.
   */
  @Test
  void syncWrite_vs_takeOver_neverCallsSinkAfterClose() {
    ModelCheck.explore(300, new WriteTakeOverScenario(true));
  }

  @Test
  void publish_vs_closeMarker() {
    ModelCheck.explore(300, new PublishMarkerScenario());
  }

  static final class SubmitCloseScenario implements Runnable {
    private final Duration closeTimeout;
    /**
     * Whether every future must be done when close returns. Otherwise one may still be pending if the
     * consumer had settled its batch (counted it written) when the close took over: it must then succeed.
     */
    private final boolean strict;

    // Shared by the threads: fields of this (shared) object, reset per invocation.
    private Batcher<Integer, Void> batcher;
    private Thread consumerThread;
    private CompletableFuture<Void> first;
    private CompletableFuture<Void> second;
    private CloseReport report;
    private volatile boolean closeReturned;
    /** What the sink got, and what of it in calls that began after close returned: consumer thread only. */
    private List<Integer> sunk;
    private List<Integer> sunkAfterClose;
    private boolean calledAfterClose;
    /** Items whose future the producer held, still pending, when close returned. */
    private List<Integer> pendingAtClose;
    private String violation;

    SubmitCloseScenario(Duration closeTimeout, boolean strict) {
      this.closeTimeout = closeTimeout;
      this.strict = strict;
    }

    @Override
    public void run() {
      consumerThread = null;
      first = null;
      second = null;
      report = null;
      closeReturned = false;
      sunk = new ArrayList<>();
      sunkAfterClose = new ArrayList<>();
      calledAfterClose = false;
      pendingAtClose = new ArrayList<>();
      violation = null;
      BatcherConfig config = BatcherConfig.builder()
          .ringSize(4)
          .maxBatchSize(1)
          .waitMode(WaitMode.BLOCKING)
          .threadFactory(this::newConsumerThread)
          .build();
      batcher = Batcher.of("model", config, BatchSink.noResult(this::write));

      Thread producer = ModelCheck.start("producer", this::produce);
      Thread closer = ModelCheck.start("close", this::close);
      ModelCheck.join(producer, closer);
      ModelCheck.join(consumerThread); // ends after a drain or a hand-over; a sink call it was in returns too

      check(violation == null, String.valueOf(violation));
      check(first.isDone() && second.isDone(), "a future left pending: " + first + ", " + second);
      check(!report.drained() || !calledAfterClose, "the sink was called after a draining close returned");
      check(pendingAtClose.isEmpty() || !strict && !report.drained(), "close returned (" + report
          + ") while the futures of items " + pendingAtClose + " were pending");
      for (int item : pendingAtClose) {
        Throwable failure = failureOf(item == 1 ? first : second);
        check(failure == null, "item " + item + " was pending when close returned, then failed: " + failure);
      }
      for (int item : sunkAfterClose) {
        Throwable failure = failureOf(item == 1 ? first : second);
        check(failure instanceof BatcherClosedException closed && closed.isOutcomeUnknown(),
            "the sink got item " + item + " after close returned, but its future says " + failure);
      }
      int accepted = 0;
      int written = 0;
      int abandoned = 0;
      int rejected = 0;
      for (int item = 1; item <= 2; item++) {
        Throwable failure = failureOf(item == 1 ? first : second);
        boolean sinkGotIt = sunk.contains(item);
        if (failure == null) {
          check(sinkGotIt, "item " + item + " succeeded but the sink never got it");
          accepted++;
          written++;
        } else if (failure instanceof BatcherClosedException closed && !closed.isAbandoned()) {
          check(!sinkGotIt, "item " + item + " was rejected but the sink got it");
          rejected++;
        } else if (failure instanceof BatcherClosedException closed) {
          check(closed.isOutcomeUnknown() || !sinkGotIt,
              "item " + item + " failed as not written, but the sink got it: " + failure);
          accepted++;
          abandoned++;
        } else {
          throw new AssertionError("item " + item + " failed with " + failure);
        }
      }
      BatcherStats after = batcher.stats(); // every thread has ended: the counts are final
      check(after.accepted() == after.written() + after.failed() + after.abandoned(),
          "the final stats do not add up: " + after);
      check(after.accepted() == accepted && after.written() == written && after.abandoned() == abandoned
              && after.failed() == 0,
          "the final stats " + after + " do not match the futures: accepted " + accepted + ", written "
              + written + ", abandoned " + abandoned);
      BatcherStats atClose = report.stats();
      if (strict || report.drained()) {
        check(atClose.accepted() == atClose.written() + atClose.failed() + atClose.abandoned(),
            "the close report does not add up: " + atClose);
        check(after.accepted() == atClose.accepted() && after.written() == atClose.written()
                && after.failed() == atClose.failed() && after.abandoned() == atClose.abandoned(),
            "counted after the close returned: " + atClose + " then " + after);
      } else {
        // The two lags the disabled test pins: a refused producer's tombstone counted after the report (its item
        // looked accepted), and items of a batch the consumer had settled but not counted when the close took
        // over (counted written after it). Nothing else may differ.
        check(atClose.abandoned() == after.abandoned() && atClose.failed() == after.failed()
                && atClose.written() <= after.written() && atClose.accepted() >= after.accepted()
                && atClose.accepted() - after.accepted() <= rejected,
            "the close report " + atClose + " differs from the final stats " + after
                + " by more than the known lags");
      }
    }

    private Thread newConsumerThread(Runnable consumer) {
      Thread thread = new Thread(consumer, "consumer");
      thread.setDaemon(true);
      if (consumer instanceof CoalescingConsumer) { // not the close helper
        consumerThread = thread;
      }
      return thread;
    }

    private void produce() {
      first = batcher.submit(1);
      second = batcher.submit(2);
    }

    private void close() {
      report = batcher.close(closeTimeout);
      closeReturned = true;
      // The producer may still be inside submit: only the futures it already holds are looked at.
      CompletableFuture<Void> one = first;
      CompletableFuture<Void> two = second;
      if (one != null && !one.isDone()) {
        pendingAtClose.add(1);
      }
      if (two != null && !two.isDone()) {
        pendingAtClose.add(2);
      }
    }

    /**
     * The sink. A call may begin after an abandoning close returned: the close took over from a consumer about
     * to call it, and failed its items as "outcome unknown". (An empty call is the known bug pinned by
     * {@code syncWrite_vs_takeOver_neverCallsSinkAfterClose}.)
     */
    private void write(List<Integer> items) {
      if (closeReturned) {
        calledAfterClose = true;
        sunkAfterClose.addAll(items);
      }
      sunk.addAll(items);
    }
  }

  static final class WriteTakeOverScenario implements Runnable {
    /** Whether an empty sink call (the known bug above) fails the invocation. */
    private final boolean strict;

    private HandOver handOver;
    private PendingBatch<Integer, Void> batch;
    private SyncBatchWriter<Integer, Void> writer;
    private BatchCompleter completer;
    private CompletableFuture<Object> future;
    private volatile boolean closeReturned;
    private boolean drained;
    private List<Integer> sunk;
    private List<Integer> sunkAfterClose;
    private boolean calledEmpty;
    private long abandonedByClose;
    private String violation;

    WriteTakeOverScenario(boolean strict) {
      this.strict = strict;
    }

    @Override
    public void run() {
      handOver = new HandOver();
      ConsumerCounters counters = new ConsumerCounters();
      GuardedStatsRecorders recorders = new GuardedStatsRecorders("model");
      completer = new BatchCompleter("model", counters, recorders, null, new LostFailureLog("model"));
      writer = new SyncBatchWriter<>("model", 4, BatchSink.noResult(this::write), dev.ringbatch.RetryPolicy.none(),
          System::nanoTime, handOver, completer, new FlushWaiters(), new SelfClock(), new SpinHint());
      batch = new PendingBatch<>(1, 4);
      future = new CompletableFuture<>();
      batch.add(1, future, 0, 0, SubmissionSlot.NOT_STAMPED); // the consumer took item 1 from slot 0
      closeReturned = false;
      drained = false;
      sunk = new ArrayList<>();
      sunkAfterClose = new ArrayList<>();
      calledEmpty = false;
      abandonedByClose = 0;
      violation = null;

      Thread consumer = ModelCheck.start("consumer", this::consume);
      Thread closer = ModelCheck.start("close", this::close);
      ModelCheck.join(consumer, closer);

      check(violation == null, String.valueOf(violation));
      check(!strict || !calledEmpty, "the sink was called with an empty batch (after close returned: "
          + closeReturned + ")");
      check(future.isDone(), "the item's future is pending");
      Throwable failure = failureOf(future);
      check(!drained || sunkAfterClose.isEmpty(), "the sink was called after a draining close returned");
      check(sunkAfterClose.isEmpty() || failure instanceof BatcherClosedException closed && closed.isOutcomeUnknown(),
          "the sink got the item after close returned, but its future says " + failure);
      if (failure == null) {
        check(sunk.contains(1), "succeeded without reaching the sink");
      } else {
        check(failure instanceof BatcherClosedException closed && (closed.isOutcomeUnknown() || sunk.isEmpty()),
            "failed as not written, but the sink got it: " + failure);
      }
      check(counters.written() + counters.failed() + counters.abandoned() == 1,
          "item counted " + (counters.written() + counters.failed() + counters.abandoned()) + " times");
    }

    /**
     * CoalescingConsumer.write(0), then its next wait: a checkpoint, or the close marker (the ring holds
     * nothing else), and the unwinding of CoalescingConsumer.run.
     */
    private void consume() {
      try {
        writer.write(batch, 0);
        if (handOver.abandonRequested()) {
          throw ConsumerStop.YIELD;
        }
        handOver.stopped();
      } catch (ConsumerStop stop) {
        if (stop == ConsumerStop.YIELD && !handOver.yieldToClose()) {
          violation = "orphaned, but this close never orphans";
        }
      }
    }

    /** CloseProtocol after its timeout: requestAbandon, takeOver, and failHoldings' part for the batches. */
    private void close() {
      handOver.requestAbandon();
      while (true) {
        int state = handOver.state();
        if (state == HandOver.CALLING_OUT && handOver.tryTakeOver() || state == HandOver.TAKEN) {
          break;
        }
        if (state == HandOver.STOPPED) {
          drained = true; // the consumer wrote everything: nothing to fail
          closeReturned = true;
          return;
        }
        if (state == HandOver.ORPHANED) {
          violation = "orphaned, but this close never orphans";
          return;
        }
        Thread.yield();
      }
      BatcherClosedException cause = new BatcherClosedException("model", 4, true, false, "not written");
      Abandonment gathered = new Abandonment(); // as CloseProtocol: settle and gather, count, report, then tell
      if (batch.state.compareAndSet(PendingBatch.FILLING, PendingBatch.SETTLING)) {
        batch.seal();
        completer.abandon(batch, cause, gathered);
      }
      writer.failInFlight("close", gathered);
      completer.countAbandoned(gathered);
      completer.tellAbandoned(gathered);
      abandonedByClose = gathered.items();
      closeReturned = true;
    }

    /** The sink; a call after the take-over may only hold items failed as "outcome unknown". */
    private void write(List<Integer> items) {
      if (closeReturned) {
        sunkAfterClose.addAll(items);
      }
      if (items.isEmpty()) {
        calledEmpty = true; // the consumer never writes an empty batch: see the known bug above
      }
      sunk.addAll(items);
    }
  }

  static final class PublishMarkerScenario implements Runnable {
    private RingBuffer<SubmissionSlot> ring;
    private PublishGate gate;
    private long firstSequence;
    private long secondSequence;
    private long markerSequence;

    @Override
    public void run() {
      ring = SubmissionSlot.newRing(4,
          new ConsumerWaitStrategy(WaitMode.BLOCKING, new SelfClock()));
      gate = new PublishGate("model", ring, OverflowPolicy.DROP, Duration.ofSeconds(1), new ConsumerGroup(),
          new GuardedStatsRecorders("model"), System::nanoTime);
      firstSequence = Long.MIN_VALUE;
      secondSequence = Long.MIN_VALUE;
      markerSequence = Long.MIN_VALUE;

      Thread one = ModelCheck.start("producer-1", () -> firstSequence = accept(1));
      Thread two = ModelCheck.start("producer-2", () -> secondSequence = accept(2));
      Thread closer = ModelCheck.start("close", this::close);
      ModelCheck.join(one, two, closer);

      check(markerSequence >= 0, "no close marker published");
      check(ring.get(markerSequence).kind == SubmissionSlot.CLOSE, "the marker's slot holds no marker");
      int accepted = 0;
      for (long sequence : new long[] {firstSequence, secondSequence}) {
        if (sequence >= 0) {
          accepted++;
          check(sequence < markerSequence, "item accepted at " + sequence + ", after the marker at "
              + markerSequence + ": the consumer stops at the marker and never writes it");
          check(ring.get(sequence).kind == SubmissionSlot.ITEM, "accepted item's slot holds no item");
        } else {
          check(sequence == PublishGate.REJECTED_CLOSED, "refused for another reason: " + sequence);
        }
      }
      for (long sequence = 0; sequence <= ring.getCursor(); sequence++) {
        check(ring.isAvailable(sequence), "claimed sequence " + sequence + " never published");
        byte kind = ring.get(sequence).kind;
        check(kind == SubmissionSlot.ITEM || kind == SubmissionSlot.TOMBSTONE || sequence == markerSequence,
            "slot " + sequence + " holds kind " + kind);
      }
      check(gate.accepted() == accepted, "accepted() is " + gate.accepted() + " for " + accepted + " accepted");
    }

    private long accept(int item) {
      return gate.accept(item, new CompletableFuture<>(), 0);
    }

    /** CloseProtocol.shutDown and publishCloseMarker, with room in the ring. */
    private void close() {
      gate.beginClose();
      long sequence = gate.awaitRoom(Long.MAX_VALUE, () -> { });
      gate.publishCloseMarker(sequence);
      markerSequence = sequence;
    }
  }

  private static Throwable failureOf(CompletableFuture<?> future) {
    try {
      future.get();
      return null;
    } catch (ExecutionException e) {
      return e.getCause();
    } catch (InterruptedException e) {
      throw new AssertionError(e);
    }
  }
}
