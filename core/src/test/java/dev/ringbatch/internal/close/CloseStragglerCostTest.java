package dev.ringbatch.internal.close;

import static dev.ringbatch.internal.close.CloseStragglerTest.field;
import static dev.ringbatch.internal.close.CloseStragglerTest.idle;
import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static org.assertj.core.api.Assertions.assertThat;

import com.lmax.disruptor.RingBuffer;
import dev.ringbatch.Batcher;
import dev.ringbatch.internal.ring.PublishGate;
import dev.ringbatch.internal.ring.SubmissionSlot;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What a producer stopped between its claim and its publish costs everybody else (found by review): no thread may
 * burn a core waiting for it, and stats() must not wait for it once a close gave up on it. Each bound is far from
 * what the defect cost (a whole core for the window; 200 ms per stats() call), not a speed figure.
 */
@Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class CloseStragglerCostTest {
  private static final long WINDOW_MS = 500;

  /**
   * stats() after a close that gave up on a slot: it waited 200 ms for the same slot on every call. The fastest of
   * several calls is judged, so that one call caught in a stall of the machine does not fail the test.
   */
  @Test
  void statsAfterACloseGaveUpOnASlotDoesNotWaitForIt() throws Exception {
    Batcher<String, Void> batcher = idle("straggler-stats");
    long claimed = gate(batcher).tryClaim();
    batcher.close(Duration.ofMillis(50));

    long fastestMs = Long.MAX_VALUE;
    for (int i = 0; i < 5; i++) {
      long start = System.nanoTime();
      batcher.stats();
      fastestMs = Math.min(fastestMs, (System.nanoTime() - start) / 1_000_000);
    }

    publishLate(batcher, claimed);
    assertThat(fastestMs).as("the fastest of five stats() calls took %d ms", fastestMs).isLessThan(150);
  }

  /** An interrupted closing thread: every wait of the close must park, not spin on the interrupt flag. */
  @Test
  void anInterruptedCloseMeetingAStragglerBurnsNoCpu() throws Exception {
    // Warm up on this thread with the same kind of close, so that class loading and the interpreter's first run
    // are not counted as the measured close's CPU time.
    Batcher<String, Void> warmUp = idle("straggler-interrupt-warm-up");
    long warmUpClaim = gate(warmUp).tryClaim();
    warmUp.close(Duration.ofMillis(50));
    publishLate(warmUp, warmUpClaim);

    Batcher<String, Void> batcher = idle("straggler-interrupt");
    long claimed = gate(batcher).tryClaim();
    Thread closer = Thread.currentThread();
    AtomicBoolean stop = new AtomicBoolean();
    CountDownLatch interrupterDone = new CountDownLatch(1);
    Thread interrupter = new Thread(() -> {
      CountDownLatch never = new CountDownLatch(1);
      try {
        while (!stop.get()) {
          closer.interrupt();
          never.await(5, MILLISECONDS);
        }
      } catch (InterruptedException e) {
        // ends
      } finally {
        interrupterDone.countDown();
      }
    });
    long cpu = cpuTime(closer);
    interrupter.start();
    try {
      batcher.close(Duration.ofMillis(50)); // 200 ms waiting for the slot, parked
    } finally {
      stop.set(true);
      while (true) {
        try {
          interrupterDone.await();
          break;
        } catch (InterruptedException lastShot) {
          // the interrupter's last one
        }
      }
      Thread.interrupted();
    }
    long cpuMs = (cpuTime(closer) - cpu) / 1_000_000;

    publishLate(batcher, claimed);
    assertThat(cpuMs).as("CPU time of close(50 ms) on an interrupted thread: %d ms", cpuMs).isLessThan(100);
  }

  /** The consumer, facing an unpublished slot, spun a whole core for as long as the producer stayed stopped. */
  @Test
  void theConsumerBurnsNoCpuWhileAProducerIsStoppedBetweenClaimAndPublish() throws Exception {
    Batcher<String, Void> batcher = idle("straggler-consumer");
    Thread consumer = field(batcher, "consumerThread", Thread.class);
    long claimed = gate(batcher).tryClaim();
    long cpu = cpuTime(consumer);
    assertThat(new CountDownLatch(1).await(WINDOW_MS, MILLISECONDS)).isFalse(); // the window: nothing counts down
    long cpuMs = (cpuTime(consumer) - cpu) / 1_000_000;

    publishLate(batcher, claimed);
    batcher.close(Duration.ofSeconds(5));
    assertThat(cpuMs).as("consumer CPU in %d ms of waiting: %d ms", WINDOW_MS, cpuMs).isLessThan(WINDOW_MS / 5);
  }

  /** The stopped producer runs again: a tombstone once the batcher is closed, else a fire-and-forget item. */
  private static void publishLate(Batcher<?, ?> batcher, long claimed) throws ReflectiveOperationException {
    @SuppressWarnings("unchecked")
    RingBuffer<SubmissionSlot> ring = field(batcher, "ring", RingBuffer.class);
    gate(batcher).publish(claimed, "late", null, 0, SubmissionSlot.NOT_STAMPED);
    assertThat(ring.isAvailable(claimed)).isTrue();
  }

  /** CPU time of {@code thread} in ns, by reflection (the test module does not read java.management). */
  private static long cpuTime(Thread thread) throws ReflectiveOperationException {
    Object mx = Class.forName("java.lang.management.ManagementFactory").getMethod("getThreadMXBean").invoke(null);
    return (Long) Class.forName("java.lang.management.ThreadMXBean").getMethod("getThreadCpuTime", long.class)
        .invoke(mx, thread.getId());
  }

  private static PublishGate gate(Batcher<?, ?> batcher) throws ReflectiveOperationException {
    return field(batcher, "gate", PublishGate.class);
  }
}
