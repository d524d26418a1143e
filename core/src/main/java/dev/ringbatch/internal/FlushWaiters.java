package dev.ringbatch.internal;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.jspecify.annotations.Nullable;

/**
 * The futures of pending {@code flush()} calls, each waiting for the consumer to finish every sequence up
 * to the ring cursor it saw. Thread-safe: any thread registers; the consumer completes them as it finishes
 * batches, and so does a caller that finds its target already reached (completion is idempotent).
 */
final class FlushWaiters {

  private record Waiter(long sequence, CompletableFuture<Void> future) {}

  private final ConcurrentLinkedQueue<Waiter> waiters = new ConcurrentLinkedQueue<>();

  /** Registers a future to complete once every sequence up to {@code sequence} is finished. */
  void register(long sequence, CompletableFuture<Void> future) {
    waiters.add(new Waiter(sequence, future));
  }

  boolean isEmpty() {
    return waiters.isEmpty();
  }

  /** Completes and removes every waiter whose sequence is at most {@code finished}. */
  void completeUpTo(long finished) {
    waiters.removeIf(waiter -> {
      if (waiter.sequence() <= finished) {
        waiter.future().complete(null);
        return true;
      }
      return false;
    });
  }

  /** Completes every waiter, normally or, when {@code failure} is given, exceptionally. */
  void completeAll(@Nullable Throwable failure) {
    Waiter waiter;
    while ((waiter = waiters.poll()) != null) {
      if (failure == null) {
        waiter.future().complete(null);
      } else {
        waiter.future().completeExceptionally(failure);
      }
    }
  }
}
