package dev.ringbatch.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.ringbatch.AsyncBatchSink;
import dev.ringbatch.Batch;
import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import io.micrometer.common.KeyValue;
import io.micrometer.observation.ObservationRegistry;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class BatchWriteObservationTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  private final ObservationRegistry registry = ObservationRegistry.create();
  private final RecordingObservationHandler recorder = new RecordingObservationHandler();

  BatchWriteObservationTest() {
    registry.observationConfig().observationHandler(recorder);
  }

  @Test
  void observe_syncSink_eachBatchObserved_withNameAndOutcomeTags() throws Exception {
    try (Batcher<Integer, Void> batcher = batcher(batch -> {
      for (int i = 0; i < batch.size(); i++) {
        if (batch.item(i) < 0) {
          batch.fail(i, new IllegalArgumentException("negative"));
        }
      }
      if (batch.item(0) == 99) {
        throw new IllegalStateException("database down");
      }
      batch.completeRemaining(null);
    })) {
      batcher.submit(1).get(10, TimeUnit.SECONDS);
      CompletableFuture<Void> good = batcher.submit(2);
      CompletableFuture<Void> bad = batcher.submit(-1);
      good.handle((v, e) -> null).get(10, TimeUnit.SECONDS);
      bad.handle((v, e) -> null).get(10, TimeUnit.SECONDS);
      batcher.submit(99).handle((v, e) -> null).get(10, TimeUnit.SECONDS);
      batcher.submit(-2).handle((v, e) -> null).get(10, TimeUnit.SECONDS);
    }
    assertThat(recorder.stopped).allSatisfy(c -> {
      assertThat(c.getName()).isEqualTo("ringbatch.batch.write");
      assertThat(c.getLowCardinalityKeyValue("name").getValue()).isEqualTo("orders");
      assertThat(c.getParentObservation()).isNull();
    });
    assertThat(outcomes()).contains("success", "failure").endsWith("failure", "failure");
    assertThat(recorder.stopped.get(recorder.stopped.size() - 2).getError())
        .hasMessage("database down");
  }

  @Test
  void observe_syncSink_someItemsFailed_partial() throws Exception {
    BatchSink<Integer, Void> sink = batch -> {
      batch.fail(0, new IllegalArgumentException("bad row"));
      batch.completeRemaining(null);
    };
    List<Integer> items = List.of(1, 2, 3);
    try (Batcher<Integer, Void> batcher = Batcher.of("orders", BatcherConfig.builder().linger(WAIT).build(),
        BatchWriteObservation.observe(registry, "orders", sink))) {
      List<CompletableFuture<Void>> futures = items.stream().map(batcher::submit).toList();
      batcher.flush().get(10, TimeUnit.SECONDS);
      assertThat(futures.get(0)).failsWithin(WAIT).withThrowableOfType(java.util.concurrent.ExecutionException.class);
    }
    assertThat(outcomes()).containsExactly("partial");
    assertThat(recorder.stopped.get(0).getHighCardinalityKeyValue("size").getValue()).isEqualTo("3");
  }

  @Test
  void observe_asyncSink_observedUntilTheStageCompletes_failedStageIsFailure() throws Exception {
    CompletableFuture<Void> stage = new CompletableFuture<>();
    AsyncBatchSink<Integer, Void> sink = batch -> stage.thenRun(() -> batch.completeRemaining(null));
    try (Batcher<Integer, Void> batcher = Batcher.ofAsync("orders", BatcherConfig.ofDefaults(),
        BatchWriteObservation.observeAsync(registry, "orders", sink))) {
      CompletableFuture<Void> item = batcher.submit(1);
      await().atMost(WAIT).until(() -> recorder.started.size() == 1);
      assertThat(recorder.stopped).isEmpty();

      stage.completeExceptionally(new IllegalStateException("broker down"));
      assertThat(item).failsWithin(WAIT).withThrowableOfType(java.util.concurrent.ExecutionException.class);
      await().atMost(WAIT).until(() -> recorder.stopped.size() == 1);
    }
    assertThat(outcomes()).containsExactly("failure");
    assertThat(recorder.stopped.get(0).getError()).hasMessage("broker down");
  }

  @Test
  void observe_asyncSink_success() throws Exception {
    AsyncBatchSink<Integer, Void> sink = batch -> {
      batch.completeRemaining(null);
      return CompletableFuture.completedFuture(null);
    };
    try (Batcher<Integer, Void> batcher = Batcher.ofAsync("orders", BatcherConfig.ofDefaults(),
        BatchWriteObservation.observeAsync(registry, "orders", sink))) {
      batcher.submit(1).get(10, TimeUnit.SECONDS);
      await().atMost(WAIT).until(() -> recorder.stopped.size() == 1);
    }
    assertThat(outcomes()).containsExactly("success");
  }

  private Batcher<Integer, Void> batcher(BatchSink<Integer, Void> sink) {
    return Batcher.of("orders", BatcherConfig.builder().maxBatchSize(1).build(),
        BatchWriteObservation.observe(registry, "orders", sink));
  }

  private List<String> outcomes() {
    return recorder.stopped.stream().map(c -> c.getLowCardinalityKeyValue("outcome")).map(KeyValue::getValue)
        .toList();
  }
}
