package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Review 22: a caller parked in join() on the future {@code submit} returned, whose future has a dependent action that
 * waits for that caller (a hand-off: the dependent waits until the caller has its result). With the CompletableFuture
 * that submit returned before the change, the caller's Signaller, pushed after the dependent, is popped first by
 * postComplete: the caller returns at once. With ItemFuture the completer wakes the caller only after
 * {@code completeFor} returns, i.e. after the future's own dependents ran: the caller waits for the dependent, which
 * waits for the caller.
 */
@Timeout(60)
class DependentActionHandOffTest {
  private static final long DEPENDENT_WAIT_SECONDS = 8;
  private Batcher<Integer, Integer> batcher;
  private final CountDownLatch openSink = new CountDownLatch(1);

  @AfterEach
  void close() {
    openSink.countDown();
    if (batcher != null) {
      batcher.close(Duration.ofSeconds(20));
    }
  }

  @Test
  void control_completableFuture_callerReturnsBeforeItsBlockingDependent() throws Exception {
    CompletableFuture<Integer> future = new CompletableFuture<>();
    assertThat(callerTime(future, f -> f.complete(1))).as("ms the caller waited").isLessThan(2_000);
  }

  @Test
  void submitFuture_callerReturnsBeforeItsBlockingDependent_asWithCompletableFuture() throws Exception {
    CountDownLatch inSink = new CountDownLatch(1);
    batcher = Batcher.of("review22-dependent", BatcherConfig.builder().ringSize(64).maxBatchSize(64).build(),
        BatchSink.withResults((List<Integer> items) -> {
          inSink.countDown();
          openSink.await(30, TimeUnit.SECONDS);
          return items;
        }));
    CompletableFuture<Integer> future = batcher.submit(1);
    assertThat(inSink.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(callerTime(future, f -> {
      openSink.countDown();
      return true;
    })).as("ms the caller waited for a future completed long before").isLessThan(2_000);
  }

  /**
   * A caller joins {@code future}, whose dependent waits (up to DEPENDENT_WAIT_SECONDS) for that caller to have
   * returned; then {@code complete} completes it. Returns how many ms the caller waited after completion started.
   */
  private static long callerTime(CompletableFuture<Integer> future, Function<CompletableFuture<Integer>, Boolean>
      complete) throws Exception {
    CountDownLatch callerReturned = new CountDownLatch(1);
    java.util.concurrent.atomic.AtomicReference<Thread> callerThread = new java.util.concurrent.atomic.AtomicReference<>();
    future.thenRun(() -> { // e.g. hands something to the caller and waits for it to be taken
      if (Thread.currentThread() == callerThread.get()) {
        return; // a woken caller may help run the dependents itself (CompletableFuture on JDK 17): nothing to hand off
      }
      try {
        callerReturned.await(DEPENDENT_WAIT_SECONDS, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
    CompletableFuture<Long> returnedAt = new CompletableFuture<>();
    Thread caller = new Thread(() -> {
      future.join();
      returnedAt.complete(System.nanoTime());
      callerReturned.countDown();
    }, "caller");
    callerThread.set(caller);
    caller.start();
    Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> caller.getState() == Thread.State.WAITING);
    long start = System.nanoTime();
    complete.apply(future);
    long at = returnedAt.get(30, TimeUnit.SECONDS);
    return TimeUnit.NANOSECONDS.toMillis(at - start);
  }
}
