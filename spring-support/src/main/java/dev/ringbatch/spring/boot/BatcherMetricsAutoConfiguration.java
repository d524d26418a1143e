package dev.ringbatch.spring.boot;

import dev.ringbatch.Batcher;
import dev.ringbatch.micrometer.BatcherMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;

/**
 * Binds the meters of every batcher (every one the {@link BatcherFactory} creates, whenever, and every
 * {@link Batcher} bean) when a {@link MeterRegistry} exists, through a {@link BatcherMeterBinder}. Off with {@code ringbatch.metrics.enabled=false}.
 */
@AutoConfiguration(after = BatcherAutoConfiguration.class,
    afterName = { // Boot 4's, then Boot 3's: the names of the other Boot match no class and are ignored
        "org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
        "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
        "org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration",
        "org.springframework.boot.actuate.autoconfigure.metrics.MetricsAutoConfiguration",
        "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration",
        "org.springframework.boot.actuate.autoconfigure.metrics.export.simple.SimpleMetricsExportAutoConfiguration"})
@ConditionalOnClass({MeterRegistry.class, BatcherMetrics.class})
@ConditionalOnBean({MeterRegistry.class, BatcherFactory.class})
@ConditionalOnProperty(prefix = "ringbatch.metrics", name = "enabled", havingValue = "true", matchIfMissing = true)
public class BatcherMetricsAutoConfiguration {

  @Bean
  @ConditionalOnMissingBean
  public BatcherMeterBinder ringbatchMeterBinder(BatcherFactory factory, ObjectProvider<Batcher<?, ?>> batchers,
      BatcherProperties properties, ObjectProvider<WriteTracker> writes) {
    return new BatcherMeterBinder(factory, batchers, properties.getMetrics().isItemWaits(), writes.getIfAvailable());
  }
}
