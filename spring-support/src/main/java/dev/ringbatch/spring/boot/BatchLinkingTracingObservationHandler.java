package dev.ringbatch.spring.boot;

import static java.util.Objects.requireNonNull;

import dev.ringbatch.micrometer.BatchWriteObservation;
import io.micrometer.observation.Observation;
import io.micrometer.tracing.Link;
import io.micrometer.tracing.Span;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.handler.TracingObservationHandler;
import org.jspecify.annotations.Nullable;

/**
 * Makes the span of a {@value BatchWriteObservation#NAME} observation as Micrometer Tracing's default handler
 * would (a root: the consumer thread has no current span), with links to the spans of the callers of the batch's
 * first {@value CallerTraceContexts#MAX_LINKS} items ({@link CallerTraceContexts}), so that the trace of a slow
 * request leads to the batch write that held it. Micrometer's {@code DefaultTracingObservationHandler} adds no
 * links (an {@code Observation} has no API for them), so this handler starts the span itself, with
 * {@code Span.Builder.addLink}; it must come before the default one in the tracing handlers, which take the
 * first that supports a context. Every other observation is left to the default handler.
 */
public class BatchLinkingTracingObservationHandler
    implements TracingObservationHandler<BatchWriteObservation.BatchContext> {
  private final Tracer tracer;
  private final CallerTraceContexts contexts;

  public BatchLinkingTracingObservationHandler(Tracer tracer, CallerTraceContexts contexts) {
    this.tracer = requireNonNull(tracer, "tracer");
    this.contexts = requireNonNull(contexts, "contexts");
  }

  @Override
  public boolean supportsContext(Observation.Context context) {
    return context instanceof BatchWriteObservation.BatchContext;
  }

  @Override
  public void onStart(BatchWriteObservation.BatchContext context) {
    @Nullable Span parent = getParentSpan(context);
    Span.Builder builder = tracer.spanBuilder();
    if (parent != null) {
      builder.setParent(parent.context());
    } else {
      builder.setNoParent();
    }
    for (Link link : contexts.links(context)) {
      builder.addLink(link);
    }
    getTracingContext(context).setSpan(builder.start());
  }

  @Override
  public void onStop(BatchWriteObservation.BatchContext context) {
    Span span = getRequiredSpan(context);
    span.name(getSpanName(context));
    tagSpan(context, span);
    endSpan(context, span);
  }

  @Override
  public Tracer getTracer() {
    return tracer;
  }
}
