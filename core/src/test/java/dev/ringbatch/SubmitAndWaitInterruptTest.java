package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Review 22, through the public API: a caller parked in submitAndWait is interrupted just as its batch completes
 * (here the sink interrupts it, then writes the item). submitAndWait must either throw InterruptedException or return
 * the result with the interrupt flag still set; it must never return normally with the interrupt gone.
 */
@Timeout(120)
class SubmitAndWaitInterruptTest {
  private static final int ROUNDS = 60;
  private Batcher<Integer, Integer> batcher;
  private final AtomicReference<Thread> toInterrupt = new AtomicReference<>();

  @AfterEach
  void close() {
    if (batcher != null) {
      batcher.close(Duration.ofSeconds(10));
    }
  }

  @Test
  void callerInterruptedAsItsBatchCompletes_neverLosesTheInterrupt() throws Exception {
    batcher = Batcher.of("review22-interrupt", BatcherConfig.builder().ringSize(64).maxBatchSize(64).build(),
        BatchSink.withResults((List<Integer> items) -> {
          Thread caller = toInterrupt.getAndSet(null);
          if (caller != null) {
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> caller.getState() == Thread.State.WAITING);
            caller.interrupt(); // e.g. the application cancels the request just as the write succeeds
          }
          return items;
        }));
    int lost = 0;
    int threw = 0;
    int kept = 0;
    for (int round = 0; round < ROUNDS; round++) {
      AtomicReference<Object> outcome = new AtomicReference<>();
      AtomicBoolean flag = new AtomicBoolean();
      CompletableFuture<Void> done = new CompletableFuture<>();
      int item = round;
      Thread caller = new Thread(() -> {
        try {
          outcome.set(batcher.submitAndWait(item));
        } catch (Exception e) {
          outcome.set(e);
        }
        flag.set(Thread.currentThread().isInterrupted());
        done.complete(null);
      });
      toInterrupt.set(caller);
      caller.start();
      done.get(20, TimeUnit.SECONDS);
      if (outcome.get() instanceof InterruptedException) {
        threw++;
      } else if (flag.get()) {
        kept++;
      } else {
        lost++;
      }
    }
    assertThat(lost).as("rounds where submitAndWait returned normally with the interrupt cleared (threw IE: %d,"
        + " returned with the flag set: %d)", threw, kept).isZero();
  }
}
