package dev.ringbatch.internal.ring;

import dev.ringbatch.BatchWriteException;
import dev.ringbatch.BatcherClosedException;
import dev.ringbatch.BatcherFullException;
import dev.ringbatch.RejectionReason;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The blocking call on top of a caller's future ({@code submitAndWait}): waits for the caller's own item and turns
 * its outcome into what the call returns or throws. The batcher's own refusals (full, closed, interrupted while
 * waiting for room) are thrown as themselves; anything the sink failed the item with is a
 * {@link BatchWriteException}, whatever its type.
 */
public final class CallerWait {
  private CallerWait() {}

  /** Loads this class, so that a virtual thread's first wait loads nothing (see ItemFuture.preloadWaitingPath). */
  static void load() {}

  /** Waits for {@code future} (at most {@code nanos}, or without bound if negative) and unwraps its failure. */
  public static <R> R outcome(String name, CompletableFuture<R> future, long nanos, Duration timeout)
      throws InterruptedException, TimeoutException {
    try {
      if (nanos < 0) {
        return future.get();
      }
      try {
        return future.get(nanos, TimeUnit.NANOSECONDS);
      } catch (TimeoutException e) {
        TimeoutException timedOut = new TimeoutException("batcher '" + name + "' gave no result for the item within"
            + " " + timeout + "; the item was accepted and is still written or failed exactly once, and counted in"
            + " stats()");
        timedOut.initCause(e);
        throw timedOut;
      }
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof BatcherFullException full) {
        if (full.reason() == RejectionReason.INTERRUPTED) {
          Thread.interrupted(); // InterruptedException is the signal now, as the JDK's blocking calls do
          InterruptedException interrupted = new InterruptedException(full.getMessage());
          interrupted.initCause(full);
          throw interrupted;
        }
        throw full;
      }
      if (cause instanceof BatcherClosedException closed) {
        throw closed;
      }
      if (cause instanceof BatchWriteException alreadyWrapped) {
        throw alreadyWrapped; // this batcher's: BatchCompleter.sinkFailure wraps a sink's own (and a cancellation)
      }
      throw new BatchWriteException(name, cause);
    }
  }
}
