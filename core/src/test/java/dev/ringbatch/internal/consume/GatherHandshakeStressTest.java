package dev.ringbatch.internal.consume;

import static org.assertj.core.api.Assertions.assertThat;

import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import com.lmax.disruptor.SequenceBarrier;
import com.lmax.disruptor.TimeoutException;
import dev.ringbatch.WaitMode;
import dev.ringbatch.internal.pacing.SelfClock;
import dev.ringbatch.internal.ring.SubmissionSlot;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Review 22: the gather's park/claim handshake under racing multi-producers on a real ring: whenever the producers'
 * claims reach the target, the consumer must be back long before the (10 s) gather deadline.
 */
@Timeout(300)
class GatherHandshakeStressTest {
  private static final int ROUNDS = 3_000;
  private static final int PRODUCERS = 3;
  private static final int PER_PRODUCER = 2;

  @Test
  void claimsReachingTheTarget_alwaysWakeTheGather() throws Exception {
    ConsumerWaitStrategy wait = new ConsumerWaitStrategy(WaitMode.BLOCKING, new SelfClock());
    RingBuffer<SubmissionSlot> ring = SubmissionSlot.newRing(64, wait);
    Sequence consumed = new Sequence(-1);
    ring.addGatingSequences(consumed);
    SequenceBarrier barrier = ring.newBarrier();
    CyclicBarrier start = new CyclicBarrier(PRODUCERS + 1);
    AtomicLong slowest = new AtomicLong();
    Thread[] producers = new Thread[PRODUCERS];
    for (int p = 0; p < PRODUCERS; p++) {
      producers[p] = new Thread(() -> {
        try {
          for (int r = 0; r < ROUNDS; r++) {
            start.await(30, TimeUnit.SECONDS);
            int delay = ThreadLocalRandom.current().nextInt(4_000);
            for (int i = 0; i < delay; i++) {
              Thread.onSpinWait();
            }
            for (int i = 0; i < PER_PRODUCER; i++) {
              long s = ring.next();
              if (ThreadLocalRandom.current().nextBoolean()) {
                Thread.yield(); // widen the claim-to-publish gap
              }
              ring.publish(s);
            }
          }
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      }, "producer-" + p);
      producers[p].setDaemon(true);
      producers[p].start();
    }
    wait.bindConsumer(Thread.currentThread(), System::nanoTime, () -> { });
    long taken = -1;
    int target = PRODUCERS * PER_PRODUCER;
    for (int r = 0; r < ROUNDS; r++) {
      wait.gather(taken, target - ThreadLocalRandom.current().nextInt(target), TimeUnit.SECONDS.toNanos(10));
      start.await(30, TimeUnit.SECONDS);
      long begin = System.nanoTime();
      long want = taken + target;
      while (taken < want) {
        try {
          long available = barrier.waitFor(taken + 1);
          if (available > taken) {
            taken = available;
          }
        } catch (TimeoutException e) {
          throw new AssertionError("no wake was asked for", e);
        }
      }
      consumed.set(taken);
      slowest.accumulateAndGet(System.nanoTime() - begin, Math::max);
    }
    for (Thread t : producers) {
      t.join(10_000);
    }
    assertThat(TimeUnit.NANOSECONDS.toMillis(slowest.get())).as("slowest round, ms (deadline 10 000)")
        .isLessThan(2_000);
  }
}
