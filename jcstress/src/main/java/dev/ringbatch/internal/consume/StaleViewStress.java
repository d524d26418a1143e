package dev.ringbatch.internal.consume;

import dev.ringbatch.internal.ring.SubmissionSlot;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.LLL_Result;

/**
 * A sink using a view it kept vs the batch being settled and reused for another caller's item ({@link PendingBatch},
 * {@link BatchView}): seal, clear, add the next item, open the next view. Invariants: a late outcome never lands
 * in the next batch (refused, or recorded into its own batch before the seal and cleared with it), and a late
 * read never returns the next caller's item (it returns its own, or is refused).
 */
@JCStressTest
@Outcome(id = {"refused, clean, mine", "recorded, clean, mine", "refused, clean, refused",
    "recorded, clean, refused"}, expect = Expect.ACCEPTABLE,
    desc = "The stale view was refused, or used its own batch before the reuse.")
@Outcome(expect = Expect.FORBIDDEN, desc = "The late outcome leaked into the next batch, or the late read saw it.")
@State
public class StaleViewStress {
  private final PendingBatch<Object, Object> batch = new PendingBatch<>(1, 1);
  private final ConsumerCounters counters = new ConsumerCounters();
  private final BatchView<Object, Object> stale;

  public StaleViewStress() {
    batch.add("mine", null, 0, 0, SubmissionSlot.NOT_STAMPED);
    batch.state.set(PendingBatch.IN_SINK);
    stale = batch.open("stress", counters);
  }

  @Actor
  public void lateSink(LLL_Result r) {
    try {
      stale.complete(0, "late");
      r.r1 = "recorded";
    } catch (IllegalStateException refused) {
      r.r1 = "refused";
    }
    try {
      r.r3 = stale.item(0);
    } catch (IllegalStateException refused) {
      r.r3 = "refused";
    }
  }

  @Actor
  public void settleAndReuse() {
    batch.seal();
    batch.clear();
    batch.add("next", null, 0, 1, SubmissionSlot.NOT_STAMPED);
    batch.state.set(PendingBatch.IN_SINK);
    batch.open("stress", counters);
  }

  @Arbiter
  public void next(LLL_Result r) {
    r.r2 = batch.outcome(0) == null && batch.outcomeState(0) == PendingBatch.NONE ? "clean" : "leaked";
  }
}
