package dev.ringbatch.internal.consume;

import java.util.concurrent.CompletableFuture;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.Z_Result;

/**
 * {@code flush()} vs the consumer finishing the sequence it waits for ({@link FlushWaiters}). Invariant: the
 * flush future completes, whichever runs first: the waiter registers and re-reads the finished sequence, the
 * consumer writes it and then looks for waiters. A flush left pending is the bug this protects against.
 */
@JCStressTest
@Outcome(id = "true", expect = Expect.ACCEPTABLE, desc = "The flush completed.")
@Outcome(id = "false", expect = Expect.FORBIDDEN, desc = "A flush left pending after its target finished.")
@State
public class FlushFinishStress {
  private final FlushWaiters waiters = new FlushWaiters();
  private CompletableFuture<Void> flush;

  @Actor
  public void flusher() {
    flush = waiters.await(0, () -> { });
  }

  @Actor
  public void consumer() {
    waiters.advance(0);
  }

  @Arbiter
  public void done(Z_Result r) {
    r.r1 = flush.isDone();
  }
}
