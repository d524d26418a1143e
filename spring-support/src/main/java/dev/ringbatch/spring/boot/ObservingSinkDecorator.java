package dev.ringbatch.spring.boot;

import dev.ringbatch.AsyncBatchSink;
import dev.ringbatch.BatchSink;
import dev.ringbatch.micrometer.BatchWriteObservation;
import io.micrometer.observation.ObservationRegistry;

/** Observes each batch write as {@value BatchWriteObservation#NAME}: see {@link BatchWriteObservation}. */
public class ObservingSinkDecorator implements BatchSinkDecorator {
  private final ObservationRegistry registry;

  public ObservingSinkDecorator(ObservationRegistry registry) {
    this.registry = registry;
  }

  @Override
  public <T, R> BatchSink<T, R> decorate(String name, BatchSink<T, R> sink) {
    return BatchWriteObservation.observe(registry, name, sink);
  }

  @Override
  public <T, R> AsyncBatchSink<T, R> decorateAsync(String name, AsyncBatchSink<T, R> sink) {
    return BatchWriteObservation.observeAsync(registry, name, sink);
  }
}
