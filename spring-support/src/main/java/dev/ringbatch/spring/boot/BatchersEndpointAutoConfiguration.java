package dev.ringbatch.spring.boot;

import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * The {@link BatchersEndpoint}, when Actuator is present and the endpoint is available (exposed and not
 * turned off with {@code management.endpoint.batchers.access=none}).
 */
@AutoConfiguration(after = BatcherAutoConfiguration.class)
@ConditionalOnClass({Endpoint.class, ConditionalOnAvailableEndpoint.class})
@ConditionalOnBean(BatcherLifecycle.class)
@ConditionalOnAvailableEndpoint(BatchersEndpoint.class)
public class BatchersEndpointAutoConfiguration {

  @Bean
  @ConditionalOnMissingBean
  public BatchersEndpoint batchersEndpoint(BatcherLifecycle lifecycle) {
    return new BatchersEndpoint(lifecycle);
  }
}
