package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.sql.SQLRecoverableException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * Found by the review of the retry fix for CI's PgCopyChaosIT (c71d71e): after an attempt whose outcome is unknown,
 * a failure a later attempt records for one item (the sink returns, or throws, or a close takes the batch in a
 * backoff) was told to the caller as it was, a plain failure, though the earlier attempt may have written the item.
 */
class RetryAfterUnknownOutcomeTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  private static RetryPolicy quick(int attempts) {
    return RetryPolicy.builder().maxAttempts(attempts).initialBackoff(Duration.ofMillis(1)).jitter(0).build();
  }

  private static Throwable failureOf(CompletableFuture<Integer> item) {
    return assertThat(item).failsWithin(WAIT).withThrowableOfType(ExecutionException.class).actual().getCause();
  }

  /** The retry returns normally but records a plain failure for the item (it lost its connection for that row). */
  @Test
  void retryRecordsPlainItemFailure_andReturns_callerMustBeToldOutcomeUnknown() {
    AtomicInteger calls = new AtomicInteger();
    Batcher<Integer, Integer> b = Batcher.of("review-1", BatcherConfig.builder().retryPolicy(quick(2)).build(),
        batch -> {
          if (calls.incrementAndGet() == 1) {
            throw new OutcomeUnknownException("COMMIT reply lost", null, true); // the row may be in the table
          }
          batch.fail(0, new SQLRecoverableException("connection lost before this row was committed"));
        });

    Throwable failure = failureOf(b.submit(1));
    assertThat(calls).hasValue(2);
    assertThat(OutcomeUnknownException.isIn(failure)).as("told: %s", failure).isTrue();
    b.close(WAIT);
  }

  /** The last attempt records a plain failure for the item and then throws: the attempts run out. */
  @Test
  void lastAttemptRecordsPlainItemFailure_andThrows_callerMustBeToldOutcomeUnknown() {
    AtomicInteger calls = new AtomicInteger();
    Batcher<Integer, Integer> b = Batcher.of("review-2", BatcherConfig.builder().retryPolicy(quick(2)).build(),
        batch -> {
          if (calls.incrementAndGet() == 1) {
            throw new OutcomeUnknownException("COMMIT reply lost", null, true);
          }
          batch.fail(0, new IOException("row not sent"));
          throw new IOException("connection refused");
        });

    Throwable failure = failureOf(b.submit(1));
    assertThat(calls).hasValue(2);
    assertThat(OutcomeUnknownException.isIn(failure)).as("told: %s", failure).isTrue();
    assertThat(b.close(WAIT).stats().failed()).isEqualTo(1);
  }

  /**
   * A close during a backoff after attempt 2 keeps attempt 2's plain per-item failure for item 0. Backoffs: 1 ms,
   * 10 ms, 100 ms, 1 s, then 10 s before attempt 6: the close takes the batch in that last backoff.
   */
  @Test
  void closeDuringBackoff_itemWithPlainFailureRecordedByTheRetry_mustBeToldOutcomeUnknown() {
    AtomicInteger calls = new AtomicInteger();
    RetryPolicy growing = RetryPolicy.builder().maxAttempts(10).initialBackoff(Duration.ofMillis(1))
        .multiplier(10).maxBackoff(Duration.ofMinutes(1)).jitter(0).maxElapsed(Duration.ofMinutes(5)).build();
    Batcher<Integer, Integer> b = Batcher.of("review-3", BatcherConfig.builder().retryPolicy(growing)
        .maxBatchSize(2).linger(Duration.ofSeconds(30)).build(), batch -> {
          int call = calls.incrementAndGet();
          if (call == 1) {
            throw new OutcomeUnknownException("COMMIT reply lost", null, true); // both rows may be in
          }
          if (call == 2) {
            batch.fail(0, new IOException("row 0 not sent"));
          }
          throw new IOException("connection refused");
        });
    CompletableFuture<Integer> first = b.submit(1);
    CompletableFuture<Integer> second = b.submit(2);
    Awaitility.await().atMost(WAIT).until(() -> calls.get() == 5);

    CloseReport report = b.close(Duration.ofMillis(100));
    assertThat(calls).hasValue(5);
    BatcherStats stats = report.stats();
    assertThat(stats.accepted()).isEqualTo(stats.written() + stats.failed() + stats.abandoned() + stats.inFlight());

    Throwable one = failureOf(first);
    Throwable two = failureOf(second);
    assertThat(two).isInstanceOfSatisfying(BatcherClosedException.class, c -> assertThat(c.isOutcomeUnknown())
        .isTrue());
    assertThat(OutcomeUnknownException.isIn(one) || one instanceof BatcherClosedException c && c.isOutcomeUnknown())
        .as("item 1 told: %s", one).isTrue();
  }
}
