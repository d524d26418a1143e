package dev.ringbatch.micrometer;

import static java.util.Objects.requireNonNull;

import dev.ringbatch.AsyncBatchSink;
import dev.ringbatch.Batch;
import dev.ringbatch.BatchSink;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * Wraps a sink so that each batch write is a Micrometer {@link Observation} named {@value #NAME}, with the
 * low-cardinality key values {@code name} (the batcher) and {@code outcome}: {@code success} (every item
 * completed), {@code partial} (the sink failed some items, or left some without an outcome), or
 * {@code failure} (the write threw, its stage failed, or every item failed). The batch size is the
 * high-cardinality key value {@code size}.
 *
 * <pre>{@code
 * Batcher.of("orders", config, BatchWriteObservation.observe(registry, "orders", sink));
 * }</pre>
 *
 * <p>A batch serves many callers, each with its own trace, so the observation has no parent: it starts on the
 * batcher's consumer thread, where no observation is current, and is a trace root of its own. It is in scope
 * while the sink's {@code write} runs on that thread, so observations the sink makes there (a JDBC call, an
 * HTTP client) are its children. For an {@link AsyncBatchSink} it lasts until the returned stage completes.
 * A batch the batcher retries is observed once per attempt.
 *
 * <p>A meter handler in the registry (Spring Boot's default) would make a timer of the same name as
 * {@link BatcherMetrics}' {@code ringbatch.batch.write}, with an extra {@code error} tag, which Prometheus
 * refuses; deny it with {@link #DUPLICATE_METERS}, as the Spring Boot starter does.
 */
public final class BatchWriteObservation {
  /** The observation's name. */
  public static final String NAME = "ringbatch.batch.write";

  private static final System.Logger LOG = System.getLogger(BatchWriteObservation.class.getName());

  /**
   * Denies the meters a meter observation handler makes of this observation ({@code ringbatch.batch.write}
   * with an {@code error} tag, and {@code ringbatch.batch.write.active}): {@link BatcherMetrics} already times
   * every write, by outcome.
   */
  public static final MeterFilter DUPLICATE_METERS = MeterFilter.deny(id ->
      id.getName().equals(NAME + ".active") || id.getName().equals(NAME) && id.getTag("error") != null);

  private BatchWriteObservation() {}

  /** Returns {@code sink} observed under the batcher name {@code name}. */
  public static <T, R> BatchSink<T, R> observe(ObservationRegistry registry, String name, BatchSink<T, R> sink) {
    requireNonNull(registry, "registry");
    requireNonNull(name, "name");
    requireNonNull(sink, "sink");
    return batch -> {
      CountingBatch<T, R> counting = new CountingBatch<>(batch);
      @Nullable Observation observation = start(registry, name, batch);
      inScope(registry, observation, () -> {
        sink.write(counting);
        return null;
      });
      stop(observation, counting.outcome(), null);
    };
  }

  /** Returns {@code sink} observed under the batcher name {@code name}, each batch until its stage completes. */
  public static <T, R> AsyncBatchSink<T, R> observeAsync(ObservationRegistry registry, String name,
      AsyncBatchSink<T, R> sink) {
    requireNonNull(registry, "registry");
    requireNonNull(name, "name");
    requireNonNull(sink, "sink");
    return batch -> {
      CountingBatch<T, R> counting = new CountingBatch<>(batch);
      @Nullable Observation observation = start(registry, name, batch);
      CompletionStage<?> stage = inScope(registry, observation, () -> sink.write(counting));
      if (stage == null) {
        stop(observation, "failure", null);
        return stage;
      }
      // The batcher goes on with the stage it is given; this only watches it, so a handler cannot change it.
      stage.whenComplete((result, error) -> stop(observation, error == null ? counting.outcome() : "failure",
          error instanceof CompletionException && error.getCause() != null ? error.getCause() : error));
      return stage;
    };
  }

  /**
   * Runs the sink's {@code write} with the observation in scope; if it throws, stops it as a failure and
   * rethrows. Only the sink's own throw leaves here: observation handlers are user code too, and one that
   * throws must neither fail nor repeat a write, so opening and closing the scope are guarded, and a scope
   * whose close threw is taken off the thread anyway (the next batch must start without a parent).
   */
  private static <V> @Nullable V inScope(ObservationRegistry registry, @Nullable Observation observation,
      Write<V> write) throws Exception {
    if (observation == null) {
      return write.run();
    }
    Observation.@Nullable Scope previous = registry.getCurrentObservationScope();
    Observation.@Nullable Scope scope = guarded("opening the scope of", observation::openScope);
    Observation.@Nullable Scope opened = registry.getCurrentObservationScope();
    if (scope == null && opened != null && opened != previous && opened.getCurrentObservation() == observation) {
      scope = opened; // a handler threw once the scope was open: closed as usual (in reverse handler order)
    }
    V result;
    try {
      result = write.run();
    } catch (Throwable e) { // a sink may throw a Throwable that is neither (Kotlin): the observation ends all the same
      close(registry, scope, previous); // the scope closes before the observation stops, as Micrometer asks
      stop(observation, "failure", e);
      throw BatchWriteObservation.<Exception>sneaky(e);
    }
    close(registry, scope, previous);
    return result;
  }

  /** Closes the scope (guarded), and puts back the scope that was current if a throwing handler did not. */
  private static void close(ObservationRegistry registry, Observation.@Nullable Scope scope,
      Observation.@Nullable Scope previous) {
    if (scope != null) {
      guarded("closing the scope of", () -> {
        scope.close();
        return null;
      });
    }
    if (registry.getCurrentObservationScope() != previous) {
      registry.setCurrentObservationScope(previous);
    }
  }

  /** Rethrows {@code t} as it is, whatever its type (a sink's own throwable goes on to the batcher unchanged). */
  @SuppressWarnings("unchecked")
  private static <X extends Throwable> X sneaky(Throwable t) throws X {
    throw (X) t;
  }

  /** A sink's {@code write}. */
  @FunctionalInterface
  private interface Write<V> {
    @Nullable V run() throws Exception;
  }

  /**
   * Starts the observation, or returns null (and the batch is written unobserved) if creating it throws. One
   * whose start a handler failed is returned and stopped as usual, so that the handlers before that one, which saw
   * the start, see a stop: Micrometer stops handlers in reverse order, so a handler after the failing one that
   * throws on a stop it never saw the start of still keeps it from them (logged).
   */
  private static @Nullable Observation start(ObservationRegistry registry, String name, Batch<?, ?> batch) {
    @Nullable Observation observation = guarded("creating",
        () -> Observation.createNotStarted(NAME, () -> new BatchContext(batch), registry)
            .contextualName(name + " batch write")
            .lowCardinalityKeyValue("name", name)
            .highCardinalityKeyValue("size", Integer.toString(batch.size())));
    if (observation != null) {
      guarded("starting", observation::start);
    }
    return observation;
  }

  /** Never throws: a failing handler must not fail a batch that was written. */
  private static void stop(@Nullable Observation observation, String outcome, @Nullable Throwable error) {
    if (observation == null) {
      return;
    }
    guarded("stopping", () -> {
      observation.lowCardinalityKeyValue("outcome", outcome);
      if (error != null) {
        observation.error(error);
      }
      observation.stop();
      return null;
    });
  }

  /** Runs an observation step; if a handler throws, logs it (a log that throws too is ignored), returns null. */
  private static <V> @Nullable V guarded(String step, Supplier<V> action) {
    try {
      return action.get();
    } catch (Throwable e) { // a handler in Kotlin, or with @SneakyThrows, may throw a checked exception too
      if (e instanceof VirtualMachineError vm) {
        throw vm; // out of memory: not the handler's doing, and not for us to hide
      }
      try {
        LOG.log(System.Logger.Level.WARNING, step + " the observation " + NAME + " failed; the batch is not"
            + " affected", e);
      } catch (Throwable ignored) {
        // the logging backend is user code too
      }
      return null;
    }
  }

  /**
   * The observation's context: a handler starting the observation (a tracing handler adding span links, say) can
   * read the batch's items there. Read them only in {@code onStart}: the batch is the core's, valid while its
   * write runs, and its items are the callers'.
   */
  public static final class BatchContext extends Observation.Context {
    private final Batch<?, ?> batch;

    BatchContext(Batch<?, ?> batch) {
      this.batch = batch;
    }

    /** The number of items in the batch. */
    public int size() {
      return batch.size();
    }

    /** The item at {@code index}, in submission order. */
    public Object item(int index) {
      return batch.item(index);
    }
  }

  /**
   * The sink's batch, counting the outcomes the sink records: the only way to see them from outside the core.
   * Recording is thread-safe (an async sink may record from any thread), so are the counts.
   */
  private static final class CountingBatch<T, R> implements Batch<T, R> {
    private final Batch<T, R> batch;
    private final AtomicInteger completed = new AtomicInteger();
    private final AtomicInteger failed = new AtomicInteger();
    private volatile boolean remainingCompleted;

    CountingBatch(Batch<T, R> batch) {
      this.batch = batch;
    }

    /** Read once the write is over: items without an outcome then fail as a sink bug. */
    String outcome() {
      int size = batch.size();
      int failures = failed.get() + (remainingCompleted ? 0 : size - completed.get() - failed.get());
      return failures == 0 ? "success" : failures >= size ? "failure" : "partial";
    }

    @Override
    public int size() {
      return batch.size();
    }

    @Override
    public T item(int index) {
      return batch.item(index);
    }

    @Override
    public List<T> items() {
      return batch.items();
    }

    @Override
    public long weight() {
      return batch.weight();
    }

    @Override
    public void complete(int index, @Nullable R result) {
      batch.complete(index, result);
      completed.incrementAndGet();
    }

    @Override
    public void fail(int index, Throwable cause) {
      batch.fail(index, cause);
      failed.incrementAndGet();
    }

    @Override
    public void completeRemaining(@Nullable R result) {
      batch.completeRemaining(result);
      remainingCompleted = true;
    }
  }
}
