package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringbatch.stats.StatsRecorder;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class RetryPolicyTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  private static RetryPolicy quick(int attempts) {
    return RetryPolicy.builder().maxAttempts(attempts).initialBackoff(Duration.ofMillis(1)).jitter(0)
        .retryOn(e -> e instanceof IOException).build();
  }

  private static Batcher<Integer, Integer> batcher(RetryPolicy policy, BatchSink<Integer, Integer> sink) {
    return Batcher.of("retrying", BatcherConfig.builder().retryPolicy(policy).build(), sink);
  }

  @Test
  void transientFailures_retriedUntilTheWriteSucceeds() {
    AtomicInteger calls = new AtomicInteger();
    List<Integer> retries = new CopyOnWriteArrayList<>();
    Batcher<Integer, Integer> b = batcher(quick(3), batch -> {
      if (calls.incrementAndGet() < 3) {
        throw new IOException("connection reset");
      }
      batch.complete(0, 42);
    });
    b.addStatsRecorder(new StatsRecorder() {
      @Override
      public void recordRetry(int attempt, Throwable cause) {
        retries.add(attempt);
      }
    });

    assertThat(b.submit(1)).succeedsWithin(WAIT).isEqualTo(42);
    assertThat(calls).hasValue(3);
    assertThat(retries).containsExactly(2, 3);
    assertThat(b.close(WAIT).stats().failed()).isZero();
  }

  @Test
  void notRetryable_failsAtOnce() {
    AtomicInteger calls = new AtomicInteger();
    Batcher<Integer, Integer> b = batcher(quick(5), batch -> {
      calls.incrementAndGet();
      throw new IllegalArgumentException("bad batch");
    });

    assertThat(b.submit(1)).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
        .withCauseInstanceOf(IllegalArgumentException.class);
    assertThat(calls).hasValue(1);
    b.close(WAIT);
  }

  @Test
  void attemptsExhausted_failsWithTheLastCause() {
    AtomicInteger calls = new AtomicInteger();
    Batcher<Integer, Integer> b = batcher(quick(3), batch -> {
      throw new IOException("attempt " + calls.incrementAndGet());
    });

    assertThat(b.submit(1)).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
        .havingCause().withMessage("attempt 3");
    b.close(WAIT);
  }

  @Test
  void maxElapsed_boundsTheWaitOfACallerWhenTheSinkStaysDown() {
    AtomicInteger calls = new AtomicInteger();
    RetryPolicy policy = RetryPolicy.builder().maxAttempts(100).initialBackoff(Duration.ofMillis(50)).jitter(0)
        .maxElapsed(Duration.ofMillis(120)).build();
    Batcher<Integer, Integer> b = batcher(policy, batch -> {
      calls.incrementAndGet();
      throw new IOException("down");
    });

    assertThat(b.submit(1)).failsWithin(WAIT)
        .withThrowableOfType(java.util.concurrent.ExecutionException.class);
    assertThat(calls.get()).isBetween(2, 3); // 0 ms, 50 ms, then 150 ms would pass 120 ms
    b.close(WAIT);
  }

  @Test
  void retry_dropsOutcomesRecordedByTheFailedAttempt() {
    AtomicInteger calls = new AtomicInteger();
    Batcher<Integer, Integer> b = batcher(quick(2), batch -> {
      if (calls.incrementAndGet() == 1) {
        batch.complete(0, 99); // recorded, then the attempt fails: must not leak into the retry
        throw new IOException("commit failed");
      }
      batch.completeRemaining(null);
    });

    assertThat(b.submit(1)).succeedsWithin(WAIT).isNull();
    b.close(WAIT);
  }

  @Test
  void close_duringBackoff_abandonsWithoutWaitingItOut() throws Exception {
    Batcher<Integer, Integer> b = batcher(RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ofMinutes(1))
        .maxBackoff(Duration.ofMinutes(1)).maxElapsed(Duration.ofMinutes(5)).build(), batch -> {
          throw new IOException("down");
        });
    CompletableFuture<Integer> item = b.submit(1);
    org.awaitility.Awaitility.await().atMost(WAIT).until(() -> b.stats().inFlight() == 1);

    long start = System.nanoTime();
    CloseReport report = b.close(Duration.ofMillis(100));

    assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(5_000);
    assertThat(report.abandoned()).isEqualTo(1);
    assertThat(item).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
        .withCauseInstanceOf(BatcherClosedException.class);
  }

  /** CI's PgCopyChaosIT: an idempotent COPY's COMMIT reply lost, then the retry's connection lost before the copy. */
  @Test
  void lastAttemptFailsPlainly_afterAnAttemptWithUnknownOutcome_itemsAreToldOutcomeUnknown() {
    AtomicInteger calls = new AtomicInteger();
    IOException lastFailure = new IOException("connection refused");
    Batcher<Integer, Integer> b = batcher(RetryPolicy.builder().maxAttempts(2).initialBackoff(Duration.ofMillis(1))
        .jitter(0).build(), batch -> {
          if (calls.incrementAndGet() == 1) {
            throw new OutcomeUnknownException("COMMIT reply lost", null, true); // may have written the batch
          }
          throw lastFailure; // this attempt wrote nothing, but the first one may have
        });

    Throwable failure = catchFailure(b.submit(1));
    assertThat(calls).hasValue(2);
    assertThat(failure).isInstanceOf(OutcomeUnknownException.class)
        .hasMessage("an earlier attempt of this batch failed with its outcome unknown"
            + " (dev.ringbatch.OutcomeUnknownException) and a later one failed with java.io.IOException: the items"
            + " may or may not have been written")
        .hasCause(lastFailure);
    assertThat(((OutcomeUnknownException) failure).isSafeToRetry()).isTrue();
    assertThat(failure.getSuppressed()).singleElement().isInstanceOf(OutcomeUnknownException.class);
    assertThat(b.close(WAIT).stats().failed()).isEqualTo(1);
  }

  @Test
  void close_duringBackoff_afterAnAttemptWithUnknownOutcome_toldOutcomeUnknownNotNotWritten() throws Exception {
    AtomicInteger calls = new AtomicInteger();
    Batcher<Integer, Integer> b = batcher(RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ofMinutes(1))
        .maxBackoff(Duration.ofMinutes(1)).maxElapsed(Duration.ofMinutes(5)).build(), batch -> {
          if (calls.incrementAndGet() == 1) {
            throw new OutcomeUnknownException("COMMIT reply lost", null, true);
          }
          throw new IOException("down");
        });
    CompletableFuture<Integer> item = b.submit(1);
    org.awaitility.Awaitility.await().atMost(WAIT).until(() -> b.stats().inFlight() == 1 && calls.get() == 1);

    assertThat(b.close(Duration.ofMillis(100)).abandoned()).isEqualTo(1);

    Throwable failure = catchFailure(item);
    assertThat(failure).isInstanceOfSatisfying(BatcherClosedException.class,
        closed -> assertThat(closed.isOutcomeUnknown()).isTrue());
    assertThat(failure.getMessage()).endsWith("while the item's batch waited to retry after an attempt whose outcome"
        + " is unknown (dev.ringbatch.OutcomeUnknownException); it may or may not have been written");
    assertThat(OutcomeUnknownException.isIn(failure)).isTrue();
  }

  private static Throwable catchFailure(CompletableFuture<Integer> item) {
    return assertThat(item).failsWithin(WAIT).withThrowableOfType(ExecutionException.class).actual().getCause();
  }

  @Test
  void backoff_growsExponentiallyUpToTheCap() {
    RetryPolicy policy = RetryPolicy.builder().maxAttempts(10).initialBackoff(Duration.ofMillis(100))
        .maxBackoff(Duration.ofMillis(300)).multiplier(2).jitter(0).maxElapsed(Duration.ofHours(1)).build();
    IOException failure = new IOException("x");

    assertThat(policy.backoffNanos(2, failure, 0)).isEqualTo(Duration.ofMillis(100).toNanos());
    assertThat(policy.backoffNanos(3, failure, 0)).isEqualTo(Duration.ofMillis(200).toNanos());
    assertThat(policy.backoffNanos(4, failure, 0)).isEqualTo(Duration.ofMillis(300).toNanos());
    assertThat(policy.backoffNanos(11, failure, 0)).isEqualTo(-1);
    assertThat(policy.backoffNanos(2, new OutOfMemoryError("never retried"), 0)).isEqualTo(-1);
    assertThat(RetryPolicy.none().backoffNanos(2, failure, 0)).isEqualTo(-1);
  }

  @Test
  void builder_validation() {
    assertThatThrownBy(() -> RetryPolicy.builder().maxAttempts(0))
        .hasMessage("maxAttempts must be from 1 to 100 but was 0");
    assertThatThrownBy(() -> RetryPolicy.builder().jitter(1.5)).hasMessage("jitter must be from 0 to 1 but was 1.5");
    assertThatThrownBy(() -> RetryPolicy.builder().multiplier(0.5))
        .hasMessage("multiplier must be from 1 to 10 but was 0.5");
    assertThatThrownBy(() -> RetryPolicy.builder().initialBackoff(Duration.ofMillis(-1)))
        .hasMessage("initialBackoff must not be negative but was PT-0.001S");
    assertThatThrownBy(() -> RetryPolicy.builder().initialBackoff(Duration.ofSeconds(2))
        .maxBackoff(Duration.ofSeconds(1)).build())
        .isExactlyInstanceOf(IllegalStateException.class)
        .hasMessage("maxBackoff (PT1S) must not be below initialBackoff (PT2S)");
  }

  /** maxBackoff is the longest wait: at the cap, the jitter only shortens a wait. */
  @Test
  void backoffWithTheDefaultJitter_neverExceedsMaxBackoff() {
    RetryPolicy policy = RetryPolicy.builder().maxAttempts(100).initialBackoff(Duration.ofMillis(50))
        .maxBackoff(Duration.ofSeconds(2)).maxElapsed(Duration.ofHours(1)).build(); // jitter 0.2, the default
    long longest = 0;
    long shortest = Long.MAX_VALUE;
    for (int round = 0; round < 200; round++) {
      // attempt 10: 50 ms * 2^8 = 12.8 s before the cap, so every wait is at the cap
      long wait = policy.backoffNanos(10, new IOException("down"), 0);
      longest = Math.max(longest, wait);
      shortest = Math.min(shortest, wait);
    }
    assertThat(Duration.ofNanos(longest)).as("the longest of 200 waits at the cap, %s", policy)
        .isLessThanOrEqualTo(policy.maxBackoff());
    assertThat(Duration.ofNanos(shortest)).as("still jittered below the cap").isLessThan(Duration.ofMillis(1_900));
  }
}
