package dev.ringbatch.spring.boot;

import dev.ringbatch.Batcher;
import dev.ringbatch.micrometer.BatcherMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;

/**
 * Binds the meters of every batcher (the {@link BatcherFactory}'s and every {@link Batcher} bean) when a
 * {@link MeterRegistry} exists. Off with {@code ringbatch.metrics.enabled=false}.
 */
@AutoConfiguration(after = BatcherAutoConfiguration.class,
    afterName = {
        "org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
        "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
        "org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration"})
@ConditionalOnClass({MeterRegistry.class, BatcherMetrics.class})
@ConditionalOnBean({MeterRegistry.class, BatcherFactory.class})
@ConditionalOnProperty(prefix = "ringbatch.metrics", name = "enabled", havingValue = "true", matchIfMissing = true)
public class BatcherMetricsAutoConfiguration {

  @Bean
  public MeterBinder ringbatchMeterBinder(BatcherLifecycle lifecycle) {
    return registry -> lifecycle.batchers().forEach(b -> new BatcherMetrics(b, Tags.empty()).bindTo(registry));
  }
}
