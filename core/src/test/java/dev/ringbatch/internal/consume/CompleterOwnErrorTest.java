package dev.ringbatch.internal.consume;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.ringbatch.BatchWriteException;
import dev.ringbatch.internal.ring.ItemFuture;
import dev.ringbatch.internal.ring.SubmissionSlot;
import dev.ringbatch.internal.shared.GuardedStatsRecorders;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.function.BooleanSupplier;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The completer's own code can fail too: an allocation that throws {@link OutOfMemoryError} inside
 * {@code CompletableFuture.complete} (before or after the result is set), or a {@link StackOverflowError} in its
 * dependents' machinery. Every caller parked on the batch must still get its item's true outcome, and the batch
 * must be cleared for the next items. Before the fix, a future whose completion threw before its result was set was
 * woken but never completed: its caller parked again, for ever.
 */
@Timeout(60)
class CompleterOwnErrorTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  /** Where the injected error is thrown: before the future's result is set, or after. */
  enum Fault {
    BEFORE_RESULT,
    AFTER_RESULT
  }

  /** An item future whose first completion by the batch completer throws the given error. */
  static final class FailsOnce<T> extends ItemFuture<T> {
    private final Fault fault;
    private boolean thrown;

    FailsOnce(Fault fault) {
      this.fault = fault;
    }

    @Override
    public boolean completeFor(@Nullable Object value) {
      return thrown ? super.completeFor(value) : inject(() -> super.completeFor(value));
    }

    @Override
    public boolean failFor(Throwable cause) {
      return thrown ? super.failFor(cause) : inject(() -> super.failFor(cause));
    }

    private boolean inject(BooleanSupplier completion) {
      thrown = true;
      if (fault == Fault.BEFORE_RESULT) {
        throw new OutOfMemoryError("injected before the result");
      }
      completion.getAsBoolean();
      throw new StackOverflowError("injected after the result");
    }
  }

  @ParameterizedTest
  @EnumSource(Fault.class)
  void writtenBatch_everyParkedCallerIsToldWritten(Fault fault) throws Exception {
    Setup setup = new Setup(fault);
    setup.batch.state.set(PendingBatch.IN_SINK);
    BatchView<Integer, String> view = setup.batch.open("fault", setup.completer.counters());
    assertThat(view).isNotNull();
    view.completeRemaining("written");
    setup.batch.endAttempt(view.generation());
    assertThat(setup.completer.settle(setup.batch, PendingBatch.IN_SINK, null)).isTrue();

    setup.completer.complete(setup.batch, null, 0);

    for (CompletableFuture<Object> seen : setup.seen) {
      assertThat(seen).succeedsWithin(WAIT).isEqualTo("written");
    }
    setup.assertCleared();
  }

  @ParameterizedTest
  @EnumSource(Fault.class)
  void failedBatch_everyParkedCallerIsToldTheCause(Fault fault) throws Exception {
    Setup setup = new Setup(fault);
    IllegalStateException boom = new IllegalStateException("the sink failed");
    assertThat(setup.completer.settle(setup.batch, PendingBatch.FILLING, boom)).isTrue();

    setup.completer.complete(setup.batch, boom, 0);

    for (CompletableFuture<Object> seen : setup.seen) {
      assertThat(seen).failsWithin(WAIT).withThrowableThat().havingRootCause().isSameAs(boom);
    }
    setup.assertCleared();
  }

  /** Throws once from getNumberOfDependents: an Error of the completer's own outside the completion itself. */
  static final class ThrowsBeforeCompletion<T> extends ItemFuture<T> {
    private boolean thrown;

    @Override
    public int getNumberOfDependents() {
      if (!thrown) {
        thrown = true;
        throw new OutOfMemoryError("injected before completion");
      }
      return super.getNumberOfDependents();
    }
  }

  /**
   * The rescue path outside the completion (found by review): the item still gets its batch's outcome, and a sink
   * that failed with a CancellationException fails it (wrapped) rather than cancelling it, as for the others.
   */
  @Test
  @SuppressWarnings({"unchecked", "rawtypes"})
  void ownErrorBeforeCompletion_itemFailsLikeTheOthersAndIsNotCancelled() {
    BatchCompleter completer = new BatchCompleter("rescue", new ConsumerCounters(),
        new GuardedStatsRecorders("rescue"), null, new LostFailureLog("rescue"));
    PendingBatch<Integer, String> batch = new PendingBatch<>(8, 8);
    CompletableFuture<Object>[] futures = new CompletableFuture[3];
    for (int i = 0; i < 3; i++) {
      ItemFuture<Object> future = i == 2 ? new ThrowsBeforeCompletion<>() : new ItemFuture<>();
      futures[i] = future;
      batch.add(i, future, 0, i, SubmissionSlot.NOT_STAMPED);
    }
    // a waiter registered on item 0, so that the completer asks item 2 for its dependents
    ((ItemFuture<Object>) futures[0]).register(new Thread(() -> { }));
    CancellationException sinkCancelled = new CancellationException("the sink's own stage was cancelled");
    assertThat(completer.settle(batch, PendingBatch.FILLING, sinkCancelled)).isTrue();

    completer.complete(batch, sinkCancelled, 0);

    for (CompletableFuture<Object> future : futures) {
      assertThat(future.isCancelled()).as("failed like the others, not cancelled").isFalse();
      assertThat(future).isCompletedExceptionally();
      assertThat(future).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
          .havingCause().isInstanceOf(BatchWriteException.class).havingCause().isSameAs(sinkCancelled);
    }
    assertThat(batch.isEmpty()).isTrue();
  }

  /** A batch of five futures, the middle one faulty, each with a platform-thread caller parked in join(). */
  private static final class Setup {
    final BatchCompleter completer = new BatchCompleter("fault", new ConsumerCounters(),
        new GuardedStatsRecorders("fault"), null, new LostFailureLog("fault"));
    final PendingBatch<Integer, String> batch = new PendingBatch<>(8, 8);
    final List<CompletableFuture<Object>> seen = new ArrayList<>();

    @SuppressWarnings("unchecked")
    Setup(Fault fault) {
      for (int i = 0; i < 5; i++) {
        ItemFuture<Object> future = i == 2 ? new FailsOnce<>(fault) : new ItemFuture<>();
        batch.add(i, (CompletableFuture<Object>) (CompletableFuture<?>) future, 0, i, SubmissionSlot.NOT_STAMPED);
        CompletableFuture<Object> outcome = new CompletableFuture<>();
        Thread caller = new Thread(() -> {
          try {
            outcome.complete(future.join());
          } catch (CompletionException e) {
            outcome.completeExceptionally(e.getCause());
          }
        }, "caller-" + i);
        caller.setDaemon(true);
        caller.start();
        // parked on the future (ItemFuture's own wait: a platform caller of a plain ItemFuture does not spin)
        await().atMost(WAIT).until(() -> caller.getState() == Thread.State.WAITING);
        seen.add(outcome);
      }
    }

    void assertCleared() {
      assertThat(batch.isEmpty()).as("the batch is cleared for the next items").isTrue();
      assertThat(batch.state.get()).isEqualTo(PendingBatch.FILLING);
      for (CompletableFuture<Object> outcome : seen) {
        assertThat(outcome.isDone()).isTrue();
      }
    }
  }
}
