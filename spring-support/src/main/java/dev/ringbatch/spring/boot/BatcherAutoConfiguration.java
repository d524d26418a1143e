package dev.ringbatch.spring.boot;

import dev.ringbatch.Batcher;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;

/**
 * Auto-configures the {@link BatcherFactory} and the {@link BatcherLifecycle} that drains batchers on
 * shutdown. Off with {@code ringbatch.enabled=false}.
 */
@AutoConfiguration
@ConditionalOnClass(Batcher.class)
@ConditionalOnProperty(prefix = "ringbatch", name = "enabled", havingValue = "true", matchIfMissing = true)
@EnableConfigurationProperties(BatcherProperties.class)
public class BatcherAutoConfiguration {

  @Bean
  @ConditionalOnMissingBean
  public BatcherFactory batcherFactory(BatcherProperties properties,
      ObjectProvider<BatcherConfigCustomizer> customizers, ObjectProvider<BatchSinkDecorator> decorators,
      Environment environment) {
    SettingsKeyCheck.check(environment);
    return new BatcherFactory(properties, customizers.orderedStream().toList(),
        decorators.orderedStream().toList(), environment);
  }

  /** Tracks the sink writes in progress, for the health's write age and the write.active long-task timer. */
  @Bean
  @ConditionalOnMissingBean
  public WriteTracker ringbatchWriteTracker() {
    return new WriteTracker();
  }

  @Bean
  @ConditionalOnMissingBean
  public BatcherLifecycle batcherLifecycle(BatcherFactory factory, ObjectProvider<Batcher<?, ?>> batchers,
      BatcherProperties properties) {
    return new BatcherLifecycle(factory, batchers, properties.getShutdownTimeout());
  }
}
