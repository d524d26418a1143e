package dev.ringbatch.internal.consume;

import com.lmax.disruptor.AlertException;
import com.lmax.disruptor.Sequence;
import com.lmax.disruptor.SequenceBarrier;
import com.lmax.disruptor.TimeoutException;
import com.lmax.disruptor.WaitStrategy;
import dev.ringbatch.WaitMode;
import dev.ringbatch.internal.pacing.SelfClock;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * How the single consumer waits for the ring's cursor, with two things the Disruptor's strategies lack: a
 * deadline the consumer can move at run time (the linger of the batch it holds), and an early wake-up
 * ({@link #wake()}) that {@code flush()} uses to cut a linger short. Both end the wait with
 * {@link TimeoutException}.
 *
 * <p>In {@link WaitMode#BLOCKING} the consumer spins briefly and then parks; after a batch that woke virtual-thread
 * callers it may instead gather ({@link SelfClock}): park at once until the cursor reaches a target, or a deadline.
 * A producer's {@link #signalAllWhenBlocking()} costs one volatile read unless the consumer is parked; then the
 * producer wakes it if no gather runs or its claim reached the gather's target, and if its CAS of {@code parked}
 * is the one that takes the wake (one unpark per park). No wake-up is lost: the consumer writes {@code parked}
 * (volatile) and then re-reads the cursor; the producer's claim is a CAS on the cursor (a full fence) before it
 * reads {@code parked}. Of two such store-then-load pairs at least one sees the other's store, so either the
 * consumer sees the new cursor (at or past the target) or the producer whose claim reached it sees {@code parked}
 * and unparks it. jcstress {@code GatherWakeStress} checks it.
 *
 * <p>{@link #waitFor} is called by the consumer thread only; {@link #signalAllWhenBlocking()} and
 * {@link #wake()} by any thread.
 */
public final class ConsumerWaitStrategy implements WaitStrategy {
  static final long NO_DEADLINE = Long.MAX_VALUE;
  private static final long NO_GATHER = Long.MAX_VALUE;
  private static final VarHandle PARKED;

  static {
    try {
      PARKED = MethodHandles.lookup().findVarHandle(ConsumerWaitStrategy.class, "parked", int.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

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
  /** Whether the consumer is parked (or about to): the one producer whose CAS clears it unparks it. */
  private volatile int parked;
  private volatile boolean wakeRequested;
  /**
   * The self-clocked wait's target ({@link SelfClock}): the consumer waits until the cursor reaches it, and only the
   * producer whose claim reaches it wakes the consumer; or {@link #NO_GATHER}. Written by the consumer before it
   * parks, read by producers that see it parked.
   */
  private volatile long gatherTarget = NO_GATHER;
  /** Set once a close published its marker: no gather waits any longer, none starts. */
  private volatile boolean gathersCut;
  /** When the gather gives up, in {@link System#nanoTime()} terms; consumer thread only. */
  private long gatherDeadline;
  /** The last sequence taken when the gather was armed; consumer thread only. */
  private long gatherFrom;
  private final SelfClock selfClock;
  /** The ring's cursor, bound on the consumer's first wait: producers compare it with the gather target. */
  private volatile @Nullable Sequence cursor;

  /** The linger deadline in ticker time, or {@link #NO_DEADLINE}; consumer thread only. */
  private long deadline = NO_DEADLINE;
  /**
   * The longest the deadline can be away: the linger. A deadline further away than that was set in another
   * clock origin (a ticker that threw and was replaced, see {@link GuardedTicker}) and counts as past.
   */
  private long window;

  public ConsumerWaitStrategy(WaitMode mode, SelfClock selfClock) {
    this.mode = mode;
    this.selfClock = selfClock;
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
  public void wake() {
    wakeRequested = true;
    Thread thread = consumer;
    if (thread != null) {
      LockSupport.unpark(thread);
    }
  }

  /**
   * Makes the next wait a gather if the self-clock says so ({@link SelfClock}) and the wait mode is
   * {@link WaitMode#BLOCKING}, now that a batch was completed and {@code lastTaken} is the last sequence taken,
   * {@code cursor} the ring's cursor. Consumer thread only, with an empty batch.
   */
  void gatherIfDue(long lastTaken, long cursor, int maxBatchSize) {
    if (mode != WaitMode.BLOCKING || gathersCut) {
      selfClock.forget(); // a consumer told to spin or yield keeps doing so: it was given the core for its latency
      return;
    }
    int items = selfClock.target(cursor - lastTaken, maxBatchSize);
    if (items > 0) {
      gather(lastTaken, items, selfClock.deadlineNanos());
    }
  }

  /**
   * A close published its marker: ends a gather now and lets none start, so that the consumer reaches the marker
   * without waiting for a target the marker's claim may fall short of. Closing thread.
   */
  void cutGathers() {
    gathersCut = true;
    if (parked != 0 && PARKED.compareAndSet(this, 1, 0)) {
      Thread thread = consumer;
      if (thread != null) {
        LockSupport.unpark(thread);
      }
    }
  }

  /** The ring's cursor, which producers compare with the gather's target. */
  void bindCursor(Sequence ringCursor) {
    if (cursor != ringCursor) {
      cursor = ringCursor;
    }
  }

  /** Whether a gather is armed or running. */
  boolean gathering() {
    return gatherTarget != NO_GATHER;
  }

  /** Makes the next wait a gather for {@code items} after {@code lastTaken}, for at most {@code nanos}. */
  void gather(long lastTaken, int items, long nanos) {
    gatherDeadline = System.nanoTime() + nanos;
    gatherFrom = lastTaken;
    gatherTarget = lastTaken + items;
  }

  @Override
  public long waitFor(long sequence, Sequence cursor, Sequence dependentSequence, SequenceBarrier barrier)
      throws AlertException, TimeoutException {
    if (gatherTarget != NO_GATHER) {
      awaitGather(cursor, barrier);
    }
    long available = cursor.get();
    if (available < sequence) {
      available = awaitCursor(sequence, cursor, barrier);
    }
    return available;
  }

  /**
   * Parks, without spinning first, until the cursor reaches the gather target or the gather's deadline passes;
   * a close's marker ({@link #cutGathers()}), the barrier's alert or {@link #wake()} ends it early.
   */
  private void awaitGather(Sequence cursor, SequenceBarrier barrier) throws AlertException, TimeoutException {
    long start = System.nanoTime();
    long target = gatherTarget;
    boolean reached = false;
    try {
      bindCursor(cursor);
      while (!(reached = cursor.get() >= target) && !gathersCut) {
        barrier.checkAlert();
        checkDeadline();
        long left = gatherDeadline - System.nanoTime();
        if (left <= 0) {
          break;
        }
        try {
          if (mayPark(cursor, target) && !barrier.isAlerted() && !wakeRequested) {
            LockSupport.parkNanos(this, left);
          }
        } finally {
          parked = 0;
        }
        if (Thread.interrupted()) {
          strayInterrupt.run();
        }
      }
    } finally {
      gatherTarget = NO_GATHER;
      selfClock.gathered(reached, System.nanoTime() - start, target - gatherFrom, cursor.get() - gatherFrom);
    }
  }

  /**
   * The gather's half of the handshake: announces the park, then reads the cursor again. Returns whether the target
   * is still ahead (the consumer may park: the producer whose claim reaches the target will see it parked).
   */
  boolean mayPark(Sequence cursor, long target) {
    parked = 1;
    return cursor.get() < target;
  }

  /** Whether the consumer is announced as parked and nobody took the wake yet (for the stress test). */
  boolean parkedUnwoken() {
    return parked != 0;
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
    parked = 1;
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
      parked = 0;
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

  /**
   * A producer published. Costs one volatile read unless the consumer is parked; then the producer wakes it if it
   * waits for anything (no gather) or its claim reached the gather target, and if its CAS is the one that takes
   * the wake: one unpark per park, however many producers publish meanwhile.
   */
  @Override
  public void signalAllWhenBlocking() {
    if (parked != 0) {
      long target = gatherTarget;
      Sequence c = cursor;
      if ((target == NO_GATHER || c == null || c.get() >= target) && PARKED.compareAndSet(this, 1, 0)) {
        Thread thread = consumer;
        if (thread != null) {
          LockSupport.unpark(thread);
        }
      }
    }
  }

  @Override
  public String toString() {
    return "ConsumerWaitStrategy{" + mode + '}';
  }
}
