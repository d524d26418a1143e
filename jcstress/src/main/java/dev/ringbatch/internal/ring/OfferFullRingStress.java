package dev.ringbatch.internal.ring;

import com.lmax.disruptor.BusySpinWaitStrategy;
import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import dev.ringbatch.internal.StressParts;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.ZZ_Result;

/**
 * Two offers race for the last free slot of a ring ({@link PublishGate#tryClaim}). Invariant: exactly one
 * gets it; the other is told the ring is full. Never both (an overwritten item) and never neither (a lost
 * slot).
 */
@JCStressTest
@Outcome(id = {"true, false", "false, true"}, expect = Expect.ACCEPTABLE, desc = "One offer took the slot, the other was refused.")
@Outcome(id = "true, true", expect = Expect.FORBIDDEN, desc = "Both took the one slot: an item would be overwritten.")
@Outcome(id = "false, false", expect = Expect.FORBIDDEN, desc = "Neither took the free slot.")
@State
public class OfferFullRingStress {
  private final RingBuffer<SubmissionSlot> ring;
  private final PublishGate gate;

  public OfferFullRingStress() {
    ring = SubmissionSlot.newRing(2, new BusySpinWaitStrategy());
    ring.addGatingSequences(new Sequence(-1)); // a consumer that never moves: two slots in all
    gate = StressParts.gate(ring);
    gate.publish(gate.tryClaim(), "first", null, 0, SubmissionSlot.NOT_STAMPED); // one slot left
  }

  @Actor
  public void offerA(ZZ_Result r) {
    long sequence = gate.tryClaim();
    r.r1 = sequence >= 0 && gate.publish(sequence, "a", null, 0, SubmissionSlot.NOT_STAMPED);
  }

  @Actor
  public void offerB(ZZ_Result r) {
    long sequence = gate.tryClaim();
    r.r2 = sequence >= 0 && gate.publish(sequence, "b", null, 0, SubmissionSlot.NOT_STAMPED);
  }
}
