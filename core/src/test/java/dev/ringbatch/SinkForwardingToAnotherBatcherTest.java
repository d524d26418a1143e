package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A sink that forwards to another batcher with {@code other.submit(x).join()} throws that batcher's refusal inside
 * a CompletionException: this batcher's caller is told its sink failed the item, not that this batcher refused it.
 */
@Timeout(value = 30, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class SinkForwardingToAnotherBatcherTest {

  @Test
  void sinkThrowingJoinOfAClosedBatcher_callerIsToldSinkFailure_notThisBatcherClosed() throws Exception {
    Batcher<String, Void> downstream = Batcher.of("downstream", BatcherConfig.ofDefaults(),
        BatchSink.noResult(items -> { }));
    downstream.close(Duration.ofSeconds(1)); // refuses everything from now on
    BatchSink<String, Void> forwarding = batch -> {
      for (String item : batch.items()) {
        downstream.submit(item).join(); // throws CompletionException(BatcherClosedException of 'downstream')
      }
      batch.completeRemaining(null);
    };
    try (Batcher<String, Void> upstream = Batcher.of("upstream", BatcherConfig.ofDefaults(), forwarding)) {
      Throwable thrown = catchThrowable(() -> upstream.submitAndWait("a", Duration.ofSeconds(10)));
      CompletableFuture<Void> f = upstream.submit("b");
      Throwable viaGet = catchThrowable(() -> f.get(10, TimeUnit.SECONDS));

      assertThat(upstream.isClosed()).isFalse();
      // Batcher.submitAndWait: "@throws BatchWriteException if the sink failed the item";
      // "@throws BatcherClosedException if the batcher is closing or closed, or abandoned the item".
      assertThat(thrown).as("submitAndWait on an open batcher whose sink threw").isInstanceOf(BatchWriteException.class);
      assertThat(viaGet).isInstanceOf(ExecutionException.class);
      assertThat(viaGet.getCause()).as("the future's failure").isNotInstanceOf(BatcherClosedException.class);
    }
  }

  /**
   * The same with a downstream batcher that refused because the sink's thread was interrupted while waiting for
   * room: the upstream caller, never interrupted, gets an InterruptedException and the item is reported as not
   * accepted, though it was accepted and failed by the sink (counted failed).
   */
  @Test
  void sinkThrowingJoinOfAnInterruptedRefusal_callerIsNotToldItWasInterrupted() throws Exception {
    BatchSink<String, Void> forwarding = batch -> {
      throw new java.util.concurrent.CompletionException(new BatcherFullException("downstream", 8,
          RejectionReason.INTERRUPTED, "item rejected: the producer was interrupted while waiting for room"));
    };
    try (Batcher<String, Void> upstream = Batcher.of("upstream", BatcherConfig.ofDefaults(), forwarding)) {
      Throwable thrown = catchThrowable(() -> upstream.submitAndWait("a", Duration.ofSeconds(10)));

      assertThat(Thread.currentThread().isInterrupted()).isFalse();
      assertThat(upstream.stats().failed()).isEqualTo(1);
      assertThat(thrown).as("the caller, never interrupted, whose item the sink failed")
          .isInstanceOf(BatchWriteException.class);
    }
  }
}
