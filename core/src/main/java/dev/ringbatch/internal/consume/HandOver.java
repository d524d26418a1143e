package dev.ringbatch.internal.consume;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;

/**
 * Who owns the consumer's holdings (the unread ring slots and the batch being filled) when a close gives up
 * waiting for the drain: the one protocol that lets an abandoning close fail only what the consumer provably
 * will not touch.
 *
 * <pre>
 *            callOut()                    tryTakeOver() by close
 *   NOT_STARTED --start()--> OWNED; --tryTakeOver() by close (the consumer never ran)--> TAKEN
 *
 *   OWNED  ----------->  CALLING_OUT  --------------------------->  TAKEN
 *     ^  <-----------                    (consumer stuck in user code)
 *     |      back()
 *     +-- yieldToClose() by the consumer, once close asked: -----------> TAKEN
 *     +-- orphan() by close, if the consumer does not hand over in time: ---------> ORPHANED (consumer cleans up)
 *     +-- stopped() by the consumer after the close marker: -----------> STOPPED
 * </pre>
 *
 * <p>{@code OWNED}: the consumer runs its own code (no user code, no blocking call but its waits, each of which
 * watches {@link #abandonRequested()}); it alone touches its holdings. {@code CALLING_OUT}: the consumer is in
 * user code (the sink, a retry predicate, a stats recorder, futures' dependent actions, a log handler); every
 * item it took from the ring is then in a batch whose settle state ({@link PendingBatch#state}) decides who
 * completes it, and it touches nothing else until {@link #back()} succeeds. Once {@code TAKEN}, the consumer
 * touches nothing more and the close owns the unread slots and the batch being filled. Every transition is a
 * CAS; jcstress {@code HandOverStress} checks that exactly one side ends up owning.
 */
public final class HandOver {
  public static final int OWNED = 0;
  public static final int CALLING_OUT = 1;
  public static final int TAKEN = 2;
  public static final int ORPHANED = 3;
  public static final int STOPPED = 4;
  /** The consumer thread has not begun to run: a close takes its holdings (the unread slots) at once. */
  public static final int NOT_STARTED = 5;

  final AtomicInteger state;
  volatile boolean abandonRequested;

  /** A hand-over whose consumer runs from the start (tests drive it directly). */
  public HandOver() {
    this(OWNED);
  }

  private HandOver(int initial) {
    state = new AtomicInteger(initial);
  }

  /** A hand-over whose consumer thread must {@link #start()} before it owns anything. */
  public static HandOver notStarted() {
    return new HandOver(NOT_STARTED);
  }

  public int state() {
    return state.get();
  }

  /**
   * The consumer thread begins to run: false if a close already took its holdings (a thread factory's thread
   * that ran the consumer late); it must then return at once, touching nothing.
   */
  boolean start() {
    return state.compareAndSet(NOT_STARTED, OWNED) || state.get() == OWNED;
  }

  // ---- consumer thread

  /** Before user code: false if the consumer must not call out (close asked; it should yield instead). */
  public boolean callOut() {
    return !abandonRequested && state.compareAndSet(OWNED, CALLING_OUT);
  }

  /** After user code: false if a close took over meanwhile; the consumer must then stop, touching nothing. */
  public boolean back() {
    return state.compareAndSet(CALLING_OUT, OWNED);
  }

  /**
   * Runs {@code userCode} (a ticker, a log handler, a flush's dependent actions) as a call out, where a close can
   * take over from it: stops the consumer with {@link ConsumerStop#YIELD} if a close asked first, or with
   * {@link ConsumerStop#TAKEN} if one took over meanwhile.
   */
  public void callOut(Runnable userCode) {
    callOut(() -> {
      userCode.run();
      return 0L;
    }); // rare paths (a log line, a finished flush): the lambda costs nothing that matters
  }

  /** As {@link #callOut(Runnable)}, for user code that reads a clock. */
  public long callOut(LongSupplier userCode) {
    if (!callOut()) {
      throw ConsumerStop.YIELD;
    }
    long value = userCode.getAsLong();
    if (!back()) {
      throw ConsumerStop.TAKEN;
    }
    return value;
  }

  /** Whether an abandoning close waits for the consumer to give up its holdings. */
  public boolean abandonRequested() {
    return abandonRequested;
  }

  /**
   * Gives the holdings to the waiting close. False if the close already gave up waiting ({@code ORPHANED}):
   * the consumer must then fail its holdings itself.
   */
  public boolean yieldToClose() {
    return state.compareAndSet(OWNED, TAKEN);
  }

  /** The consumer wrote everything before the close marker and stops. */
  public void stopped() {
    state.compareAndSet(OWNED, STOPPED);
  }

  // ---- closing thread

  /** Asks the consumer to give up; the caller then wakes it and tries {@link #tryTakeOver}. */
  public void requestAbandon() {
    abandonRequested = true;
  }

  /** Takes the holdings from a consumer in user code, or one that never began to run; false if neither. */
  public boolean tryTakeOver() {
    return state.compareAndSet(CALLING_OUT, TAKEN) || state.compareAndSet(NOT_STARTED, TAKEN);
  }

  /** Takes the holdings of a consumer that is provably not running (its thread ended, or never ran). */
  public boolean takeFromStopped() {
    return state.compareAndSet(OWNED, TAKEN);
  }

  /**
   * Gives up waiting for a consumer in its own code that did not hand over in time: from now on it fails its
   * holdings itself when it reaches a checkpoint. False if it moved meanwhile.
   */
  public boolean orphan() {
    return state.compareAndSet(OWNED, ORPHANED);
  }

  @Override
  public String toString() {
    return "HandOver{" + state.get() + (abandonRequested ? ", abandon requested" : "") + '}';
  }
}
