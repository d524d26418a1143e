package dev.ringbatch.internal.consume;

import static org.assertj.core.api.Assertions.assertThat;

import com.lmax.disruptor.AlertException;
import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.SequenceBarrier;
import com.lmax.disruptor.TimeoutException;
import dev.ringbatch.WaitMode;
import dev.ringbatch.internal.pacing.SelfClock;
import dev.ringbatch.internal.ring.SubmissionSlot;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The consumer's gather ({@link ConsumerWaitStrategy} with a target from {@link SelfClock}) on a real ring: it parks
 * until a producer's claim reaches the target, not before; and a flush's wake, a close's alert, or its deadline end
 * it as they end any wait. Each gather here is armed with a 60-second deadline, so a wait that ends did not end by
 * its deadline.
 */
@Timeout(60)
class GatherWaitTest {
  private static final long LONG = TimeUnit.SECONDS.toNanos(60);

  private final ConsumerWaitStrategy wait = new ConsumerWaitStrategy(WaitMode.BLOCKING, new SelfClock());
  private final RingBuffer<SubmissionSlot> ring = SubmissionSlot.newRing(64, wait);
  private final SequenceBarrier barrier = ring.newBarrier();

  /** The consumer: gathers for {@code items} after nothing taken, then waits for sequence 0; what it returns. */
  private CompletableFuture<Object> consumer(int items, long nanos) throws InterruptedException {
    CompletableFuture<Object> result = new CompletableFuture<>();
    Thread t = new Thread(() -> {
      wait.bindConsumer(Thread.currentThread(), System::nanoTime, () -> { });
      wait.gather(-1, items, nanos);
      try {
        result.complete(barrier.waitFor(0));
      } catch (AlertException | TimeoutException | InterruptedException e) {
        result.complete(e.getClass());
      }
    }, "consumer");
    t.setDaemon(true);
    t.start();
    Awaitility.await().atMost(java.time.Duration.ofSeconds(10)).until(() -> LockSupport.getBlocker(t) == wait);
    return result;
  }

  private void publish(int n) {
    for (int i = 0; i < n; i++) {
      ring.publish(ring.next());
    }
  }

  @Test
  void producersBelowTheTarget_doNotWakeIt_theOneReachingItDoes() throws Exception {
    CompletableFuture<Object> consumer = consumer(5, LONG);
    publish(4);
    // Four published items must not end the gather: for a while, the consumer stays in it.
    Awaitility.await().during(java.time.Duration.ofMillis(200)).atMost(java.time.Duration.ofSeconds(5))
        .until(() -> !consumer.isDone() && wait.gathering());
    publish(1);
    assertThat(consumer.get(10, TimeUnit.SECONDS)).isEqualTo(4L); // sequences 0..4: all five taken at once
  }

  @Test
  void flushWake_endsTheGather_asATimeout() throws Exception {
    CompletableFuture<Object> consumer = consumer(5, LONG);
    wait.wake();
    assertThat(consumer.get(10, TimeUnit.SECONDS)).isEqualTo(TimeoutException.class);
  }

  @Test
  void closeAlert_endsTheGather() throws Exception {
    CompletableFuture<Object> consumer = consumer(5, LONG);
    barrier.alert();
    wait.wake(); // as CoalescingConsumer.wake does after the alert
    assertThat(consumer.get(10, TimeUnit.SECONDS)).isEqualTo(AlertException.class);
  }

  @Test
  void deadline_endsTheGather_thenTheUsualWaitTakesWhatComes() throws Exception {
    CompletableFuture<Object> consumer = consumer(5, TimeUnit.MILLISECONDS.toNanos(1));
    Awaitility.await().atMost(java.time.Duration.ofSeconds(10)).until(() -> !wait.gathering());
    assertThat(consumer).as("past the gather, in the usual wait for sequence 0").isNotDone();
    publish(1);
    assertThat(consumer.get(10, TimeUnit.SECONDS)).isEqualTo(0L);
  }

  /**
   * Found by the review of this change: the close marker's claim, short of the target, did not wake a gather, so
   * every close after one waited for its deadline. The close now cuts gathers once its marker is in the ring.
   */
  @Test
  void closeMarker_endsTheGather_withoutWaitingForItsDeadline() throws Exception {
    CompletableFuture<Object> consumer = consumer(5, LONG);
    long sequence = ring.next(); // the callers do not come back: the marker is the next claim, as CloseProtocol's
    ring.get(sequence).mark(SubmissionSlot.CLOSE);
    ring.publish(sequence);
    wait.cutGathers(); // CloseProtocol, through CoalescingConsumer.closeMarkerPublished
    assertThat(consumer.get(10, TimeUnit.SECONDS)).isEqualTo(0L);
  }
}
