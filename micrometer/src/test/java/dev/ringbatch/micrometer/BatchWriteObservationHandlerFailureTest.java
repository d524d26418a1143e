package dev.ringbatch.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.RetryPolicy;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * A throwing observation handler must not change what happens to the items. Micrometer's
 * {@code SimpleScope.close()} calls the handlers' {@code onScopeClosed} before it restores the previous scope,
 * so a throwing handler would also leave the batch's observation current on the consumer thread.
 */
class BatchWriteObservationHandlerFailureTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  private final ObservationRegistry registry = ObservationRegistry.create();
  private final ThrowsOnceOnScopeClosed handler = new ThrowsOnceOnScopeClosed();

  BatchWriteObservationHandlerFailureTest() {
    registry.observationConfig().observationHandler(handler);
  }

  /** Found by review: the item the sink completed failed with the handler's exception. */
  @Test
  void handlerThrowsOnScopeClosed_itemTheSinkCompleted_stillSucceeds() throws Exception {
    BatchSink<Integer, String> sink = batch -> batch.completeRemaining("stored");
    try (Batcher<Integer, String> batcher = Batcher.of("orders", BatcherConfig.builder().maxBatchSize(1).build(),
        BatchWriteObservation.observe(registry, "orders", sink))) {
      assertThat(batcher.submit(1)).succeedsWithin(WAIT).isEqualTo("stored");
    }
  }

  /** Found by review: the handler's exception made the batcher retry a written batch, writing it twice. */
  @Test
  void handlerThrowsOnScopeClosed_withRetries_batchWrittenOnce() throws Exception {
    AtomicInteger writes = new AtomicInteger();
    BatchSink<Integer, String> sink = batch -> {
      writes.incrementAndGet();
      batch.completeRemaining("stored");
    };
    BatcherConfig config = BatcherConfig.builder().maxBatchSize(1)
        .retryPolicy(RetryPolicy.builder().maxAttempts(2).initialBackoff(Duration.ZERO).maxBackoff(Duration.ZERO)
            .build())
        .build();
    try (Batcher<Integer, String> batcher = Batcher.of("orders", config,
        BatchWriteObservation.observe(registry, "orders", sink))) {
      batcher.submit(1).handle((r, e) -> null).get(10, TimeUnit.SECONDS);
    }
    assertThat(writes).hasValue(1);
  }

  /**
   * Found by review: the first observation was never stopped, and it stayed in scope on the consumer thread,
   * so the next batch's observation got it as its parent (the class promises a trace root per batch).
   */
  @Test
  void handlerThrowsOnScopeClosed_observationStopped_andNextBatchHasNoParent() throws Exception {
    BatchSink<Integer, String> sink = batch -> batch.completeRemaining("stored");
    try (Batcher<Integer, String> batcher = Batcher.of("orders", BatcherConfig.builder().maxBatchSize(1).build(),
        BatchWriteObservation.observe(registry, "orders", sink))) {
      batcher.submit(1).handle((r, e) -> null).get(10, TimeUnit.SECONDS);
      batcher.submit(2).handle((r, e) -> null).get(10, TimeUnit.SECONDS);
    }
    assertThat(handler.started).hasSize(2);
    assertThat(handler.started.get(1).getParentObservation()).isNull();
    assertThat(handler.stopped).containsExactlyElementsOf(handler.started);
  }

  /** A handler that throws when the observation starts: the batch is written unobserved. */
  @Test
  void handlerThrowsOnStart_itemStillWrittenOnce() throws Exception {
    ObservationRegistry failing = ObservationRegistry.create();
    failing.observationConfig().observationHandler(new ObservationHandler<Observation.Context>() {
      @Override
      public void onStart(Observation.Context context) {
        throw new IllegalStateException("tracing handler bug");
      }

      @Override
      public boolean supportsContext(Observation.@Nullable Context context) {
        return true;
      }
    });
    assertThat(writesOfOneItemToldStored(failing, BatcherConfig.builder().maxBatchSize(1).build())).isEqualTo(1);
  }

  /**
   * Submits one item to a batcher of {@code config} whose sink, observed in {@code registry}, stores it: asserts the
   * caller is told "stored", and returns how many times the sink was called.
   */
  private static int writesOfOneItemToldStored(ObservationRegistry registry, BatcherConfig config) {
    AtomicInteger writes = new AtomicInteger();
    BatchSink<Integer, String> sink = batch -> {
      writes.incrementAndGet();
      batch.completeRemaining("stored");
    };
    try (Batcher<Integer, String> batcher = Batcher.of("orders", config,
        BatchWriteObservation.observe(registry, "orders", sink))) {
      assertThat(batcher.submit(1)).succeedsWithin(WAIT).isEqualTo("stored");
    }
    return writes.get();
  }

  /** Throws from the first onScopeClosed only. */
  private static final class ThrowsOnceOnScopeClosed extends RecordingObservationHandler {
    final AtomicBoolean thrown = new AtomicBoolean();

    @Override
    public void onScopeClosed(Observation.Context context) {
      super.onScopeClosed(context);
      if (thrown.compareAndSet(false, true)) {
        throw new IllegalStateException("tracing handler bug");
      }
    }
  }

  /**
   * Of two handlers, the second throws in onStart: the first one (a tracing handler that opened a span, the meter
   * handler that started the write.active sample) saw the start and must see the stop, once per write.
   */
  @Test
  void aHandlerThrowingOnStart_theHandlersBeforeItSeeOneStopPerStart() throws Exception {
    ObservationRegistry registry = ObservationRegistry.create();
    RecordingObservationHandler first = new RecordingObservationHandler();
    registry.observationConfig().observationHandler(first).observationHandler(new ObservationHandler<>() {
      @Override
      public void onStart(Observation.Context context) {
        throw new IllegalStateException("second handler's bug");
      }

      @Override
      public boolean supportsContext(Observation.@Nullable Context context) {
        return true;
      }
    });
    BatchSink<Integer, String> sink = batch -> batch.completeRemaining("stored");
    try (Batcher<Integer, String> batcher = Batcher.of("orders", BatcherConfig.builder().maxBatchSize(1).build(),
        BatchWriteObservation.observe(registry, "orders", sink))) {
      assertThat(batcher.submit(1)).succeedsWithin(WAIT).isEqualTo("stored");
      assertThat(batcher.submit(2)).succeedsWithin(WAIT).isEqualTo("stored");
    }

    assertThat(first.started).hasSize(2);
    assertThat(first.stopped).as("stops seen by the handler that saw the starts")
        .containsExactlyElementsOf(first.started);
  }

  /**
   * Of two handlers, the second throws in onScopeOpened: the first one (a tracing handler, which put the span in
   * the consumer thread's trace context) saw the scope open and must see it close, or its thread-local stays set.
   */
  @Test
  void aHandlerThrowingOnScopeOpened_theHandlersBeforeItSeeTheScopeClose() throws Exception {
    ObservationRegistry registry = ObservationRegistry.create();
    RecordingObservationHandler first = new RecordingObservationHandler();
    registry.observationConfig().observationHandler(first).observationHandler(new ObservationHandler<>() {
      @Override
      public void onScopeOpened(Observation.Context context) {
        throw new IllegalStateException("second handler's bug");
      }

      @Override
      public boolean supportsContext(Observation.@Nullable Context context) {
        return true;
      }
    });
    BatchSink<Integer, String> sink = batch -> batch.completeRemaining("stored");
    try (Batcher<Integer, String> batcher = Batcher.of("orders", BatcherConfig.builder().maxBatchSize(1).build(),
        BatchWriteObservation.observe(registry, "orders", sink))) {
      assertThat(batcher.submit(1)).succeedsWithin(WAIT).isEqualTo("stored");
    }

    assertThat(first.opened).hasSize(1);
    assertThat(first.closed).as("scope closes seen by the handler that saw the scope open")
        .containsExactlyElementsOf(first.opened);
    assertThat(first.stopped).hasSize(1);
  }

  /** A handler in Kotlin (or with Lombok's @SneakyThrows) can throw a checked exception the compiler never saw. */
  @Test
  void aHandlerThrowingACheckedExceptionOnStop_theBatchIsWrittenOnce_andItsItemSucceeds() throws Exception {
    ObservationRegistry registry = ObservationRegistry.create();
    registry.observationConfig().observationHandler(new ObservationHandler<>() {
      @Override
      public void onStop(Observation.Context context) {
        BatchWriteObservationHandlerFailureTest.<RuntimeException>sneakyThrow(new java.io.IOException("exporter down"));
      }

      @Override
      public boolean supportsContext(Observation.@Nullable Context context) {
        return true;
      }
    });
    BatcherConfig config = BatcherConfig.builder().maxBatchSize(1)
        .retryPolicy(RetryPolicy.builder().maxAttempts(2).initialBackoff(Duration.ofMillis(1)).build()).build();
    assertThat(writesOfOneItemToldStored(registry, config)).isEqualTo(1);
  }

  /** A sink in Kotlin may throw a Throwable that is neither an Exception nor an Error: its observation still ends. */
  @Test
  void aSinkThrowingABareThrowable_itsObservationIsStopped_andTheNextBatchHasNoParent() throws Exception {
    ObservationRegistry registry = ObservationRegistry.create();
    RecordingObservationHandler recording = new RecordingObservationHandler();
    registry.observationConfig().observationHandler(recording);
    BatchSink<Integer, String> sink = batch -> {
      if (batch.item(0) == 1) {
        BatchWriteObservationHandlerFailureTest.<RuntimeException>sneakyThrow(new Throwable("refused") { });
      }
      batch.completeRemaining("stored");
    };
    try (Batcher<Integer, String> batcher = Batcher.of("orders", BatcherConfig.builder().maxBatchSize(1).build(),
        BatchWriteObservation.observe(registry, "orders", sink))) {
      assertThat(batcher.submit(1)).failsWithin(WAIT);
      assertThat(batcher.submit(2)).succeedsWithin(WAIT).isEqualTo("stored");
    }
    assertThat(recording.started).hasSize(2);
    assertThat(recording.stopped).containsExactlyElementsOf(recording.started);
    assertThat(recording.started.get(1).getParentObservation()).as("the second batch's parent").isNull();
  }

  @SuppressWarnings("unchecked")
  private static <X extends Throwable> void sneakyThrow(Throwable t) throws X {
    throw (X) t;
  }
}
