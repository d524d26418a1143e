package dev.ringbatch.internal;

import com.lmax.disruptor.AlertException;
import com.lmax.disruptor.Sequence;
import com.lmax.disruptor.SequenceBarrier;
import com.lmax.disruptor.TimeoutException;
import com.lmax.disruptor.WaitStrategy;
import dev.ringbatch.WaitMode;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * How the single consumer waits for the ring's cursor, with two things the Disruptor's strategies lack: a
 * deadline the consumer can move at run time (the linger of the batch it holds), and an early wake-up
 * ({@link #wake()}) that {@code flush()} uses to cut a linger short. Both end the wait with
 * {@link TimeoutException}.
 *
 * <p>In {@link WaitMode#BLOCKING} the consumer spins briefly and then parks. A producer's
 * {@link #signalAllWhenBlocking()} costs one volatile read unless the consumer is parked. No wake-up is
 * lost: the consumer writes {@code parked} (volatile) and then re-reads the cursor; the producer's claim is
 * a CAS on the cursor (a full fence) before it reads {@code parked}. Of two such store-then-load pairs at
 * least one sees the other's store, so either the consumer sees the new cursor or the producer sees
 * {@code parked} and unparks it.
 *
 * <p>{@link #waitFor} is called by the consumer thread only; {@link #signalAllWhenBlocking()} and
 * {@link #wake()} by any thread.
 */
final class ConsumerWaitStrategy implements WaitStrategy {
  static final long NO_DEADLINE = Long.MAX_VALUE;

  private static final int SPINS = 256;
  private static final int YIELDS = 8;

  private final WaitMode mode;
  /**
   * The linger clock: the batcher's ticker, read by the consumer as user code (it may block, so a close must be
   * able to take over meanwhile). Consumer thread only.
   */
  private LongSupplier clock = System::nanoTime;
  /** Told of an interrupt cleared while parked; the consumer logs it as user code (a log handler). */
  private Runnable strayInterrupt = () -> {};

  private volatile @Nullable Thread consumer;
  private volatile boolean parked;
  private volatile boolean wakeRequested;

  /** The linger deadline in ticker time, or {@link #NO_DEADLINE}; consumer thread only. */
  private long deadline = NO_DEADLINE;
  /**
   * The longest the deadline can be away: the linger. A deadline further away than that was set in another
   * clock origin (a ticker that threw and was replaced, see {@link GuardedTicker}) and counts as past.
   */
  private long window;

  ConsumerWaitStrategy(WaitMode mode) {
    this.mode = mode;
  }

  /**
   * Called once by the consumer thread before its first wait, with the clock the linger deadline is read on and
   * what to do about an interrupt cleared while parked. Both may throw the consumer's stop out of the wait.
   */
  void bindConsumer(Thread thread, LongSupplier lingerClock, Runnable onStrayInterrupt) {
    clock = lingerClock;
    strayInterrupt = onStrayInterrupt;
    consumer = thread;
  }

  /**
   * Sets the linger deadline, no further than {@code window} (the linger) from now. Consumer thread only. Writes
   * only on a change: the fields share a cache line with {@code parked}, which every producer reads on every
   * publish.
   */
  void setDeadline(long deadline, long window) {
    if (this.deadline != deadline) {
      this.deadline = deadline;
    }
    if (this.window != window) {
      this.window = window;
    }
  }

  /** Clears the linger deadline. Consumer thread only. */
  void clearDeadline() {
    setDeadline(NO_DEADLINE, 0);
  }

  /** Ends the consumer's current or next wait early with a timeout, e.g. to cut a linger short. */
  void wake() {
    wakeRequested = true;
    Thread thread = consumer;
    if (thread != null) {
      LockSupport.unpark(thread);
    }
  }

  @Override
  public long waitFor(long sequence, Sequence cursor, Sequence dependentSequence, SequenceBarrier barrier)
      throws AlertException, TimeoutException {
    long available = cursor.get();
    if (available < sequence) {
      available = awaitCursor(sequence, cursor, barrier);
    }
    return available;
  }

  private long awaitCursor(long sequence, Sequence cursor, SequenceBarrier barrier)
      throws AlertException, TimeoutException {
    int round = 0;
    long available;
    while ((available = cursor.get()) < sequence) {
      barrier.checkAlert();
      checkDeadline();
      if (mode == WaitMode.BUSY_SPIN || round < SPINS) {
        Thread.onSpinWait();
      } else if (mode == WaitMode.YIELDING || round < SPINS + YIELDS) {
        Thread.yield();
      } else {
        park(sequence, cursor, barrier);
      }
      round++;
    }
    return available;
  }

  private void park(long sequence, Sequence cursor, SequenceBarrier barrier) {
    parked = true;
    try {
      if (cursor.get() >= sequence || barrier.isAlerted() || wakeRequested) {
        return;
      }
      long until = deadline;
      if (until == NO_DEADLINE) {
        LockSupport.park(this);
      } else {
        long remaining = until - clock.getAsLong();
        if (remaining > 0 && remaining <= window) {
          LockSupport.parkNanos(this, remaining);
        }
      }
    } finally {
      parked = false;
    }
    if (Thread.interrupted()) {
      // park() returns at once while the flag is set: left set, the consumer would spin. Only close() stops
      // the consumer (through the barrier's alert), so the interrupt is cleared, and reported by the consumer.
      strayInterrupt.run();
    }
  }

  private void checkDeadline() throws TimeoutException {
    if (wakeRequested) {
      wakeRequested = false;
      throw TimeoutException.INSTANCE;
    }
    long until = deadline;
    if (until != NO_DEADLINE) {
      long remaining = until - clock.getAsLong();
      if (remaining <= 0 || remaining > window) { // past, or not credible: set in another clock origin
        throw TimeoutException.INSTANCE;
      }
    }
  }

  @Override
  public void signalAllWhenBlocking() {
    if (parked) {
      Thread thread = consumer;
      if (thread != null) {
        LockSupport.unpark(thread);
      }
    }
  }

  @Override
  public String toString() {
    return "ConsumerWaitStrategy{" + mode + '}';
  }
}
