package dev.ringbatch.spring.boot;

import dev.ringbatch.BatchLimits;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.BatcherStats;
import dev.ringbatch.CloseReport;
import dev.ringbatch.stats.StatsRecorder;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;

/**
 * A factory's batcher that notes each waiting caller's trace context while its item is pending
 * ({@link CallerTraceContexts}); everything else is the batcher's.
 */
final class TraceNotingBatcher<T, R> implements Batcher<T, R> {
  private final Batcher<T, R> batcher;
  private final CallerTraceContexts contexts;

  TraceNotingBatcher(Batcher<T, R> batcher, CallerTraceContexts contexts) {
    this.batcher = batcher;
    this.contexts = contexts;
  }

  @Override
  public CompletableFuture<R> submit(T item) {
    CallerTraceContexts.@Nullable Noted noted = contexts.note(item);
    if (noted == null) {
      return batcher.submit(item);
    }
    CompletableFuture<R> future;
    try {
      future = batcher.submit(item);
    } catch (RuntimeException | Error e) {
      contexts.forget(noted);
      throw e;
    }
    // The caller's future, not this dependent one, is returned: the caller's own callbacks run as before.
    future.whenComplete((result, error) -> contexts.forget(noted));
    return future;
  }

  @Override
  public R submitAndWait(T item) throws InterruptedException {
    CallerTraceContexts.@Nullable Noted noted = contexts.note(item);
    try {
      return batcher.submitAndWait(item);
    } finally {
      contexts.forget(noted);
    }
  }

  @Override
  public R submitAndWait(T item, Duration timeout) throws InterruptedException, TimeoutException {
    CallerTraceContexts.@Nullable Noted noted = contexts.note(item);
    try {
      return batcher.submitAndWait(item, timeout);
    } finally {
      contexts.forget(noted);
    }
  }

  @Override
  public boolean offer(T item) {
    return batcher.offer(item);
  }

  @Override
  public String name() {
    return batcher.name();
  }

  @Override
  public BatcherConfig config() {
    return batcher.config();
  }

  @Override
  public CompletableFuture<Void> flush() {
    return batcher.flush();
  }

  @Override
  public BatchLimits limits() {
    return batcher.limits();
  }

  @Override
  public void setLimits(BatchLimits limits) {
    batcher.setLimits(limits);
  }

  @Override
  public BatcherStats stats() {
    return batcher.stats();
  }

  @Override
  public List<BatcherStats> shardStats() {
    return batcher.shardStats();
  }

  @Override
  public void addStatsRecorder(StatsRecorder recorder) {
    batcher.addStatsRecorder(recorder);
  }

  @Override
  public boolean removeStatsRecorder(StatsRecorder recorder) {
    return batcher.removeStatsRecorder(recorder);
  }

  @Override
  public boolean isClosed() {
    return batcher.isClosed();
  }

  @Override
  public void close() {
    batcher.close();
  }

  @Override
  public CloseReport close(Duration timeout) {
    return batcher.close(timeout);
  }

  @Override
  public @Nullable CloseReport closeReport() {
    return batcher.closeReport();
  }

  @Override
  public String toString() {
    return batcher.toString();
  }
}
