package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An attempt failed with its outcome unknown (it may have written the item), and the retry returned without an
 * outcome for the item: the caller is told the outcome is unknown, not that the item failed.
 */
@Timeout(value = 30, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class RetryLeavingAnItemWithoutOutcomeTest {

  @Test
  void retryAfterUnknownAttemptLeavesItemWithoutOutcome_callerToldOutcomeUnknown() throws Exception {
    AtomicInteger attempts = new AtomicInteger();
    BatchSink<String, Void> sink = batch -> {
      if (attempts.incrementAndGet() == 1) {
        // the COMMIT's reply was lost: the item may be in the table; the write is idempotent, so retrying is safe
        throw new OutcomeUnknownException("lost the reply to COMMIT", null, true);
      }
      // second attempt: a bug, the item is left without an outcome
    };
    BatcherConfig config = BatcherConfig.builder()
        .retryPolicy(RetryPolicy.builder().maxAttempts(2).initialBackoff(Duration.ZERO).jitter(0).build()).build();
    try (Batcher<String, Void> batcher = Batcher.of("unknown-then-none", config, sink)) {
      CompletableFuture<Void> f = batcher.submit("row");
      Throwable failure = f.handle((v, e) -> e).get(10, TimeUnit.SECONDS);

      assertThat(attempts).hasValue(2);
      assertThat(failure).as("what the caller is told").isNotNull();
      assertThat(OutcomeUnknownException.isIn(failure))
          .as("the first attempt may have written the item, so the caller must be told the outcome is unknown: %s",
              failure)
          .isTrue();
    }
  }
}
