package dev.ringbatch.internal;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.LL_Result;

/**
 * A sink recording into a view it kept vs the batch being settled and reused ({@link PendingBatch},
 * {@link BatchView}). Invariant: a late outcome never lands in the next batch: either the late call is
 * refused, or it landed before the seal and the next view starts without it.
 */
@JCStressTest
@Outcome(id = {"refused, clean", "recorded, clean"}, expect = Expect.ACCEPTABLE,
    desc = "The stale view was refused, or recorded into its own batch before it was sealed.")
@Outcome(expect = Expect.FORBIDDEN, desc = "The late outcome leaked into the next batch.")
@State
public class StaleViewStress {
  private final PendingBatch<Object, Object> batch = new PendingBatch<>(1, 1);
  private final BatchView<Object, Object> stale;

  public StaleViewStress() {
    batch.add("item", null, 0, 0, SubmissionSlot.NOT_STAMPED);
    stale = batch.open("stress");
  }

  @Actor
  public void lateSink(LL_Result r) {
    try {
      stale.complete(0, "late");
      r.r1 = "recorded";
    } catch (IllegalStateException refused) {
      r.r1 = "refused";
    }
  }

  @Actor
  public void settleAndReuse() {
    batch.seal();
    batch.open("stress");
  }

  @Arbiter
  public void next(LL_Result r) {
    r.r2 = batch.outcome(0) == null && batch.outcomeState(0) == PendingBatch.NONE ? "clean" : "leaked";
  }
}
