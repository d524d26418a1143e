package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.Batch;
import dev.ringbatch.Batcher;
import io.micrometer.tracing.Span;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.test.simple.SimpleSpan;
import io.micrometer.tracing.test.simple.SimpleTracer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.autoconfigure.observation.ObservationAutoConfiguration;
import org.springframework.boot.actuate.autoconfigure.tracing.MicrometerTracingAutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** On Boot 3.5's observation and tracing auto-configuration, a batch write's span links to its caller's span. */
class Boot3SpanLinksTest {

  @Test
  void tracedRequest_batchSpanLinksToTheRequestSpan_onBoot3() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(ObservationAutoConfiguration.class,
            MicrometerTracingAutoConfiguration.class, BatcherObservationAutoConfiguration.class,
            BatcherTracingAutoConfiguration.class, BatcherAutoConfiguration.class))
        .withBean(SimpleTracer.class, SimpleTracer::new)
        .run(context -> {
          SimpleTracer tracer = context.getBean(SimpleTracer.class);
          Batcher<Integer, Void> orders = context.getBean(BatcherFactory.class).create("orders",
              (Batch<Integer, Void> batch) -> batch.completeRemaining(null));

          Span request = tracer.nextSpan().name("request").start();
          Tracer.SpanInScope scope = tracer.withSpan(request);
          CompletableFuture<Void> written;
          try {
            written = orders.submit(1);
          } finally {
            scope.close();
          }
          written.get(10, TimeUnit.SECONDS);
          request.end();
          orders.close();

          List<SimpleSpan> writes = tracer.getSpans().stream()
              .filter(s -> "orders batch write".equals(s.getName())).toList();
          assertThat(writes).as("all spans: %s", tracer.getSpans()).singleElement()
              .satisfies(write -> assertThat(write.getLinks()).singleElement()
                  .satisfies(link -> assertThat(link.getTraceContext().spanId())
                      .isEqualTo(request.context().spanId())));
        });
  }
}
