package dev.ringbatch.spring.boot;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.health.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.actuate.health.HealthIndicator;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * The {@code ringbatch} health contributor, when Spring Boot 3's health support is present. Off with
 * {@code management.health.ringbatch.enabled=false}.
 */
@AutoConfiguration(after = BatcherAutoConfiguration.class)
@ConditionalOnClass(HealthIndicator.class)
@ConditionalOnBean(BatcherFactory.class)
@ConditionalOnEnabledHealthIndicator("ringbatch")
public class BatcherHealthContributorAutoConfiguration {

  @Bean
  @ConditionalOnMissingBean(name = "ringbatchHealthIndicator")
  public BatcherHealthIndicator ringbatchHealthIndicator(BatcherFactory factory, BatcherLifecycle lifecycle,
      BatcherProperties properties, ObjectProvider<WriteTracker> writes) {
    return new BatcherHealthIndicator(factory, lifecycle, properties.getHealth(), writes.getIfAvailable());
  }
}
