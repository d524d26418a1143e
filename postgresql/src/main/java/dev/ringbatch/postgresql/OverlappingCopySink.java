package dev.ringbatch.postgresql;

import dev.ringbatch.AsyncBatchSink;
import dev.ringbatch.Batch;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * Copies up to N batches at once for {@link dev.ringbatch.Batcher#ofAsync}, each with its own {@link PgCopySink}
 * on its own connection and thread, so that one batch is copied while another waits for its {@code COMMIT} (the
 * WAL flush). Every batch keeps the outcomes a {@link PgCopySink} gives; batches may complete out of order. Made by
 * {@link PgCopySink.Builder#buildOverlapping}; set the batcher's {@code maxInFlightBatches} to N.
 *
 * <p>A {@link dev.ringbatch.RetryPolicy} does not apply to an asynchronous sink: a batch whose copy fails as a
 * whole (a lost connection before the commit, a missing table) fails its items with that error, nothing of it
 * written.
 *
 * @param <T> the item type
 */
public final class OverlappingCopySink<T> implements AsyncBatchSink<T, Integer>, AutoCloseable {
  private static final Duration CLOSE_WAIT = Duration.ofSeconds(10);

  private final BlockingQueue<PgCopySink<T>> idle;
  /** Every sink, for {@link #toString()}; only {@link #idle} ones may be closed. */
  private final List<PgCopySink<T>> sinks = new ArrayList<>();
  private final ExecutorService copiers;

  OverlappingCopySink(Supplier<PgCopySink<T>> sink, int connections, String table) {
    CopyStatements.requireArgument(connections > 0, "connections must be positive but was %s", connections);
    idle = new ArrayBlockingQueue<>(connections);
    for (int i = 0; i < connections; i++) {
      PgCopySink<T> s = sink.get();
      sinks.add(s);
      idle.add(s);
    }
    AtomicInteger number = new AtomicInteger();
    copiers = Executors.newFixedThreadPool(connections, r -> {
      Thread t = new Thread(r, "ringbatch-copy-" + table + "-" + number.getAndIncrement());
      t.setDaemon(true);
      return t;
    });
  }

  /**
   * Starts copying {@code batch} on a free copier thread; more batches than connections wait for one.
   *
   * @throws java.util.concurrent.RejectedExecutionException once the sink is closed (the batch fails with it)
   */
  @Override
  public CompletionStage<?> write(Batch<T, Integer> batch) {
    return CompletableFuture.runAsync(() -> {
      // At most `connections` tasks run at once, and each gives its sink back before it ends: never empty.
      PgCopySink<T> sink = idle.remove();
      try {
        sink.write(batch);
      } catch (Exception e) {
        throw new CompletionException(e);
      } finally {
        idle.add(sink);
      }
    }, copiers);
  }

  /**
   * Stops taking batches and waits up to 10 seconds for the copies in progress (close the batcher first: it waits
   * for its batches), then gives back any connection a copy left behind. An interrupt stops the wait, and is kept.
   */
  @Override
  public void close() {
    copiers.shutdown();
    boolean interrupted = false;
    try {
      if (!copiers.awaitTermination(CLOSE_WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
        copiers.shutdownNow();
      }
    } catch (InterruptedException e) {
      interrupted = true;
      copiers.shutdownNow();
    }
    // Only the idle sinks: a copy still running (past the wait) uses its sink's connection, and gives it back to
    // the pool itself when it ends. Closing it from here would hand the pool a connection in use.
    for (PgCopySink<T> s; (s = idle.poll()) != null; ) {
      s.close();
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public String toString() {
    return "OverlappingCopySink{connections=" + sinks.size() + ", " + sinks.get(0) + "}";
  }
}
