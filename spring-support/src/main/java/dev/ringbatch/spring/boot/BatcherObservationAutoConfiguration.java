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
 * {@code ringbatch.batch.write} and {@code ringbatch.batch.write.active}.
 */
@AutoConfiguration(before = BatcherAutoConfiguration.class,
    afterName = { // Boot 4's, then Boot 3's
        "org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration",
        "org.springframework.boot.actuate.autoconfigure.observation.ObservationAutoConfiguration"})
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

  /**
   * Denies the observation's own timers: {@code ringbatch.batch.write} with an {@code error} tag, and
   * {@code ringbatch.batch.write.active} without the {@code sink} tag of the starter's own long-task timer
   * (see {@link BatcherMeterBinder#WRITE_ACTIVE}). Not {@link BatchWriteObservation#DUPLICATE_METERS}, which
   * denies every {@code .active} meter and so the starter's too. The two long-task timers cannot share one id:
   * Micrometer would hand the handler the starter's timer, and each write would count twice.
   */
  @Bean
  public MeterFilter ringbatchObservationMeterFilter() {
    return MeterFilter.deny(id -> id.getName().equals(BatchWriteObservation.NAME) && id.getTag("error") != null
        || id.getName().equals(BatcherMeterBinder.WRITE_ACTIVE) && id.getTag("sink") == null);
  }
}
