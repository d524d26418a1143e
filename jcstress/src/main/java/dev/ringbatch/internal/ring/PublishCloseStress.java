package dev.ringbatch.internal.ring;

import com.lmax.disruptor.BusySpinWaitStrategy;
import com.lmax.disruptor.RingBuffer;
import dev.ringbatch.internal.StressParts;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.LL_Result;

/**
 * Submit vs close ({@link PublishGate}). Invariant: an item published as accepted lies before the close
 * marker, so the consumer (which writes everything before the marker, then stops) writes it; an item after
 * the marker is a tombstone, refused by its own producer. Never both accepted and after the marker, and the
 * producer's answer always agrees with what it published.
 */
@JCStressTest
@Outcome(id = "accepted, ITEM before CLOSE", expect = Expect.ACCEPTABLE,
    desc = "The producer claimed and read the state before close began: accepted and written before the marker.")
@Outcome(id = "refused, TOMBSTONE before CLOSE", expect = Expect.ACCEPTABLE,
    desc = "The producer claimed first but read the closing state: it refused its own item.")
@Outcome(id = "refused, CLOSE before TOMBSTONE", expect = Expect.ACCEPTABLE,
    desc = "Close claimed first; the producer's later claim read the closing state: refused.")
@Outcome(id = "accepted, CLOSE before ITEM", expect = Expect.FORBIDDEN,
    desc = "An accepted item after the marker: the consumer would stop before it and never write it.")
@Outcome(expect = Expect.FORBIDDEN, desc = "The producer's answer disagrees with what it published.")
@State
public class PublishCloseStress {
  private final RingBuffer<SubmissionSlot> ring =
      SubmissionSlot.newRing(4, new BusySpinWaitStrategy());
  private final PublishGate gate = StressParts.gate(ring);

  @Actor
  public void producer(LL_Result r) {
    long sequence = gate.tryClaim();
    r.r1 = gate.publish(sequence, "item", null, 0, SubmissionSlot.NOT_STAMPED) ? "accepted" : "refused";
  }

  @Actor
  public void closer() {
    gate.beginClose();
    long sequence = gate.tryClaim(); // a ring of 4: always room for the marker
    gate.publishCloseMarker(sequence);
  }

  @Arbiter
  public void order(LL_Result r) {
    String first = kind(ring.get(0).kind);
    String second = kind(ring.get(1).kind);
    r.r2 = first + " before " + second;
  }

  private static String kind(byte kind) {
    switch (kind) {
      case SubmissionSlot.ITEM:
        return "ITEM";
      case SubmissionSlot.TOMBSTONE:
        return "TOMBSTONE";
      case SubmissionSlot.CLOSE:
        return "CLOSE";
      default:
        return "EMPTY";
    }
  }
}
