package dev.ringbatch.spring.boot;

import dev.ringbatch.micrometer.BatchWriteObservation;
import io.micrometer.tracing.Tracer;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.core.annotation.Order;

/**
 * Links each batch write's span to the spans of the callers whose items it carries, when Micrometer Tracing has
 * a {@link Tracer}: {@link CallerTraceContexts} notes the waiting callers' trace contexts, and
 * {@link BatchLinkingTracingObservationHandler} starts the batch's span with links to them. Off with
 * {@code ringbatch.observations.enabled=false}, as the batch observations are.
 */
@AutoConfiguration(before = BatcherAutoConfiguration.class,
    afterName = { // Boot 4's, then Boot 3's: both declare the Tracer of the bridge in use
        "org.springframework.boot.micrometer.tracing.opentelemetry.autoconfigure.OpenTelemetryTracingAutoConfiguration",
        "org.springframework.boot.micrometer.tracing.brave.autoconfigure.BraveAutoConfiguration",
        "org.springframework.boot.micrometer.tracing.autoconfigure.MicrometerTracingAutoConfiguration",
        "org.springframework.boot.actuate.autoconfigure.tracing.OpenTelemetryTracingAutoConfiguration",
        "org.springframework.boot.actuate.autoconfigure.tracing.BraveAutoConfiguration",
        "org.springframework.boot.actuate.autoconfigure.tracing.MicrometerTracingAutoConfiguration"})
@ConditionalOnClass({Tracer.class, BatchWriteObservation.class})
@ConditionalOnBean(Tracer.class)
@ConditionalOnProperty(prefix = "ringbatch.observations", name = "enabled", havingValue = "true",
    matchIfMissing = true)
public class BatcherTracingAutoConfiguration {
  /** Before Micrometer Tracing's handlers (Spring Boot orders its default one near the lowest precedence). */
  static final int HANDLER_ORDER = 0;

  @Bean
  @ConditionalOnMissingBean
  public CallerTraceContexts ringbatchCallerTraceContexts(Tracer tracer) {
    return new CallerTraceContexts(tracer);
  }

  @Bean
  @Order(HANDLER_ORDER)
  @ConditionalOnMissingBean
  public BatchLinkingTracingObservationHandler ringbatchBatchLinkingTracingObservationHandler(Tracer tracer,
      CallerTraceContexts contexts) {
    return new BatchLinkingTracingObservationHandler(tracer, contexts);
  }
}
