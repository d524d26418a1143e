package dev.ringbatch.postgresql;

import dev.ringbatch.AsyncBatchSink;
import dev.ringbatch.Batch;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * Copies up to N batches at once for {@link dev.ringbatch.Batcher#ofAsync}, each with its own {@link PgCopySink}
 * on its own connection and thread, so that one batch is copied while another waits for its {@code COMMIT} (the
 * WAL flush). Every batch keeps the outcomes a {@link PgCopySink} gives; batches may complete out of order. Made by
 * {@link PgCopySink.Builder#buildOverlapping}; set the batcher's {@code maxInFlightBatches} to N.
 *
 * <p>The stage {@link #write} returns completes on a thread of its own, not on a copier: the callers' dependent
 * actions run there and may block, even {@code submitAndWait} into the same batcher, without holding up a copy.
 *
 * <p>A {@link dev.ringbatch.RetryPolicy} does not apply to an asynchronous sink: a batch whose copy fails as a
 * whole (a lost connection before the commit, a missing table) fails its items with that error, nothing of it
 * written.
 *
 * @param <T> the item type
 */
public final class OverlappingCopySink<T> implements AsyncBatchSink<T, Integer>, AutoCloseable {
  private static final Duration CLOSE_WAIT = Duration.ofSeconds(10);
  /** At most this many connections and copier threads: each holds a connection and a COPY buffer. */
  static final int MAX_CONNECTIONS = 256;

  private final BlockingQueue<PgCopySink<T>> idle;
  /** Every sink, for {@link #toString()}; only {@link #idle} ones may be closed. */
  private final List<PgCopySink<T>> sinks = new ArrayList<>();
  private final ExecutorService copiers;
  /** Completes the stages: dependent actions run here, never on a copier (they may wait for the next copy). */
  private final ExecutorService completers;

  OverlappingCopySink(Supplier<PgCopySink<T>> sink, int connections, String table) {
    CopyStatements.requireArgument(connections > 0 && connections <= MAX_CONNECTIONS,
        "connections must be between 1 and " + MAX_CONNECTIONS + " but was %s", connections);
    idle = new ArrayBlockingQueue<>(connections);
    for (int i = 0; i < connections; i++) {
      PgCopySink<T> s = sink.get();
      sinks.add(s);
      idle.add(s);
    }
    copiers = Executors.newFixedThreadPool(connections, daemons("ringbatch-copy-" + table + "-"));
    completers = Executors.newCachedThreadPool(daemons("ringbatch-copy-done-" + table + "-"));
  }

  private static ThreadFactory daemons(String prefix) {
    AtomicInteger number = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, prefix + number.getAndIncrement());
      t.setDaemon(true);
      return t;
    };
  }

  /**
   * Starts copying {@code batch} on a free copier thread; more batches than connections wait for one.
   *
   * @throws java.util.concurrent.RejectedExecutionException once the sink is closed (the batch fails with it)
   */
  @Override
  public CompletionStage<?> write(Batch<T, Integer> batch) {
    Copy copy = new Copy(batch);
    copiers.execute(copy);
    return copy.done;
  }

  /** One batch's copy: runs on a copier, completes its stage on a completer. */
  private final class Copy implements Runnable {
    final Batch<T, Integer> batch;
    final CompletableFuture<Void> done = new CompletableFuture<>();

    Copy(Batch<T, Integer> batch) {
      this.batch = batch;
    }

    @Override
    public void run() {
      Throwable failure = null;
      // At most `connections` copies run at once, and each gives its sink back before it ends: never empty.
      PgCopySink<T> sink = idle.remove();
      try {
        sink.write(batch);
      } catch (Throwable e) {
        failure = e;
      } finally {
        idle.add(sink);
      }
      settle(failure);
    }

    void settle(Throwable failure) {
      Runnable complete = failure == null ? () -> done.complete(null) : () -> done.completeExceptionally(failure);
      try {
        completers.execute(complete);
      } catch (RuntimeException rejected) { // closed meanwhile: complete here rather than never
        complete.run();
      }
    }
  }

  /**
   * Stops taking batches and waits up to 10 seconds for the copies in progress (close the batcher first: it waits
   * for its batches). Batches still waiting for a copier then fail, nothing of them written; a copy still running
   * keeps its connection and gives it back when it ends. An interrupt stops the wait, and is kept.
   */
  @Override
  public void close() {
    copiers.shutdown();
    boolean interrupted = false;
    try {
      copiers.awaitTermination(CLOSE_WAIT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      interrupted = true;
    }
    for (Runnable neverStarted : copiers.shutdownNow()) {
      if (neverStarted instanceof OverlappingCopySink<?>.Copy copy) {
        copy.settle(new IllegalStateException("the COPY sink was closed before this batch was copied: nothing of"
            + " it was written"));
      }
    }
    // Only the idle sinks: a copy still running uses its sink's connection, and gives it back to the pool itself
    // when it ends. Closing it from here would hand the pool a connection in use.
    for (PgCopySink<T> s; (s = idle.poll()) != null; ) {
      s.close();
    }
    completers.shutdown(); // completions already handed over still run
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public String toString() {
    return "OverlappingCopySink{connections=" + sinks.size() + ", " + sinks.get(0) + "}";
  }
}
