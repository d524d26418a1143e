package dev.ringbatch.internal.ring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringbatch.internal.consume.Wakes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@link ItemFuture}: a caller parked in join, get or a timed get wakes however the future completes, behaves as
 * CompletableFuture's waits do (interrupts, timeouts, exceptions), and the batch completer's wakes leave nobody parked.
 */
@Timeout(60)
class ItemFutureTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  /** Every way a future can be completed, by the batcher or by whoever holds it. */
  enum Completion {
    COMPLETE(f -> f.complete(7)),
    COMPLETE_EXCEPTIONALLY(f -> f.completeExceptionally(new IllegalStateException("boom"))),
    CANCEL(f -> f.cancel(true)),
    OBTRUDE_VALUE(f -> f.obtrudeValue(7)),
    OBTRUDE_EXCEPTION(f -> f.obtrudeException(new IllegalStateException("boom"))),
    COMPLETE_ASYNC(f -> f.completeAsync(() -> 7)),
    COMPLETE_ASYNC_THROWING(f -> f.completeAsync(() -> {
      throw new IllegalStateException("boom");
    })),
    OR_TIMEOUT(f -> f.orTimeout(1, TimeUnit.MILLISECONDS)),
    COMPLETE_ON_TIMEOUT(f -> f.completeOnTimeout(7, 1, TimeUnit.MILLISECONDS)),
    BATCH_COMPLETER(f -> {
      if (f.completeFor(7)) {
        f.claim();
      }
    }),
    BATCH_COMPLETER_FAILING(f -> {
      if (f.failFor(new IllegalStateException("boom"))) {
        f.claim();
      }
    });

    final Consumer<ItemFuture<Integer>> complete;

    Completion(Consumer<ItemFuture<Integer>> complete) {
      this.complete = complete;
    }
  }

  enum Wait { JOIN, GET, TIMED_GET }

  /** What {@code wait} gives on {@code future}: the value, or the class of what it threw. */
  private static Object outcome(CompletableFuture<Integer> future, Wait wait) {
    try {
      return switch (wait) {
        case JOIN -> future.join();
        case GET -> future.get();
        case TIMED_GET -> future.get(1, TimeUnit.MINUTES);
      };
    } catch (CompletionException | ExecutionException e) {
      return e.getClass().getSimpleName() + "/" + e.getCause().getClass().getSimpleName();
    } catch (Exception e) {
      return e.getClass().getSimpleName();
    }
  }

  /** Starts a thread that waits on {@code future} and returns once it is parked on it. */
  private static Thread parkedWaiter(ItemFuture<Integer> future, Wait wait, AtomicReference<Object> seen) {
    Thread waiter = new Thread(() -> seen.set(outcome(future, wait)), "waiter");
    waiter.start();
    Awaitility.await().atMost(WAIT).until(() -> LockSupport.getBlocker(waiter) == future);
    return waiter;
  }

  @ParameterizedTest
  @EnumSource(Completion.class)
  void parkedCaller_wokenByEveryCompletion_andSeesWhatACompletableFutureCallerSees(Completion completion)
      throws Exception {
    for (Wait wait : Wait.values()) {
      ItemFuture<Integer> future = new ItemFuture<>();
      AtomicReference<Object> seen = new AtomicReference<>();
      Thread waiter = parkedWaiter(future, wait, seen);

      completion.complete.accept(future);

      waiter.join(WAIT.toMillis());
      assertThat(waiter.isAlive()).as("%s woken by %s", wait, completion).isFalse();
      assertThat(seen.get()).as("%s after %s", wait, completion).isEqualTo(expected(completion, wait));
    }
  }

  private static Object expected(Completion completion, Wait wait) throws InterruptedException {
    CompletableFuture<Integer> plain = new CompletableFuture<>();
    switch (completion) {
      case COMPLETE, OBTRUDE_VALUE, COMPLETE_ASYNC, COMPLETE_ON_TIMEOUT, BATCH_COMPLETER -> plain.complete(7);
      case COMPLETE_EXCEPTIONALLY, OBTRUDE_EXCEPTION, BATCH_COMPLETER_FAILING ->
          plain.completeExceptionally(new IllegalStateException("boom"));
      case COMPLETE_ASYNC_THROWING -> plain.completeAsync(() -> {
        throw new IllegalStateException("boom");
      });
      case CANCEL -> plain.cancel(true);
      case OR_TIMEOUT -> plain.orTimeout(1, TimeUnit.MILLISECONDS);
    }
    Awaitility.await().atMost(WAIT).until(plain::isDone);
    return outcome(plain, wait);
  }

  @Test
  void get_interruptedWhileParked_throwsInterruptedException_flagCleared() throws Exception {
    ItemFuture<Integer> future = new ItemFuture<>();
    AtomicReference<Object> seen = new AtomicReference<>();
    AtomicReference<Boolean> flagAfter = new AtomicReference<>();
    Thread waiter = new Thread(() -> {
      seen.set(outcome(future, Wait.GET));
      flagAfter.set(Thread.currentThread().isInterrupted());
    });
    waiter.start();
    Awaitility.await().atMost(WAIT).until(() -> LockSupport.getBlocker(waiter) == future);

    waiter.interrupt();

    waiter.join(WAIT.toMillis());
    assertThat(seen.get()).isEqualTo("InterruptedException");
    assertThat(flagAfter.get()).isFalse();
    assertThat(future.complete(1)).isTrue(); // nothing left registered: completing later is harmless
  }

  @Test
  void join_interruptedWhileParked_keepsWaiting_andSetsTheFlagAgainOnReturn() throws Exception {
    ItemFuture<Integer> future = new ItemFuture<>();
    AtomicReference<Object> seen = new AtomicReference<>();
    AtomicReference<Boolean> flagAfter = new AtomicReference<>();
    Thread waiter = new Thread(() -> {
      seen.set(future.join());
      flagAfter.set(Thread.interrupted());
    });
    waiter.start();
    Awaitility.await().atMost(WAIT).until(() -> LockSupport.getBlocker(waiter) == future);

    waiter.interrupt();
    Awaitility.await().atMost(WAIT).until(() -> waiter.isInterrupted() == false
        && LockSupport.getBlocker(waiter) == future); // cleared by the wait, which parks again
    assertThat(waiter.isAlive()).isTrue();
    future.complete(5);

    waiter.join(WAIT.toMillis());
    assertThat(seen.get()).isEqualTo(5);
    assertThat(flagAfter.get()).isTrue();
  }

  @Test
  void interruptedBeforeWaiting_getThrows_joinWaits_doneFutureAnswersEither() throws Exception {
    ItemFuture<Integer> pending = new ItemFuture<>();
    Thread.currentThread().interrupt();
    assertThatThrownBy(pending::get).isInstanceOf(InterruptedException.class);
    Thread.currentThread().interrupt();
    assertThatThrownBy(() -> pending.get(1, TimeUnit.SECONDS)).isInstanceOf(InterruptedException.class);

    ItemFuture<Integer> done = new ItemFuture<>();
    done.complete(3);
    Thread.currentThread().interrupt();
    assertThat(done.get()).isEqualTo(3);
    assertThat(done.join()).isEqualTo(3);
    assertThat(Thread.interrupted()).isTrue();
  }

  @Test
  void timedGet_timesOut_withTimeoutException_andLeavesNothingRegistered() throws Exception {
    ItemFuture<Integer> future = new ItemFuture<>();
    assertThatThrownBy(() -> future.get(0, TimeUnit.NANOSECONDS)).isInstanceOf(TimeoutException.class);
    assertThatThrownBy(() -> future.get(5, TimeUnit.MILLISECONDS)).isInstanceOf(TimeoutException.class);
    future.complete(2);
    assertThat(future.get(0, TimeUnit.NANOSECONDS)).isEqualTo(2);
  }

  @Test
  void twoThreadsWaiting_theSecondWaitsTheCompletableFutureWay_bothWoken() throws Exception {
    ItemFuture<Integer> future = new ItemFuture<>();
    AtomicReference<Object> first = new AtomicReference<>();
    AtomicReference<Object> second = new AtomicReference<>();
    Thread a = parkedWaiter(future, Wait.JOIN, first);
    Thread b = new Thread(() -> second.set(outcome(future, Wait.GET)));
    b.start();
    Awaitility.await().atMost(WAIT).until(() -> future.getNumberOfDependents() == 1); // CompletableFuture's node

    if (future.completeFor(9)) {
      future.claim();
    }

    a.join(WAIT.toMillis());
    b.join(WAIT.toMillis());
    assertThat(first.get()).isEqualTo(9);
    assertThat(second.get()).isEqualTo(9);
  }

  @Test
  void dependentActions_stillRunOnCompletion() {
    ItemFuture<Integer> future = new ItemFuture<>();
    CompletableFuture<Integer> doubled = future.thenApply(x -> x * 2);
    future.completeFor(4);
    assertThat(doubled).isCompletedWithValue(8);
    assertThat(future.completeFor(5)).isFalse(); // completes once
    assertThat(future.join()).isEqualTo(4);
  }

  /**
   * Real threads, as the batch completer wakes them: rounds of 48 callers, each on its own future, with join, get,
   * or a timed get of 0-200 µs (so that waits end by timeout around the moment their wake is claimed), one of them
   * interrupted. Every caller must return: one left parked would hang this test.
   */
  @Test
  void completerWakes_realThreads_timeoutsAndInterruptsRacingTheClaims_nobodyLeftParked() throws Exception {
    int callers = 48;
    for (int round = 0; round < 200; round++) {
      List<ItemFuture<Integer>> futures = new ArrayList<>();
      List<Thread> threads = new ArrayList<>();
      for (int i = 0; i < callers; i++) {
        ItemFuture<Integer> future = new ItemFuture<>();
        futures.add(future);
        int kind = i % 3;
        Thread t = new Thread(() -> {
          try {
            if (kind == 0) {
              future.join();
            } else if (kind == 1) {
              future.get();
            } else {
              future.get(ThreadLocalRandom.current().nextInt(200), TimeUnit.MICROSECONDS);
            }
          } catch (InterruptedException | ExecutionException | TimeoutException e) {
            // ended by its interrupt or timeout: what the test provokes; the wait must simply end
          }
        });
        t.setDaemon(true);
        t.start();
        threads.add(t);
      }
      threads.get(ThreadLocalRandom.current().nextInt(callers)).interrupt();
      Wakes wakes = null;
      for (int i = 0; i < callers; i++) {
        if (futures.get(i).completeFor(i)) {
          if (wakes == null) {
            wakes = new Wakes(callers - i, ThreadLocalRandom.current().nextBoolean());
          }
          wakes.add(futures.get(i));
        }
      }
      if (wakes != null) {
        wakes.now();
      }
      for (Thread t : threads) {
        t.join(WAIT.toMillis());
        assertThat(t.isAlive()).as("round %s: a caller is still parked", round).isFalse();
      }
    }
  }

  @Test
  void cancelledFuture_joinThrowsCancellation_asACompletableFutureDoes() {
    ItemFuture<Integer> future = new ItemFuture<>();
    future.cancel(false);
    assertThatThrownBy(future::join).isInstanceOf(CancellationException.class);
  }
}
