package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.Batch;
import dev.ringbatch.Batcher;
import io.micrometer.tracing.Span;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.test.simple.SimpleSpan;
import io.micrometer.tracing.test.simple.SimpleTracer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration;
import org.springframework.boot.micrometer.tracing.autoconfigure.MicrometerTracingAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * With Micrometer Tracing, a batch write's span links to the spans of the callers whose items it carries: Boot's
 * own observation and tracing auto-configuration, a SimpleTracer as the application's tracer.
 */
class BatchSpanLinksTest {
  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(ObservationAutoConfiguration.class,
          MicrometerTracingAutoConfiguration.class, BatcherObservationAutoConfiguration.class,
          BatcherTracingAutoConfiguration.class, BatcherAutoConfiguration.class))
      .withBean(SimpleTracer.class, SimpleTracer::new);

  @Test
  void tracedRequest_batchSpanLinksToTheRequestSpan_andIsARootOfItsOwn() {
    runner.run(context -> {
      SimpleTracer tracer = context.getBean(SimpleTracer.class);
      Batcher<Integer, Void> orders = context.getBean(BatcherFactory.class).create("orders",
          (Batch<Integer, Void> batch) -> batch.completeRemaining(null));

      Span request = tracer.nextSpan().name("request").start();
      inSpan(tracer, request, () -> orders.submit(1)).get(10, TimeUnit.SECONDS);
      request.end();
      orders.close();

      SimpleSpan write = batchSpan(tracer, "orders");
      assertThat(write.getLinks()).singleElement().satisfies(link -> {
        assertThat(link.getTraceContext().traceId()).isEqualTo(request.context().traceId());
        assertThat(link.getTraceContext().spanId()).isEqualTo(request.context().spanId());
      });
      assertThat(write.getParentId()).isNullOrEmpty();
      assertThat(write.getTraceId()).isNotEqualTo(request.context().traceId());
    });
  }

  @Test
  void batchOf200TracedItems_carries128Links() {
    runner.withPropertyValues("ringbatch.batchers.bulk.max-batch-size=200", "ringbatch.batchers.bulk.linger=30s")
        .run(context -> {
          SimpleTracer tracer = context.getBean(SimpleTracer.class);
          Batcher<Integer, Void> bulk = context.getBean(BatcherFactory.class).create("bulk",
              (Batch<Integer, Void> batch) -> batch.completeRemaining(null));

          List<CompletableFuture<Void>> futures = new ArrayList<>();
          for (int i = 0; i < 200; i++) {
            Span request = tracer.nextSpan().name("request " + i).start();
            int item = i;
            futures.add(inSpan(tracer, request, () -> bulk.submit(item)));
            request.end();
          }
          CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).get(10, TimeUnit.SECONDS);
          bulk.close();

          SimpleSpan write = batchSpan(tracer, "bulk");
          assertThat(write.getTags()).containsEntry("size", "200");
          assertThat(write.getLinks()).hasSize(CallerTraceContexts.MAX_LINKS);
          assertThat(context.getBean(CallerTraceContexts.class).noted()).isZero();
        });
  }

  @Test
  void tracedItemsPending_noted_untracedItemsPending_nothingNoted() {
    runner.run(context -> {
      SimpleTracer tracer = context.getBean(SimpleTracer.class);
      CallerTraceContexts noted = context.getBean(CallerTraceContexts.class);
      CountDownLatch release = new CountDownLatch(1);
      Batcher<Integer, Void> held = context.getBean(BatcherFactory.class).create("held",
          (Batch<Integer, Void> batch) -> {
            if (!release.await(10, TimeUnit.SECONDS)) {
              throw new AssertionError("not released in 10 s");
            }
            batch.completeRemaining(null);
          });

      CompletableFuture<Void> untraced = held.submit(1);
      assertThat(noted.noted()).isZero();
      Span request = tracer.nextSpan().name("request").start();
      CompletableFuture<Void> traced = inSpan(tracer, request, () -> held.submit(2));
      assertThat(noted.noted()).isOne();
      release.countDown();

      assertThat(CompletableFuture.allOf(untraced, traced)).succeedsWithin(Duration.ofSeconds(10));
      // Forgotten by a dependent action of the item's future, which may run just after this test's own sees it done.
      org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).untilAsserted(
          () -> assertThat(noted.noted()).isZero());
      held.close();
    });
  }

  @Test
  void observationsOff_noLinking() {
    runner.withPropertyValues("ringbatch.observations.enabled=false").run(context ->
        assertThat(context).doesNotHaveBean(CallerTraceContexts.class)
            .doesNotHaveBean(BatchLinkingTracingObservationHandler.class));
  }

  /** Calls {@code call} with {@code span} current, as a traced request's thread would. */
  private static <V> V inSpan(Tracer tracer, Span span, Supplier<V> call) {
    Tracer.SpanInScope scope = tracer.withSpan(span);
    try {
      return call.get();
    } finally {
      scope.close();
    }
  }

  private static SimpleSpan batchSpan(SimpleTracer tracer, String batcher) {
    List<SimpleSpan> writes = tracer.getSpans().stream()
        .filter(s -> (batcher + " batch write").equals(s.getName())).toList();
    assertThat(writes).as("the spans of the batch writes; all spans: %s", tracer.getSpans()).hasSize(1);
    return writes.get(0);
  }
}
