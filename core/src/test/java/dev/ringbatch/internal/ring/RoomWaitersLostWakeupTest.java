package dev.ringbatch.internal.ring;

import static org.assertj.core.api.Assertions.assertThat;

import com.lmax.disruptor.BlockingWaitStrategy;
import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import dev.ringbatch.OverflowPolicy;
import dev.ringbatch.internal.shared.GuardedStatsRecorders;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Found in review of the first parked-producer commit: a wake-up spent on a registered waiter that does not use it
 * (it gave up on an interrupt, or it had already claimed a slot on its re-check after registering) is lost:
 * a later-registered waiter stays parked while the ring has room, until its submit timeout (or forever
 * under NO_TIMEOUT) unless some other release happens.
 *
 * <p>The test plays the consumer itself (consumed.set + gate.roomFreed, exactly what
 * CoalescingConsumer.release does) on a ring of 2 slots, so that after the release nothing else frees room.
 */
@Timeout(30)
class RoomWaitersLostWakeupTest {
  private static final int RING = 2;
  private static final Duration SUBMIT_TIMEOUT = Duration.ofSeconds(60);
  /** Far longer than an unpark takes, far shorter than the submit timeout. */
  private static final long WOKEN_WITHIN_MS = 5_000;

  /** The consumer's gating sequence, with a hook that holds one chosen thread right after it read the value. */
  static final class HookedSequence extends Sequence {
    volatile Thread hooked;
    volatile RoomWaiters room;
    final AtomicBoolean armed = new AtomicBoolean();
    final CountDownLatch inGet = new CountDownLatch(1);
    final CountDownLatch go = new CountDownLatch(1);

    HookedSequence() {
      super(-1);
    }

    @Override
    public long get() {
      long value = super.get();
      // Only the hooked thread's read made after it registered in RoomWaiters: its re-check before parking.
      if (Thread.currentThread() == hooked && registered(room, hooked) && armed.compareAndSet(true, false)) {
        inGet.countDown();
        boolean interrupted = false;
        while (true) {
          try {
            go.await();
            break;
          } catch (InterruptedException e) {
            interrupted = true;
          }
        }
        if (interrupted) {
          Thread.currentThread().interrupt(); // kept: the waiter sees it at the top of its loop
        }
      }
      return value;
    }
  }

  @SuppressWarnings("unchecked")
  static ConcurrentLinkedQueue<RoomWaiters.Waiter> queue(RoomWaiters room) {
    try {
      Field f = RoomWaiters.class.getDeclaredField("queue");
      f.setAccessible(true);
      return (ConcurrentLinkedQueue<RoomWaiters.Waiter>) f.get(room);
    } catch (ReflectiveOperationException e) {
      throw new AssertionError(e);
    }
  }

  static boolean registered(RoomWaiters room, Thread thread) {
    if (room == null) {
      return false;
    }
    for (RoomWaiters.Waiter w : queue(room)) {
      if (w.thread == thread && w.state.get() == 0) {
        return true;
      }
    }
    return false;
  }

  static RoomWaiters roomOf(PublishGate gate) {
    try {
      Field f = PublishGate.class.getDeclaredField("room");
      f.setAccessible(true);
      return (RoomWaiters) f.get(gate);
    } catch (ReflectiveOperationException e) {
      throw new AssertionError(e);
    }
  }

  private static Thread producer(PublishGate gate, String item, AtomicLong result) {
    Thread t = new Thread(() -> result.set(gate.accept(item, null, 1)), "producer-" + item);
    t.setDaemon(true);
    return t;
  }

  /**
   * W1 and W2 wait for room (W1 registered first). W1 is interrupted at the moment the consumer frees one
   * slot: roomFreed(1) picks W1 (not yet left), W1 gives up (REJECTED_INTERRUPTED) and W2 is never woken.
   * The ring keeps a free slot and W2 times out on it.
   */
  @Test
  void wakeSpentOnInterruptedWaiterIsLost() throws Exception {
    HookedSequence consumed = new HookedSequence();
    RingBuffer<SubmissionSlot> ring = SubmissionSlot.newRing(RING, new BlockingWaitStrategy());
    ring.addGatingSequences(consumed);
    PublishGate gate = new PublishGate("lost-wakeup", ring, OverflowPolicy.BLOCK, SUBMIT_TIMEOUT,
        new ConsumerGroup(), new GuardedStatsRecorders("lost-wakeup"), System::nanoTime);
    RoomWaiters room = roomOf(gate);
    for (int i = 0; i < RING; i++) {
      assertThat(gate.accept("fill" + i, null, 1)).isEqualTo(i); // the ring is full
    }

    AtomicLong r1 = new AtomicLong(Long.MIN_VALUE);
    AtomicLong r2 = new AtomicLong(Long.MIN_VALUE);
    Thread w1 = producer(gate, "w1", r1);
    consumed.room = room;
    consumed.hooked = w1;
    consumed.armed.set(true);
    w1.start();
    // W1 has registered and read consumed == -1 in its re-check: it is about to park.
    assertThat(consumed.inGet.await(10, TimeUnit.SECONDS)).isTrue();

    Thread w2 = producer(gate, "w2", r2);
    w2.start();
    Awaitility.await().atMost(Duration.ofSeconds(10)).until(
        () -> registered(room, w2) && w2.getState() == Thread.State.TIMED_WAITING);

    w1.interrupt();
    // The consumer releases slot 0: CoalescingConsumer.release -> consumed.set -> gate.roomFreed().
    consumed.set(0);
    gate.roomFreed();
    consumed.go.countDown();

    w1.join(10_000);
    assertThat(r1.get()).isEqualTo(PublishGate.REJECTED_INTERRUPTED);
    try {
      w2.join(WOKEN_WITHIN_MS);
      assertThat(w2.isAlive())
          .as("W2 still parked %d ms after the release; ring free slots = %d; W2 state %s",
              WOKEN_WITHIN_MS, ring.remainingCapacity(), w2.getState())
          .isFalse();
      assertThat(r2.get()).isGreaterThanOrEqualTo(0);
    } finally {
      gate.beginClose(); // lets W2 go
    }
  }

  /**
   * The consumer frees slot 0 with nobody registered; W1 then registers and takes that slot on its re-check
   * (this test's thread plays W1, step by step as PublishGate.awaitRoom does it). W2 registers behind W1 and
   * parks. The consumer frees slot 1: roomFreed(1) picks W1, which has not left yet, and spends the wake on
   * it; W2 sleeps next to the free slot until its timeout (in a batcher: until the consumer's next release,
   * i.e. after the sink call that follows the release in CoalescingConsumer.write).
   */
  @Test
  void wakeSpentOnWaiterThatAlreadyClaimedIsLost() throws Exception {
    Sequence consumed = new Sequence(-1);
    RingBuffer<SubmissionSlot> ring = SubmissionSlot.newRing(RING, new BlockingWaitStrategy());
    ring.addGatingSequences(consumed);
    PublishGate gate = new PublishGate("lost-wakeup-2", ring, OverflowPolicy.BLOCK, SUBMIT_TIMEOUT,
        new ConsumerGroup(), new GuardedStatsRecorders("lost-wakeup-2"), System::nanoTime);
    RoomWaiters room = roomOf(gate);
    for (int i = 0; i < RING; i++) {
      assertThat(gate.accept("fill" + i, null, 1)).isEqualTo(i);
    }

    consumed.set(0); // consumer: release(0)
    gate.roomFreed(); // nobody waits yet

    // W1 (this thread), in PublishGate.awaitRoom past its spins: register, then the re-check claims.
    RoomWaiters.Waiter w1 = room.register();
    long claimed = gate.tryClaim();
    assertThat(claimed).isEqualTo(2);

    AtomicLong r2 = new AtomicLong(Long.MIN_VALUE);
    Thread w2 = producer(gate, "w2", r2);
    w2.start();
    Awaitility.await().atMost(Duration.ofSeconds(10)).until(
        () -> registered(room, w2) && w2.getState() == Thread.State.TIMED_WAITING);

    consumed.set(1); // consumer: release(1)
    gate.roomFreed();

    if (room.leave(w1)) { // W1's finally in PublishGate.awaitRoom: a wake it did not need is passed on
      gate.roomFreed();
    }
    assertThat(gate.publish(claimed, "w1", null, 1, SubmissionSlot.NOT_STAMPED)).isTrue();

    try {
      w2.join(WOKEN_WITHIN_MS);
      assertThat(w2.isAlive())
          .as("W2 still parked %d ms after the release; ring free slots = %d; W2 state %s",
              WOKEN_WITHIN_MS, ring.remainingCapacity(), w2.getState())
          .isFalse();
      assertThat(r2.get()).isGreaterThanOrEqualTo(0);
    } finally {
      gate.beginClose(); // lets W2 go
    }
  }

  /** Control (passes): the same release with W2 the only waiter wakes it at once. */
  @Test
  void controlLoneWaiterIsWoken() throws Exception {
    Sequence consumed = new Sequence(-1);
    RingBuffer<SubmissionSlot> ring = SubmissionSlot.newRing(RING, new BlockingWaitStrategy());
    ring.addGatingSequences(consumed);
    PublishGate gate = new PublishGate("control", ring, OverflowPolicy.BLOCK, SUBMIT_TIMEOUT,
        new ConsumerGroup(), new GuardedStatsRecorders("control"), System::nanoTime);
    RoomWaiters room = roomOf(gate);
    for (int i = 0; i < RING; i++) {
      assertThat(gate.accept("fill" + i, null, 1)).isEqualTo(i);
    }
    AtomicLong r2 = new AtomicLong(Long.MIN_VALUE);
    Thread w2 = producer(gate, "w2", r2);
    w2.start();
    Awaitility.await().atMost(Duration.ofSeconds(10)).until(
        () -> registered(room, w2) && w2.getState() == Thread.State.TIMED_WAITING);
    consumed.set(0);
    gate.roomFreed();
    try {
      w2.join(WOKEN_WITHIN_MS);
      assertThat(w2.isAlive()).isFalse();
      assertThat(r2.get()).isEqualTo(2);
    } finally {
      gate.beginClose();
    }
  }
}
