package dev.ringbatch.spring.boot;

import dev.ringbatch.AsyncBatchSink;
import dev.ringbatch.BatchSink;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * Tracks the sink writes in progress of every batcher the {@link BatcherFactory} creates: a
 * {@link BatchSinkDecorator} the starter always declares, whose {@link WritesInProgress} feed the health (the
 * age of the oldest write, {@code ringbatch.health.max-write-age}) and, with Micrometer, the long-task timer
 * {@code ringbatch.batch.write.active}. A write ends when the sink returns or throws; an asynchronous sink's
 * write ends when its stage completes, or at once if {@code write} threw or returned null. Thread-safe.
 */
public class WriteTracker implements BatchSinkDecorator {
  private final LongSupplier nanoTime;
  private final Map<String, WritesInProgress> byName = new ConcurrentHashMap<>();

  public WriteTracker() {
    this(System::nanoTime);
  }

  /** A tracker reading {@code nanoTime} for the writes' ages; for tests. */
  WriteTracker(LongSupplier nanoTime) {
    this.nanoTime = nanoTime;
  }

  @Override
  public <T, R> BatchSink<T, R> decorate(String name, BatchSink<T, R> sink) {
    WritesInProgress writes = writes(name, false);
    return batch -> {
      Runnable end = writes.begin();
      try {
        sink.write(batch);
      } finally {
        end.run();
      }
    };
  }

  @Override
  public <T, R> AsyncBatchSink<T, R> decorateAsync(String name, AsyncBatchSink<T, R> sink) {
    WritesInProgress writes = writes(name, true);
    return batch -> {
      Runnable end = writes.begin();
      CompletionStage<?> stage = null;
      try {
        stage = sink.write(batch);
      } finally {
        if (stage == null) {
          end.run(); // write threw anything (a sneaky Throwable too), or returned null: the core fails the batch
        }
      }
      stage.whenComplete((result, error) -> end.run());
      return stage;
    };
  }

  /** The writes of the batcher {@code name}, or null if the factory made no batcher of that name. */
  @Nullable WritesInProgress of(String name) {
    return byName.get(name);
  }

  /**
   * Forgets the writes of {@code name}, whose batcher its owner closed: a write of it still hanging ends
   * unseen, and a new batcher of that name starts with none. Called before the name is free again.
   */
  void forget(String name) {
    byName.remove(name);
  }

  /** The writes of {@code name}, shared by the shards of one batcher. */
  private WritesInProgress writes(String name, boolean async) {
    WritesInProgress writes = byName.computeIfAbsent(name, key -> new WritesInProgress(nanoTime));
    writes.async = async; // read when the batcher's meters are bound, right after this create decorates
    return writes;
  }
}
