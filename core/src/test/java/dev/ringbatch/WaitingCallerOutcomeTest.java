package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringbatch.testing.Holds;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What a caller waiting on its item is told: a sink's failure as a sink failure, whatever the failure's type, and
 * a wait on the batcher's own consumer thread refused, as submitAndWait refuses it.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class WaitingCallerOutcomeTest {
  @RegisterExtension
  final Holds holds = new Holds();

  /** A sink's failure reaches the caller as a sink failure, whatever its type. */
  @Test
  void sinkFailingAnItemWithAnotherBatchersRejection_reachesSubmitAndWaitAsASinkFailure() {
    BatcherFullException othersFull = new BatcherFullException("other", 16, RejectionReason.INTERRUPTED,
        "item rejected: the producer was interrupted while waiting for room");
    BatcherClosedException othersClosed = new BatcherClosedException("other", 16, false, "item rejected");
    Batcher<Integer, Integer> batcher = holds.track(Batcher.of("sink-rejection", BatcherConfig.ofDefaults(), batch -> {
      for (int i = 0; i < batch.size(); i++) {
        batch.fail(i, batch.item(i) == 1 ? othersFull : othersClosed);
      }
    }));
    assertThatThrownBy(() -> batcher.submitAndWait(1)).isInstanceOf(BatchWriteException.class)
        .hasCause(othersFull);
    assertThat(Thread.currentThread().isInterrupted()).isFalse();
    assertThatThrownBy(() -> batcher.submitAndWait(2, Duration.ofSeconds(10))).isInstanceOf(BatchWriteException.class)
        .hasCause(othersClosed);
    assertThat(batcher.submit(1)).failsWithin(Duration.ofSeconds(10)).withThrowableOfType(ExecutionException.class)
        .havingCause().isInstanceOf(BatchWriteException.class).havingCause().isSameAs(othersFull);
  }
  /** A sink that forwards to another batcher and fails with its BatchWriteException: this batcher's, caused by it. */
  @Test
  void sinkFailingWithAnotherBatchersWriteFailure_reachesTheCallerAsThisBatchersWithThatCause() {
    BatchWriteException downstream = new BatchWriteException("downstream", new IOException("disk"));
    Batcher<String, Void> batcher = holds.track(Batcher.of("upstream", BatcherConfig.ofDefaults(), batch -> {
      throw downstream;
    }));
    assertThatThrownBy(() -> batcher.submitAndWait("x")).isInstanceOf(BatchWriteException.class)
        .hasMessageContaining("'upstream'").hasCause(downstream);
    assertThat(batcher.submit("y")).failsWithin(Duration.ofSeconds(10)).withThrowableOfType(ExecutionException.class)
        .havingCause().isInstanceOf(BatchWriteException.class).havingCause().isSameAs(downstream);
  }

  /** Waiting on the consumer thread for an item of its own batcher is refused, as submitAndWait is. */
  @Test
  void joiningAnItemOnTheBatchersOwnConsumerThread_isRefusedLikeSubmitAndWait() throws Exception {
    CompletableFuture<Throwable> joinRefused = new CompletableFuture<>();
    CompletableFuture<Throwable> getRefused = new CompletableFuture<>();
    AtomicReference<Batcher<Integer, Integer>> self = new AtomicReference<>();
    Batcher<Integer, Integer> batcher = holds.track(Batcher.of("join-on-consumer", BatcherConfig.ofDefaults(), batch -> {
      if (batch.item(0) == 1) {
        try {
          self.get().submit(2).join();
          joinRefused.complete(null);
        } catch (Throwable t) {
          joinRefused.complete(t);
        }
        try {
          self.get().submit(3).get(30, TimeUnit.SECONDS);
          getRefused.complete(null);
        } catch (Throwable t) {
          getRefused.complete(t);
        }
      }
      batch.completeRemaining(1);
    }));
    self.set(batcher);
    assertThat(batcher.submit(1)).succeedsWithin(Duration.ofSeconds(10));
    assertThat(joinRefused).succeedsWithin(Duration.ofSeconds(5)).isInstanceOf(IllegalStateException.class);
    assertThat(getRefused).succeedsWithin(Duration.ofSeconds(5)).isInstanceOf(IllegalStateException.class);
    assertThat(joinRefused.join().getMessage()).contains("consumer thread", "'join-on-consumer'");
  }
}
