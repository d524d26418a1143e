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
import org.springframework.context.annotation.Configuration;
import org.springframework.http.ProblemDetail;
import org.springframework.web.servlet.DispatcherServlet;

/**
 * Maps batcher failures to HTTP in a servlet web application with Spring MVC: refusals (full, closed) to
 * {@code 503} through a {@link BatcherOverloadExceptionHandler} ({@code ringbatch.web.overload-mapping.enabled}),
 * a duplicate key to {@code 409} and another constraint to {@code 422} through a
 * {@link BatcherDataAccessExceptionHandler} ({@code ringbatch.web.data-access-mapping.enabled}, with Spring's
 * {@code DataAccessException} on the class path). Both opt-in, because they change what clients of every
 * controller see.
 */
@AutoConfiguration(after = BatcherAutoConfiguration.class)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnClass({Batcher.class, DispatcherServlet.class, ProblemDetail.class})
@EnableConfigurationProperties(BatcherProperties.class)
public class BatcherWebMvcAutoConfiguration {

  /** @throws InvalidConfigurationPropertyValueException if {@code retry-after} is negative */
  @Bean
  @ConditionalOnMissingBean
  @ConditionalOnProperty(prefix = "ringbatch.web.overload-mapping", name = "enabled", havingValue = "true")
  public BatcherOverloadExceptionHandler batcherOverloadExceptionHandler(BatcherProperties properties) {
    Duration retryAfter = properties.getWeb().getOverloadMapping().getRetryAfter();
    if (retryAfter.isNegative()) {
      throw new InvalidConfigurationPropertyValueException("ringbatch.web.overload-mapping.retry-after",
          retryAfter, "retry-after must not be negative but was " + retryAfter);
    }
    return new BatcherOverloadExceptionHandler(retryAfter);
  }

  /** The data access mapping, only where Spring's {@code DataAccessException} is. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.dao.DataIntegrityViolationException")
  @ConditionalOnProperty(prefix = "ringbatch.web.data-access-mapping", name = "enabled", havingValue = "true")
  static class DataAccessMapping {

    @Bean
    @ConditionalOnMissingBean
    BatcherDataAccessExceptionHandler batcherDataAccessExceptionHandler() {
      return new BatcherDataAccessExceptionHandler();
    }
  }
}
