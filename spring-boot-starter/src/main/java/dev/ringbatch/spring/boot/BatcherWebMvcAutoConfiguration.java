package dev.ringbatch.spring.boot;

import dev.ringbatch.Batcher;
import java.time.Duration;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.context.annotation.Bean;
import org.springframework.http.ProblemDetail;
import org.springframework.web.servlet.DispatcherServlet;

/**
 * Maps batcher refusals to {@code 503} in a servlet web application with Spring MVC, through a
 * {@link BatcherOverloadExceptionHandler}. Opt-in: {@code ringbatch.web.overload-mapping.enabled=true}, because
 * it changes what clients of every controller see.
 */
@AutoConfiguration(after = BatcherAutoConfiguration.class)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnClass({Batcher.class, DispatcherServlet.class, ProblemDetail.class})
@ConditionalOnProperty(prefix = "ringbatch.web.overload-mapping", name = "enabled", havingValue = "true")
@EnableConfigurationProperties(BatcherProperties.class)
public class BatcherWebMvcAutoConfiguration {

  /** @throws InvalidConfigurationPropertyValueException if {@code retry-after} is negative */
  @Bean
  @ConditionalOnMissingBean
  public BatcherOverloadExceptionHandler batcherOverloadExceptionHandler(BatcherProperties properties) {
    Duration retryAfter = properties.getWeb().getOverloadMapping().getRetryAfter();
    if (retryAfter.isNegative()) {
      throw new InvalidConfigurationPropertyValueException("ringbatch.web.overload-mapping.retry-after",
          retryAfter, "retry-after must not be negative but was " + retryAfter);
    }
    return new BatcherOverloadExceptionHandler(retryAfter);
  }
}
