package dev.ringbatch.spring.boot;

import dev.ringbatch.AsyncBatchSink;
import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;

/**
 * Wraps each sink given to the {@link BatcherFactory} before the batcher is built: what runs around every batch
 * write without a hook in the core. Beans of this type are applied in order, the first innermost. The starter
 * declares one for Micrometer observations ({@code ringbatch.observations.enabled}). The factory still closes
 * the sink it was given, not the wrapper.
 */
public interface BatchSinkDecorator {

  /** Returns {@code sink}, of the batcher {@code name}, wrapped; called once per sink (per shard). */
  <T, R> BatchSink<T, R> decorate(String name, BatchSink<T, R> sink);

  /** Returns the asynchronous {@code sink}, of the batcher {@code name}, wrapped. */
  <T, R> AsyncBatchSink<T, R> decorateAsync(String name, AsyncBatchSink<T, R> sink);

  /**
   * Returns the batcher {@code name}, built on the decorated sinks, wrapped: what must run on the callers'
   * threads (capturing their trace context, say). Its {@code close} must close {@code batcher}. The factory
   * registers, returns and closes what this returns. Returns {@code batcher} unchanged by default.
   */
  default <T, R> Batcher<T, R> decorate(String name, Batcher<T, R> batcher) {
    return batcher;
  }

  /**
   * Returns the configuration of the batcher {@code name} adjusted to what the decorator changes, after the
   * properties and the customizers: a decorator that changes what a sink throws adapts the retry policy's
   * {@code retryOn} to it. Returns {@code config} unchanged by default.
   */
  default BatcherConfig customize(String name, BatcherConfig config) {
    return config;
  }
}
