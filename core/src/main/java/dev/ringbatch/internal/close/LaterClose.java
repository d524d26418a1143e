package dev.ringbatch.internal.close;

import dev.ringbatch.CloseReport;
import dev.ringbatch.internal.shared.Checks;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * What a {@code close()} call that is not the first does, for a batcher and a sharded one alike: waits for the
 * first close's report up to its own timeout, an interrupt included (noted, and set again on return), or returns
 * what is known so far.
 */
public final class LaterClose {
  private LaterClose() {}

  /**
   * The report of {@code first} (the first close of batcher {@code name}) once out within {@code timeout}, else
   * {@code provisional}'s.
   */
  public static CloseReport await(String name, CompletableFuture<CloseReport> first, Duration timeout,
      Supplier<CloseReport> provisional) {
    long deadline = System.nanoTime() + Math.min(Checks.saturatedNanos(timeout), Long.MAX_VALUE / 4);
    boolean interrupted = false;
    try {
      while (true) {
        try {
          return first.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
          interrupted = true;
        } catch (TimeoutException stillClosing) {
          return provisional.get();
        } catch (ExecutionException failed) {
          throw new IllegalStateException("the first close() of batcher '" + name + "' failed", failed.getCause());
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
