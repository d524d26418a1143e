package dev.ringbatch.internal.consume;

import dev.ringbatch.BatchLimits;
import java.time.Duration;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.JJ_Result;

/**
 * Runtime reconfiguration vs the consumer ({@link ConsumerLimits#set}, as {@code setLimits} calls it, against
 * {@link ConsumerLimits#forRun}, as the consumer reads it). Invariant: the consumer reads either the old limits
 * or the new ones as a whole, never the item limit of one with the byte limit of the other: {@code set}
 * publishes one immutable {@link BatchLimits} through a volatile field.
 */
@JCStressTest
@Outcome(id = "256, 9223372036854775807", expect = Expect.ACCEPTABLE, desc = "The consumer read the old limits.")
@Outcome(id = "8, 4096", expect = Expect.ACCEPTABLE, desc = "The consumer read the new limits.")
@Outcome(expect = Expect.FORBIDDEN, desc = "A mix of old and new limits.")
@State
public class LimitsSwapStress {
  private static final BatchLimits NEW = BatchLimits.of(8, 4096, Duration.ofMillis(1));

  private final ConsumerLimits limits = new ConsumerLimits(BatchLimits.ofDefaults(), null);

  @Actor
  public void reconfigure() {
    limits.set(NEW);
  }

  @Actor
  public void consume(JJ_Result r) {
    BatchLimits seen = limits.forRun();
    r.r1 = seen.maxBatchSize();
    r.r2 = seen.maxBatchBytes();
  }
}
