package dev.ringbatch.internal.ring;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.ZZ_Result;

/**
 * A caller about to park on an {@link ItemFuture} vs the batch completer completing it ({@code completeFor}, then
 * a look for a waiter). Invariant: no wake-up is lost: the caller, after registering, sees the future done, or the
 * completer sees the caller registered (and wakes it), or both. Neither would leave the caller parked on a done
 * future. r1: the caller saw it done; r2: the completer saw the caller.
 */
@JCStressTest
@Outcome(id = "true, true", expect = Expect.ACCEPTABLE, desc = "Both saw the other: one redundant wake.")
@Outcome(id = "true, false", expect = Expect.ACCEPTABLE, desc = "The caller saw the result: it does not park.")
@Outcome(id = "false, true", expect = Expect.ACCEPTABLE, desc = "The completer saw the caller: it wakes it.")
@Outcome(id = "false, false", expect = Expect.FORBIDDEN, desc = "A caller parked on a done future, never woken.")
@State
public class ItemFutureWakeStress {
  private final ItemFuture<Integer> future = new ItemFuture<>();

  @Actor
  public void caller(ZZ_Result r) {
    future.register(Thread.currentThread());
    r.r1 = future.isDone();
  }

  @Actor
  public void completer(ZZ_Result r) {
    r.r2 = future.completeFor(1);
  }
}
