package dev.ringbatch.sink;

import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * Runs blocking work (a named pipe's open, which waits for its other end; a write the test interrupts) on a daemon
 * thread of its own: the common pool may have a single worker, which one blocked task would take from the next.
 */
final class OwnThread {
  private OwnThread() {}

  static <V> CompletableFuture<V> supply(Supplier<V> work) {
    CompletableFuture<V> result = new CompletableFuture<>();
    Thread thread = new Thread(() -> {
      try {
        result.complete(work.get());
      } catch (Throwable t) {
        result.completeExceptionally(t);
      }
    }, "bytesink-test-helper");
    thread.setDaemon(true);
    thread.start();
    return result;
  }
}
