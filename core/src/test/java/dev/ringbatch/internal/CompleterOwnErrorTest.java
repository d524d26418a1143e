package dev.ringbatch.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.BooleanSupplier;
import org.jspecify.annotations.Nullable;
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
    boolean completeFor(@Nullable Object value) {
      return thrown ? super.completeFor(value) : inject(() -> super.completeFor(value));
    }

    @Override
    boolean failFor(Throwable cause) {
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
    BatchView<Integer, String> view = setup.batch.open("fault");
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

  /** A batch of five futures, the middle one faulty, each with a platform-thread caller parked in join(). */
  private static final class Setup {
    final BatchCompleter completer = new BatchCompleter("fault", new ConsumerCounters(),
        new GuardedStatsRecorders("fault"), null);
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
