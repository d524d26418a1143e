package dev.ringbatch.internal.consume;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * The finished sequence and the futures of pending {@code flush()} calls, each waiting for every sequence up
 * to the ring cursor it saw to be finished. Thread-safe: any thread {@linkplain #await awaits}; the consumer
 * (or an async completion) {@linkplain #advance advances}.
 *
 * <p>No waiter is missed: {@code await} registers (a CAS in the queue) and then re-reads {@code finished};
 * {@code advance} writes {@code finished} (volatile) and then reads whether the queue is empty. Of two
 * store-then-load pairs on volatiles, at least one sees the other's store, so either {@code advance} sees
 * the waiter or {@code await} sees the new sequence. jcstress {@code FlushFinishStress} checks it.
 */
public final class FlushWaiters {

  private record Waiter(long sequence, CompletableFuture<Void> future) {}

  private final ConcurrentLinkedQueue<Waiter> waiters = new ConcurrentLinkedQueue<>();
  private final AtomicLong finished = new AtomicLong(-1);
  /** The highest sequence any flush has waited for: the consumer ends a linger only for a batch at or below it. */
  private final AtomicLong maxTarget = new AtomicLong(-1);

  /** Every sequence up to this one has its final outcome. */
  long finished() {
    return finished.get();
  }

  /** The highest sequence a flush has asked for; a batch whose first item is above it need not be cut short. */
  long maxTarget() {
    return maxTarget.get();
  }

  /** Records that every sequence up to {@code sequence} is finished, and completes the waiters it satisfies. */
  void advance(long sequence) {
    if (finish(sequence)) {
      completeFinished();
    }
  }

  /**
   * Records that every sequence up to {@code sequence} is finished, without completing anybody: completing a
   * flush runs its dependent actions, user code. Returns whether waiters may need {@link #completeFinished()}.
   */
  boolean finish(long sequence) {
    finished.accumulateAndGet(sequence, Math::max); // async batches settle on several threads
    return !waiters.isEmpty();
  }

  /** Completes the waiters satisfied by the finished sequence. */
  void completeFinished() {
    completeUpTo(finished.get());
  }

  /**
   * Returns a future that completes once every sequence up to {@code target} is finished, running
   * {@code wake} (to cut a linger short) when it has to wait.
   */
  public CompletableFuture<Void> await(long target, Runnable wake) {
    if (finished.get() >= target) {
      return CompletableFuture.completedFuture(null);
    }
    CompletableFuture<Void> future = new CompletableFuture<>();
    register(target, future);
    maxTarget.accumulateAndGet(target, Math::max);
    wake.run();
    long now = finished.get(); // re-read after registering: an advance may have run before it could see the waiter
    if (now >= target) {
      completeUpTo(now);
    }
    return future;
  }

  /** Registers a future to complete once every sequence up to {@code sequence} is finished. */
  void register(long sequence, CompletableFuture<Void> future) {
    waiters.add(new Waiter(sequence, future));
  }

  public boolean isEmpty() {
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
  public void completeAll(@Nullable Throwable failure) {
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
