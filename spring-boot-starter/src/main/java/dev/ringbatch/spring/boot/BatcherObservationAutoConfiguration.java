package dev.ringbatch.spring.boot;

import dev.ringbatch.micrometer.BatchWriteObservation;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.observation.ObservationRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;

/**
 * Observes every batch write of the batchers the {@link BatcherFactory} creates, as
 * {@value BatchWriteObservation#NAME}, when an {@link ObservationRegistry} exists. Off with
 * {@code ringbatch.observations.enabled=false}. Only sinks given to the factory are observed: a {@code Batcher}
 * built by hand can wrap its sink with {@link BatchWriteObservation}. The timers a meter observation handler
 * would make of it are denied: they would duplicate, and in Prometheus clash with, the batcher meters'
 * {@code ringbatch.batch.write}.
 */
@AutoConfiguration(before = BatcherAutoConfiguration.class,
    afterName = "org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration")
@ConditionalOnClass({ObservationRegistry.class, BatchWriteObservation.class})
@ConditionalOnBean(ObservationRegistry.class)
@ConditionalOnProperty(prefix = "ringbatch.observations", name = "enabled", havingValue = "true",
    matchIfMissing = true)
public class BatcherObservationAutoConfiguration {

  @Bean
  @ConditionalOnMissingBean
  public ObservingSinkDecorator ringbatchObservingSinkDecorator(ObservationRegistry registry) {
    return new ObservingSinkDecorator(registry);
  }

  /** Denies the observation's own timers: they would clash with the batcher meters' {@code ringbatch.batch.write}. */
  @Bean
  public MeterFilter ringbatchObservationMeterFilter() {
    return BatchWriteObservation.DUPLICATE_METERS;
  }
}
