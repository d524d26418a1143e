package dev.ringbatch.internal.consume;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.ZZ_Result;

/**
 * The consumer leaving user code vs a close taking over ({@link HandOver}). Invariant: exactly one side owns
 * the holdings afterwards: the consumer (its {@code back()} succeeded, the close's take-over failed and it waits
 * for a yield) or the close (the consumer must stop, touching nothing).
 */
public class HandOverStress {

  /** Consumer returning from the sink vs close taking over. */
  @JCStressTest
  @Outcome(id = {"true, false", "false, true"}, expect = Expect.ACCEPTABLE, desc = "One side owns the holdings.")
  @Outcome(id = "true, true", expect = Expect.FORBIDDEN, desc = "Both own them: an item completed twice.")
  @Outcome(id = "false, false", expect = Expect.FORBIDDEN, desc = "Neither owns them: items left pending.")
  @State
  public static class BackVsTakeOver {
    private final HandOver handOver = new HandOver();

    public BackVsTakeOver() {
      handOver.callOut();
      handOver.requestAbandon();
    }

    @Actor
    public void consumer(ZZ_Result r) {
      r.r1 = handOver.back();
    }

    @Actor
    public void close(ZZ_Result r) {
      r.r2 = handOver.tryTakeOver();
    }
  }

  /** Consumer yielding at a checkpoint vs a close that gives up waiting for it. */
  @JCStressTest
  @Outcome(id = {"true, false", "false, true"}, expect = Expect.ACCEPTABLE,
      desc = "Yielded to the waiting close, or orphaned and cleaning up itself.")
  @Outcome(id = "true, true", expect = Expect.FORBIDDEN, desc = "Both think the other fails the holdings.")
  @Outcome(id = "false, false", expect = Expect.FORBIDDEN, desc = "Nobody fails the holdings.")
  @State
  public static class YieldVsOrphan {
    private final HandOver handOver = new HandOver();

    public YieldVsOrphan() {
      handOver.requestAbandon();
    }

    @Actor
    public void consumer(ZZ_Result r) {
      r.r1 = handOver.yieldToClose();
    }

    @Actor
    public void close(ZZ_Result r) {
      r.r2 = handOver.orphan();
    }
  }
}
