package dev.ringbatch.internal.consume;

import dev.ringbatch.Ticker;
import dev.ringbatch.internal.pacing.SpinHint;
import dev.ringbatch.internal.ring.SubmissionSlot;
import dev.ringbatch.internal.shared.GuardedStatsRecorders;
import java.util.concurrent.CompletableFuture;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.JJL_Result;

/**
 * An async batch's stage completing vs an abandoning close failing the batches in flight, on the real
 * {@link AsyncBatchWriter}. Invariant: exactly one of them settles the batch: it is counted once, as written
 * (its item) or as abandoned, and the caller's future ends with that side's outcome.
 */
@JCStressTest
@Outcome(id = "1, 0, written", expect = Expect.ACCEPTABLE, desc = "The stage settled the batch first.")
@Outcome(id = "0, 1, abandoned", expect = Expect.ACCEPTABLE, desc = "The close failed it first.")
@Outcome(expect = Expect.FORBIDDEN, desc = "Settled twice, never, or counted against its outcome.")
@State
public class SettleAbandonStress {
  private final CompletableFuture<Void> stage = new CompletableFuture<>();
  private final ConsumerCounters counters = new ConsumerCounters();
  private final AsyncBatchWriter<Object, Object> writer;
  private final CompletableFuture<Object> item = new CompletableFuture<>();
  private final BatchCompleter completer;

  public SettleAbandonStress() {
    HandOver handOver = new HandOver();
    completer = new BatchCompleter("stress", counters, new GuardedStatsRecorders("stress"), null,
        new LostFailureLog("stress"));
    writer = new AsyncBatchWriter<>("stress", 4, batch -> stage.thenRun(() -> batch.completeRemaining("written")),
        1, 1, Ticker.system(), handOver, completer, new FlushWaiters(), () -> { }, new SpinHint(), null);
    PendingBatch<Object, Object> batch = new PendingBatch<>(1, 4);
    batch.add("x", item, 0, 0, SubmissionSlot.NOT_STAMPED);
    writer.write(batch, 0);
  }

  @Actor
  public void completion() {
    stage.complete(null);
  }

  @Actor
  public void abandon(JJL_Result r) {
    Abandonment gathered = new Abandonment(); // as the close: settle and gather, then count, then tell
    writer.failInFlight("close timed out", gathered);
    counters.recordAbandoned(gathered.items());
    completer.tellAbandoned(gathered);
    r.r2 = gathered.items();
  }

  @Arbiter
  public void outcome(JJL_Result r) {
    r.r1 = counters.written();
    r.r3 = item.isCompletedExceptionally() ? "abandoned" : String.valueOf(item.getNow(null));
  }
}
