package dev.ringbatch.internal.consume;

import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import dev.ringbatch.WaitMode;
import dev.ringbatch.internal.StressParts;
import dev.ringbatch.internal.pacing.SelfClock;
import dev.ringbatch.internal.ring.SubmissionSlot;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.ZZ_Result;

/**
 * The consumer about to park in a gather for one item ({@link ConsumerWaitStrategy#mayPark}) vs the producer whose
 * publish reaches the gather's target ({@code signalAllWhenBlocking}). Invariant: no wake-up is lost: the consumer
 * sees the target reached (and does not park), or the producer sees it announced and takes the wake (its CAS clears
 * {@code parked}), or both. r1: the consumer saw the target reached; r2: the announcement is still unwoken at the end.
 */
@JCStressTest
@Outcome(id = "true, false", expect = Expect.ACCEPTABLE, desc = "Both saw the other: the consumer does not park.")
@Outcome(id = "true, true", expect = Expect.ACCEPTABLE, desc = "The consumer saw the item: it does not park.")
@Outcome(id = "false, false", expect = Expect.ACCEPTABLE, desc = "The producer took the wake: it unparks the consumer.")
@Outcome(id = "false, true", expect = Expect.FORBIDDEN, desc = "The consumer parks, and nobody wakes it.")
@State
public class GatherWakeStress {
  private final ConsumerWaitStrategy wait = new ConsumerWaitStrategy(WaitMode.BLOCKING, new SelfClock());
  private final RingBuffer<SubmissionSlot> ring = SubmissionSlot.newRing(4, wait);
  private final Sequence cursor;

  public GatherWakeStress() {
    cursor = StressParts.cursor(ring);
    wait.bindCursor(cursor);
    wait.gather(-1, 1, Long.MAX_VALUE / 4); // the next item, sequence 0, is the target
  }

  @Actor
  public void consumer(ZZ_Result r) {
    r.r1 = !wait.mayPark(cursor, 0);
  }

  @Actor
  public void producer() {
    ring.publish(ring.next());
  }

  @Arbiter
  public void after(ZZ_Result r) {
    r.r2 = wait.parkedUnwoken();
  }
}
