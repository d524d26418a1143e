package dev.ringbatch.internal.ring;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Review 22: an interrupt that reaches a caller parked in {@code get()} / {@code get(timeout)} just before the future
 * is completed must not vanish. CompletableFuture either throws InterruptedException or returns the value with the
 * interrupt flag set again; ItemFuture returns the value with the flag cleared: the interrupt is lost.
 */
@Timeout(120)
class ItemFutureInterruptTest {
  private static final int ROUNDS = 40;

  enum Kind {
    COMPLETABLE_FUTURE(CompletableFuture::new), // the control: holds
    ITEM_FUTURE(ItemFuture::new),
    SPINNING_ITEM_FUTURE(ItemFuture.Spinning::new);

    final Supplier<CompletableFuture<Integer>> make;

    Kind(Supplier<CompletableFuture<Integer>> make) {
      this.make = make;
    }
  }

  @ParameterizedTest
  @EnumSource(Kind.class)
  void interruptThenComplete_getNeverLosesTheInterrupt(Kind kind) throws Exception {
    lostInterrupts(kind, false);
  }

  @ParameterizedTest
  @EnumSource(Kind.class)
  void interruptThenComplete_timedGetNeverLosesTheInterrupt(Kind kind) throws Exception {
    lostInterrupts(kind, true);
  }

  private static void lostInterrupts(Kind kind, boolean timed) throws Exception {
    int lost = 0;
    int threw = 0;
    int kept = 0;
    for (int round = 0; round < ROUNDS; round++) {
      CompletableFuture<Integer> future = kind.make.get();
      AtomicReference<Object> outcome = new AtomicReference<>();
      AtomicBoolean flagOnReturn = new AtomicBoolean();
      Thread caller = new Thread(() -> {
        try {
          outcome.set(timed ? future.get(1, TimeUnit.MINUTES) : future.get());
        } catch (Exception e) {
          outcome.set(e);
        }
        flagOnReturn.set(Thread.currentThread().isInterrupted());
      }, "caller-" + round);
      caller.start();
      Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> caller.getState() == Thread.State.WAITING
          || caller.getState() == Thread.State.TIMED_WAITING);
      caller.interrupt(); // the caller is told to stop waiting ...
      future.complete(7); // ... and the result arrives before it gets to run
      caller.join(TimeUnit.SECONDS.toMillis(10));
      assertThat(caller.isAlive()).as("caller returned").isFalse();
      if (outcome.get() instanceof InterruptedException) {
        threw++;
      } else if (flagOnReturn.get()) {
        kept++;
      } else {
        lost++;
      }
    }
    assertThat(lost).as("%s: rounds where get returned the value with the interrupt flag cleared (threw IE: %d,"
        + " value with flag set: %d)", kind, threw, kept).isZero();
  }
}
