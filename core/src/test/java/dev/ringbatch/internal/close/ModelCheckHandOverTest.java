package dev.ringbatch.internal.close;

import static dev.ringbatch.internal.ModelCheck.check;

import dev.ringbatch.internal.ModelCheck;
import dev.ringbatch.internal.consume.HandOver;
import org.junit.jupiter.api.Test;

/**
 * Model checks {@link HandOver} alone: the consumer's {@code callOut}/{@code back}/{@code yieldToClose}/
 * {@code stopped} against an abandoning close's {@code requestAbandon}/{@code tryTakeOver}/
 * {@code takeFromStopped}/{@code orphan}, each called by an explicit thread in the order the real code calls
 * them. Invariant: exactly one side ends up owning (settling) the holdings, and the consumer never touches
 * holdings the close has already failed.
 *
 * <p>The consumer thread follows {@code CoalescingConsumer.consume} with {@code SyncBatchWriter.write}: a
 * checkpoint after its wait, then one pass over two published slots with {@code maxBatchSize} 1, so it takes
 * item A (touching its holdings), writes it ({@code callOut}, the sink, {@code back}), then takes item B in
 * the same pass without a checkpoint, writes it, waits again (a checkpoint) and meets the close marker
 * ({@code stopped}). A {@code ConsumerStop} unwinds as in {@code CoalescingConsumer.run}: after {@code YIELD}
 * a failed {@code yieldToClose} (orphaned) makes the consumer fail its holdings itself. The closing thread
 * follows {@code CloseProtocol.shutDown} after its timeout: {@code requestAbandon}, the {@code takeOver} loop,
 * and {@code failHoldings} when it took them. The close's 200 ms grace is replaced by a round count, since
 * the model checker's clock stands still: a patient close never orphans, an impatient one orphans the first
 * time it finds the consumer in its own code.
 *
 * <p>Left out: what the holdings are (ring slots, batches: {@code ModelCheckCloseTest} runs the real ones),
 * the batch in the sink (settled by its own CAS, not by the hand-over), the consumer's fatal-error path, and
 * the wake-ups (the consumer here never waits, so a wake-up has nothing to end).
 */
class ModelCheckHandOverTest {

  @Test
  void consumer_vs_patientClose_exactlyOneOwner() {
    ModelCheck.explore(300, new Scenario(Integer.MAX_VALUE));
  }

  @Test
  void consumer_vs_impatientClose_exactlyOneOwner() {
    ModelCheck.explore(1_000, new Scenario(0));
  }

  /** Thrown inside the consumer thread as {@code ConsumerStop} is: unwinds to the end of its run. */
  private static final class Stop extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final boolean yield;

    Stop(boolean yield) {
      super(yield ? "YIELD" : "TAKEN", null, false, false);
      this.yield = yield;
    }
  }

  static final class Scenario implements Runnable {
    /** How many rounds of its take-over loop the close waits for a consumer in its own code before orphaning. */
    private final int graceRounds;

    // Shared by the threads: fields of this (shared) object, reset per invocation.
    private HandOver handOver;
    /** The consumer thread has ended (CoalescingConsumer.terminated). */
    private volatile boolean consumerEnded;
    /** The close failed the holdings (CoalescingConsumer.failHoldings on the closing thread). */
    private boolean failedByClose;
    /** How many times the holdings were settled: written up to the marker, or failed by either side. */
    private int settled;
    private boolean consumerOwnedAtEnd;
    private int closeOutcome;
    private String violation;

    Scenario(int graceRounds) {
      this.graceRounds = graceRounds;
    }

    @Override
    public void run() {
      handOver = new HandOver();
      consumerEnded = false;
      failedByClose = false;
      settled = 0;
      consumerOwnedAtEnd = false;
      closeOutcome = -1;
      violation = null;

      Thread consumer = ModelCheck.start("consumer", this::consumer);
      Thread closer = ModelCheck.start("close", this::close);
      ModelCheck.join(consumer, closer);

      check(violation == null, String.valueOf(violation));
      boolean closeOwned = closeOutcome == HandOver.TAKEN;
      check(consumerOwnedAtEnd != closeOwned, "owners at the end: consumer " + consumerOwnedAtEnd + ", close "
          + closeOwned + " (close outcome " + closeOutcome + ", " + handOver + ")");
      check(settled == 1, "holdings settled " + settled + " times, not once (" + handOver + ")");
    }

    // ---- consumer thread: CoalescingConsumer.run / consume / take, SyncBatchWriter.write

    private void consumer() {
      try {
        checkpoint(); // barrier.waitFor returned: two items published
        takeSlot(); // item A joins the batch being filled
        write(); // maxBatchSize 1: A goes to the sink
        takeSlot(); // item B, in the same pass: no checkpoint in between
        write();
        checkpoint(); // the next wait returns the close marker
        settled++; // everything before the marker is written: nothing is left to anyone
        consumerOwnedAtEnd = true;
        handOver.stopped();
      } catch (Stop stop) {
        if (stop.yield && !handOver.yieldToClose()) {
          settled++; // orphaned: the consumer fails its holdings itself
          consumerOwnedAtEnd = true;
        }
      } finally {
        consumerEnded = true;
      }
    }

    private void checkpoint() {
      if (handOver.abandonRequested()) {
        throw new Stop(true);
      }
    }

    /** The consumer copies a ring slot into its batch: its own holdings, only while it owns them. */
    private void takeSlot() {
      if (failedByClose) {
        violation = "the consumer took a slot after the close failed its holdings (" + handOver + ")";
      }
    }

    private void write() {
      if (!handOver.callOut()) {
        throw new Stop(true);
      }
      // the sink, the futures' dependent actions: user code, which touches no holdings
      if (!handOver.back()) {
        throw new Stop(false); // TAKEN: touch nothing more
      }
    }

    // ---- closing thread: CloseProtocol.shutDown after its timeout, takeOver, failHoldings

    private void close() {
      handOver.requestAbandon(); // consumer.requestAbandon, before its wake-up
      int outcome = takeOver();
      if (outcome == HandOver.TAKEN) {
        failedByClose = true; // failHoldings
        settled++;
      }
      closeOutcome = outcome;
    }

    private int takeOver() {
      for (int round = 0; ; round++) {
        int outcome = handOver.state();
        if (outcome == HandOver.CALLING_OUT && handOver.tryTakeOver()) {
          return HandOver.TAKEN;
        }
        if (outcome == HandOver.TAKEN || outcome == HandOver.STOPPED || outcome == HandOver.ORPHANED) {
          return outcome;
        }
        if (outcome == HandOver.OWNED && consumerEnded && handOver.takeFromStopped()) {
          return HandOver.TAKEN;
        }
        if (outcome == HandOver.OWNED && round >= graceRounds && handOver.orphan()) {
          return HandOver.ORPHANED;
        }
        Thread.yield(); // consumer.wake and a 50 µs park in the real loop
      }
    }
  }
}
