package dev.ringbatch;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Regression tests for the retry loop: a retry policy (or an exception) that throws must not kill the
 * consumer, and a stray interrupt of the consumer during a backoff must not give up the retries.
 */
@Timeout(value = 30, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class RetryGuardTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  private final List<Batcher<?, ?>> batchers = new CopyOnWriteArrayList<>();

  @AfterEach
  void closeAll() {
    batchers.forEach(b -> b.close(Duration.ofMillis(500)));
  }

  private <T, R> Batcher<T, R> track(Batcher<T, R> batcher) {
    batchers.add(batcher);
    return batcher;
  }

  /** Throws {@code failure} while unhealthy; then writes each item with its length as its result. */
  private static final class FlakySink implements BatchSink<String, Integer> {
    private final Supplier<? extends Exception> failure;
    final AtomicInteger calls = new AtomicInteger();
    final List<String> written = new CopyOnWriteArrayList<>();
    volatile boolean healthy;

    FlakySink(Supplier<? extends Exception> failure) {
      this.failure = failure;
    }

    @Override
    public void write(Batch<String, Integer> batch) throws Exception {
      calls.incrementAndGet();
      if (!healthy) {
        throw failure.get();
      }
      for (int i = 0; i < batch.size(); i++) {
        batch.complete(i, batch.item(i).length());
        written.add(batch.item(i));
      }
    }
  }

  /** A retry predicate that throws ClassCastException for anything but an SQLException. */
  private static RetryPolicy.Builder throwingPredicate() {
    return RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ZERO).maxBackoff(Duration.ZERO)
        .retryOn(e -> ((java.sql.SQLException) e).getErrorCode() == 1);
  }

  // ---------------------------------------------------------------- defect 4

  @Test
  void retryPredicateThrows_batchFailsWithSinkExceptionAndBatcherKeepsWorking() {
    IllegalStateException boom = new IllegalStateException("sink down");
    FlakySink sink = new FlakySink(() -> boom);
    Batcher<String, Integer> batcher = track(Batcher.of("retry-predicate",
        BatcherConfig.builder().retryPolicy(throwingPredicate().build()).build(), sink));

    assertThat(batcher.submit("x")).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
        .havingCause().isSameAs(boom);

    assertStillWorks(batcher, sink);
  }

  /**
   * An exception whose causes form a loop (a wraps b, b wraps a: Throwable.initCause allows it). Walking the
   * chain to look for an OutcomeUnknownException must end: the retry decision runs on the consumer thread.
   */
  @Test
  void sinkExceptionWithACauseLoop_isRetriedThenFails_consumerNotStuck() {
    FlakySink sink = new FlakySink(() -> {
      IllegalStateException a = new IllegalStateException("a");
      IllegalStateException b = new IllegalStateException("b", a);
      a.initCause(b);
      return a;
    });
    Batcher<String, Integer> batcher = track(Batcher.of("retry-cause-loop", BatcherConfig.builder()
        .retryPolicy(RetryPolicy.builder().maxAttempts(2).initialBackoff(Duration.ZERO).maxBackoff(Duration.ZERO)
            .build()).build(), sink));

    assertThat(batcher.submit("x")).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
        .havingCause().withMessage("a");
    assertThat(sink.calls).hasValue(2);
    assertStillWorks(batcher, sink);
  }

  @Test
  void retryPredicateThrows_withLinger_batchStillFailsAndBatcherKeepsWorking() {
    IllegalStateException boom = new IllegalStateException("sink down");
    FlakySink sink = new FlakySink(() -> boom);
    Batcher<String, Integer> batcher = track(Batcher.of("retry-predicate-linger",
        BatcherConfig.builder().linger(Duration.ofMillis(5)).retryPolicy(throwingPredicate().build()).build(),
        sink));

    assertThat(batcher.submit("x")).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
        .havingCause().isSameAs(boom);

    assertStillWorks(batcher, sink);
  }

  @Test
  void maxElapsedNoTimeout_retriesThenFailsWithSinkExceptionAndBatcherKeepsWorking() {
    IllegalStateException boom = new IllegalStateException("sink down");
    FlakySink sink = new FlakySink(() -> boom);
    RetryPolicy retry = RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ZERO)
        .maxBackoff(Duration.ZERO).maxElapsed(BatcherConfig.NO_TIMEOUT).build();
    Batcher<String, Integer> batcher = track(Batcher.of("retry-forever",
        BatcherConfig.builder().retryPolicy(retry).build(), sink));

    assertThat(batcher.submit("x")).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
        .havingCause().isSameAs(boom);
    assertThat(sink.calls).as("attempts made").hasValue(3);

    assertStillWorks(batcher, sink);
  }

  /** An exception whose getMessage() and toString() throw (a careless driver's exception, say). */
  private static final class UnprintableException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    @Override
    public String getMessage() {
      throw new UnsupportedOperationException("getMessage");
    }

    @Override
    public String getLocalizedMessage() {
      throw new UnsupportedOperationException("getLocalizedMessage");
    }

    @Override
    public String toString() {
      throw new UnsupportedOperationException("toString");
    }
  }

  @Test
  void sinkExceptionWhoseToStringThrows_batchFailsWithItAndBatcherKeepsWorking() throws Exception {
    UnprintableException unprintable = new UnprintableException();
    FlakySink sink = new FlakySink(() -> unprintable);
    RetryPolicy retry = RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ZERO)
        .maxBackoff(Duration.ZERO).build();
    Batcher<String, Integer> batcher = track(Batcher.of("unprintable",
        BatcherConfig.builder().retryPolicy(retry).build(), sink));

    CompletableFuture<Integer> future = batcher.submit("x");
    // Not get(): ExecutionException's constructor calls the cause's toString().
    Throwable failure = future.handle((result, t) -> t).get(10, SECONDS);
    Throwable cause = failure instanceof CompletionException && failure.getCause() != null
        ? failure.getCause() : failure;
    assertThat(cause == unprintable)
        .as("the future failed with the sink's exception, not with %s",
            cause == null ? "null (it succeeded)" : cause.getClass().getName())
        .isTrue();

    assertStillWorks(batcher, sink);
  }

  private static void assertStillWorks(Batcher<String, Integer> batcher, FlakySink sink) {
    sink.healthy = true;
    assertThat(batcher.submit("later")).as("an item submitted after the failure")
        .succeedsWithin(WAIT).isEqualTo(5);
    assertThat(batcher.flush()).succeedsWithin(WAIT);
    assertThat(sink.written).containsExactly("later");
  }

  // ---------------------------------------------------------------- defect 9

  @Test
  void strayInterruptDuringBackoff_doesNotGiveUpTheRetry() throws Exception {
    AtomicReference<Thread> consumer = new AtomicReference<>();
    ThreadFactory capturing = runnable -> {
      Thread thread = new Thread(runnable, "retry-guard-consumer");
      thread.setDaemon(true);
      if (runnable.getClass().getSimpleName().equals("CoalescingConsumer")) { // not the close helper
        consumer.set(thread);
      }
      return thread;
    };
    CountDownLatch firstFailure = new CountDownLatch(1);
    AtomicInteger calls = new AtomicInteger();
    IllegalStateException boom = new IllegalStateException("transient");
    BatchSink<String, Integer> sink = batch -> {
      if (calls.incrementAndGet() == 1) {
        firstFailure.countDown();
        throw boom;
      }
      for (int i = 0; i < batch.size(); i++) {
        batch.complete(i, batch.item(i).length());
      }
    };
    RetryPolicy retry = RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ofMillis(500))
        .maxBackoff(Duration.ofMillis(500)).jitter(0).build();
    Batcher<String, Integer> batcher = track(Batcher.of("stray-interrupt",
        BatcherConfig.builder().retryPolicy(retry).threadFactory(capturing).build(), sink));

    CompletableFuture<Integer> future = batcher.submit("abc");
    assertThat(firstFailure.await(10, SECONDS)).isTrue();
    Thread thread = consumer.get();
    await().atMost(WAIT).pollInterval(Duration.ofMillis(1)).pollDelay(Duration.ZERO)
        .until(() -> thread.getState() == Thread.State.TIMED_WAITING); // in the 500 ms backoff
    thread.interrupt(); // not a close: a stray interrupt

    assertThat(future).succeedsWithin(WAIT).isEqualTo(3);
    assertThat(calls).as("sink calls").hasValue(2);
  }
}
