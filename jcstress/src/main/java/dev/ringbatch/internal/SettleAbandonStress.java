package dev.ringbatch.internal;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.ZZ_Result;

/**
 * An async batch's completion vs an abandoning close ({@link PendingBatch#state}). Invariant: exactly one of
 * them settles the batch, so its futures complete once and it is counted once, as written or as abandoned.
 */
@JCStressTest
@Outcome(id = {"true, false", "false, true"}, expect = Expect.ACCEPTABLE, desc = "One side settled the batch.")
@Outcome(id = "true, true", expect = Expect.FORBIDDEN, desc = "Both settled it: counted twice.")
@Outcome(id = "false, false", expect = Expect.FORBIDDEN, desc = "Neither settled it: futures left pending.")
@State
public class SettleAbandonStress {
  private final PendingBatch<Object, Object> batch = new PendingBatch<>(1, 1);

  public SettleAbandonStress() {
    batch.state.set(PendingBatch.IN_FLIGHT);
  }

  @Actor
  public void completion(ZZ_Result r) {
    r.r1 = batch.state.compareAndSet(PendingBatch.IN_FLIGHT, PendingBatch.SETTLED);
  }

  @Actor
  public void abandon(ZZ_Result r) {
    r.r2 = batch.state.compareAndSet(PendingBatch.IN_FLIGHT, PendingBatch.SETTLED);
  }
}
