package dev.ringbatch.spring.boot;

import static java.util.Objects.requireNonNull;

import dev.ringbatch.AsyncBatchSink;
import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.micrometer.BatchWriteObservation;
import io.micrometer.tracing.Link;
import io.micrometer.tracing.TraceContext;
import io.micrometer.tracing.Tracer;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * The trace contexts of the callers whose items wait in the factory's batchers, so that a batch's span can link
 * to them ({@link BatchLinkingTracingObservationHandler}). {@link #decorate(String, Batcher)} wraps each batcher
 * so that {@code submit} and {@code submitAndWait} note the caller's current trace context under the item (by
 * identity) until the item's outcome is known; a caller with no current trace context adds nothing, so an
 * untraced service pays one thread-local read per item. {@code offer} notes nothing: its caller does not wait
 * for the batch. The same item instance submitted twice at once keeps the later caller's context only.
 *
 * <p>Thread-safe: callers note and forget on their threads (or the thread completing their future), the
 * consumer reads while a batch's observation starts.
 */
public class CallerTraceContexts implements BatchSinkDecorator {
  /** The most links a batch's span carries: those of the first this many items' callers, each once. */
  public static final int MAX_LINKS = 128;

  private final Tracer tracer;
  private final ConcurrentHashMap<Identity, TraceContext> contexts = new ConcurrentHashMap<>();

  public CallerTraceContexts(Tracer tracer) {
    this.tracer = requireNonNull(tracer, "tracer");
  }

  @Override
  public <T, R> BatchSink<T, R> decorate(String name, BatchSink<T, R> sink) {
    return sink;
  }

  @Override
  public <T, R> AsyncBatchSink<T, R> decorateAsync(String name, AsyncBatchSink<T, R> sink) {
    return sink;
  }

  @Override
  public <T, R> Batcher<T, R> decorate(String name, Batcher<T, R> batcher) {
    return new TraceNotingBatcher<>(batcher, this);
  }

  /**
   * Notes the current trace context under {@code item}; returns the key to {@link #forget} it with, or null
   * if there is none (nothing noted).
   */
  @Nullable Noted note(Object item) {
    @Nullable TraceContext context = tracer.currentTraceContext().context();
    if (context == null) {
      return null;
    }
    Identity key = new Identity(item);
    contexts.put(key, context);
    return new Noted(key, context);
  }

  /** Forgets what {@link #note} noted, unless a later caller's context replaced it. */
  void forget(@Nullable Noted noted) {
    if (noted != null) {
      contexts.remove(noted.key(), noted.context());
    }
  }

  /**
   * The links to the callers of the batch's first {@link #MAX_LINKS} items, each span once: the consumer looks
   * up no more than that many items per batch, and none when no caller is noted.
   */
  List<Link> links(BatchWriteObservation.BatchContext batch) {
    if (contexts.isEmpty()) {
      return List.of();
    }
    List<Link> links = new ArrayList<>();
    Set<String> spans = new HashSet<>();
    for (int i = 0, end = Math.min(batch.size(), MAX_LINKS); i < end; i++) {
      @Nullable TraceContext context = contexts.get(new Identity(batch.item(i)));
      if (context != null && spans.add(context.traceId() + '/' + context.spanId())) {
        links.add(new Link(context));
      }
    }
    return links;
  }

  /** The number of items whose callers' contexts are noted now. */
  int noted() {
    return contexts.size();
  }

  /** What {@link #note} noted, to forget it. */
  record Noted(Identity key, TraceContext context) {}

  /** An item as a key by identity: items need not implement {@code equals}, and equal items are distinct. */
  static final class Identity {
    private final Object item;

    Identity(Object item) {
      this.item = item;
    }

    @Override
    public boolean equals(@Nullable Object other) {
      return other instanceof Identity identity && identity.item == item;
    }

    @Override
    public int hashCode() {
      return System.identityHashCode(item);
    }
  }
}
