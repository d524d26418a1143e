package dev.ringbatch.internal.ring;

import dev.ringbatch.internal.shared.Checks;
import dev.ringbatch.internal.shared.Threads;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ForkJoinWorkerThread;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The future {@code submit} returns: a {@link CompletableFuture} in every respect (dependent actions, {@code
 * orTimeout}, {@code cancel}), except that a caller blocked in {@link #join}, {@link #get()} or
 * {@link #get(long, TimeUnit)} (and so in {@code submitAndWait}) parks on a field of its own rather than on
 * CompletableFuture's stack of {@code Signaller} nodes: no allocation, no stack to push and pop, and the party
 * that completes the future learns whether anybody waits. The batch completer uses that to wake a batch's callers
 * after all its futures are complete, and to count them for the consumer's self-clocked wait ({@link SelfClock}).
 * A platform-thread caller spins about a microsecond first while the sink writes quickly ({@link Spinning},
 * {@link SpinHint}). A second thread waiting on the same future, a future with dependent actions, and a
 * ForkJoinPool worker fall back to CompletableFuture's own waiting (see {@link #SHARED}).
 *
 * <p>No wake-up is lost: a waiter publishes itself in {@code waiter} (a CAS) and then reads {@link #isDone()};
 * the completer completes (a CAS on the result) and then reads {@code waiter}. Of two such store-then-load pairs
 * at least one sees the other's store. {@code waiter} moves {@code null -> thread} (the waiter), then either
 * {@code thread -> null} (the waiter left: done, timed out, interrupted) or {@code thread -> CLAIMED} (a completer
 * took the wake and unparks the thread). Every way to complete the future wakes a waiter: the public completion
 * methods are overridden, and the batcher's completer wakes through {@link #completeFor}/{@link #failFor} and then
 * {@link #claim}. jcstress {@code ItemFutureWakeStress} checks the handshake; {@code ItemFutureTest} every way to
 * complete.
 *
 * @param <T> the result type
 */
public class ItemFuture<T> extends CompletableFuture<T> {
  /** The wake was taken by a completer: the waiter is, or will be, unparked. */
  private static final Object CLAIMED = new Object();
  private static final int DONE = 0;
  private static final int INTERRUPTED = 1;
  private static final int TIMED_OUT = 2;
  /**
   * Wait the CompletableFuture way: another thread already waits on this future, or dependent actions are
   * registered (CompletableFuture wakes a waiter before the dependents registered ahead of it, which may block or
   * wait for that very caller), or the caller is a ForkJoinPool worker (CompletableFuture blocks it through
   * {@code ForkJoinPool.managedBlock}, so that the pool can add a worker meanwhile).
   */
  private static final int SHARED = 3;
  /**
   * Checks for the result of a {@link Spinning} future before its platform-thread caller parks: about 1.3 µs on the
   * 2-core machine this was tuned on (a {@code Thread.onSpinWait()} there takes 28 ns), longer than the consumer
   * of an idle batcher with a quick sink takes to answer, shorter than a futex round trip.
   */
  static final int SPINS = 48;

  private static final VarHandle WAITER;

  static {
    try {
      WAITER = MethodHandles.lookup().findVarHandle(ItemFuture.class, "waiter", Object.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  /** {@code null}, the waiting thread, or {@link #CLAIMED}: see the class comment. */
  private volatile @Nullable Object waiter;

  // ---------------------------------------------------------------- the waiting caller

  @Override
  public T join() {
    if (!isDone()) {
      refuseWaitHere();
      await(false, false, 0); // SHARED: super.join() waits the CompletableFuture way
    }
    return super.join();
  }

  @Override
  public T get() throws InterruptedException, ExecutionException {
    if (!isDone()) {
      refuseWaitHere();
    }
    if (!isDone() && await(true, false, 0) == INTERRUPTED) {
      throw new InterruptedException();
    }
    return super.get(); // done, or SHARED: then it waits the CompletableFuture way
  }

  @Override
  public T get(long timeout, TimeUnit unit) throws InterruptedException, ExecutionException, TimeoutException {
    long nanos = unit.toNanos(timeout);
    if (!isDone()) {
      refuseWaitHere();
      int outcome = await(true, true, nanos);
      if (outcome == INTERRUPTED) {
        throw new InterruptedException();
      } else if (outcome == TIMED_OUT) {
        throw new TimeoutException();
      } else if (outcome == SHARED) {
        return super.get(timeout, unit);
      }
    }
    return super.get();
  }

  /**
   * Parks until the future is done, or (as the flags say) the thread is interrupted or {@code nanos} pass. An
   * interrupt that does not end the wait ({@code join}) is kept and set again on return, as
   * CompletableFuture's join does.
   */
  private int await(boolean interruptible, boolean timed, long nanos) {
    if (interruptible && Thread.interrupted()) {
      return INTERRUPTED;
    }
    if (timed && nanos <= 0) {
      return TIMED_OUT;
    }
    long deadline = timed ? System.nanoTime() + nanos : 0;
    Thread me = Thread.currentThread();
    if (spinUntilDone(me)) {
      return DONE;
    }
    if (getNumberOfDependents() > 0 || me instanceof ForkJoinWorkerThread || !register(me)) {
      return SHARED;
    }
    boolean keptInterrupt = false;
    int outcome = DONE;
    while (!isDone()) {
      if (timed) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          outcome = TIMED_OUT;
          break;
        }
        LockSupport.parkNanos(this, left);
      } else {
        LockSupport.park(this);
      }
      if (Thread.interrupted()) {
        if (interruptible && !isDone()) {
          outcome = INTERRUPTED;
          break;
        }
        keptInterrupt = true; // park would return at once while it is set: set again on return
      }
    }
    if (leave(me) && outcome != DONE) {
      // A wake is only claimed after completion: whatever ended the wait, the result is there, and it is returned
      // as CompletableFuture returns a result that came in time, with an interrupt that came too set again.
      keptInterrupt |= outcome == INTERRUPTED;
      outcome = DONE;
    }
    if (keptInterrupt) {
      me.interrupt();
    }
    return outcome;
  }

  /**
   * Spins briefly on a platform thread, whose park and wake-up cost a futex round trip each: a result a few hundred
   * nanoseconds away (a batcher whose consumer is running) is worth the wait. A virtual thread parks at once: its
   * carrier has other callers to run. Returns whether the future is done.
   */
  private boolean spinUntilDone(Thread me) {
    int spins = spins();
    if (spins > 0 && !Threads.isVirtual(me)) {
      for (int i = 0; i < spins; i++) {
        if (isDone()) {
          return true;
        }
        Thread.onSpinWait();
      }
    }
    return false;
  }

  /**
   * Loads and initializes the classes {@link #await} needs, on the thread that builds a batcher: a virtual thread
   * that loads a class pins its carrier meanwhile, and a burst of first callers would all wait on that load.
   */
  public static void preloadWaitingPath() {
    Threads.isVirtual(Thread.currentThread());
    CallerWait.load();
  }

  /** How many times a platform-thread caller checks for the result, spinning, before it parks: none by default. */
  int spins() {
    return 0;
  }

  /** Throws if the calling thread must not wait for this future: only an {@link OnConsumer} future refuses. */
  void refuseWaitHere() {
  }

  /**
   * The future of an item submitted on a consumer thread of its own batcher (from its sink, say): that thread
   * cannot wait for it, since the item is written only after the sink returns. A wait there throws
   * {@link IllegalStateException} at once, as {@code submitAndWait} does, instead of waiting until a close.
   */
  public static final class OnConsumer<T> extends ItemFuture<T> {
    private final ConsumerGroup consumers;
    private final String batcher;

    public OnConsumer(ConsumerGroup consumers, String batcher) {
      this.consumers = consumers;
      this.batcher = batcher;
    }

    @Override
    void refuseWaitHere() {
      Checks.requireState(!consumers.contains(Thread.currentThread()), "an item of batcher '%s' must not be waited"
          + " for on its consumer thread (for example in its sink): it is written only after the sink returns,"
          + " so the wait would wait for itself; attach a dependent action instead", batcher);
    }
  }

  /**
   * The future of an item submitted while the sink writes quickly ({@link SpinHint}): a platform-thread caller
   * spins about a microsecond before it parks. A class of its own rather than a field, so that futures stay as
   * small as a plain CompletableFuture.
   */
  public static final class Spinning<T> extends ItemFuture<T> {
    @Override
    int spins() {
      return SPINS;
    }
  }

  /** Publishes {@code me} as the waiter; false if another thread waits already. It must then re-read isDone. */
  public boolean register(Thread me) {
    return WAITER.compareAndSet(this, null, me);
  }

  /** Stops waiting. Returns true if the wait was claimed meanwhile: the future is done. */
  boolean leave(Thread me) {
    if (WAITER.compareAndSet(this, me, null)) {
      return false;
    }
    waiter = null; // CLAIMED: nobody claims a wake from anything but a thread, so it may be cleared
    return true;
  }

  // ---------------------------------------------------------------- the completing side

  /**
   * Completes with {@code value} without waking the waiter; returns whether a thread waits (the caller must then
   * wake it with {@link #claim}). The batch completer's path: dependent actions run here.
   */
  public boolean completeFor(@Nullable Object value) {
    @SuppressWarnings("unchecked")
    T typed = (T) value;
    super.complete(typed);
    return waiter instanceof Thread;
  }

  /** As {@link #completeFor}, failing with {@code cause}. */
  public boolean failFor(Throwable cause) {
    super.completeExceptionally(cause);
    return waiter instanceof Thread;
  }

  /** Wakes the waiting thread, if one waits and nobody claimed it yet. Returns whether this call woke it. */
  public boolean claim() {
    Object w = waiter;
    if (!(w instanceof Thread thread) || !WAITER.compareAndSet(this, w, CLAIMED)) {
      return false; // nobody waits, or it left meanwhile, or another party claimed it: not ours to wake
    }
    LockSupport.unpark(thread);
    return true;
  }

  /** Whether a virtual thread waits on this future (as far as a racy read tells: it only picks how to wake it). */
  public boolean virtualWaiter() {
    return waiter instanceof Thread t && Threads.isVirtual(t);
  }

  @Override
  public boolean complete(T value) {
    boolean completed = super.complete(value);
    claim(); // wakes the waiting thread, if any: a completion by another path than the batch completer's
    return completed;
  }

  @Override
  public boolean completeExceptionally(Throwable ex) {
    boolean completed = super.completeExceptionally(ex);
    claim();
    return completed;
  }

  @Override
  public boolean cancel(boolean mayInterruptIfRunning) {
    boolean cancelled = super.cancel(mayInterruptIfRunning);
    claim();
    return cancelled;
  }

  @Override
  public void obtrudeValue(T value) {
    super.obtrudeValue(value);
    claim();
  }

  @Override
  public void obtrudeException(Throwable ex) {
    super.obtrudeException(ex);
    claim();
  }

  /**
   * As CompletableFuture's, through {@link #complete} and {@link #completeExceptionally} so that a waiter wakes
   * (CompletableFuture's own runs a task that completes the future by a path no subclass can see).
   */
  @Override
  public CompletableFuture<T> completeAsync(Supplier<? extends T> supplier, Executor executor) {
    Objects.requireNonNull(supplier, "supplier");
    Objects.requireNonNull(executor, "executor");
    executor.execute(() -> {
      if (isDone()) {
        return;
      }
      T value;
      try {
        value = supplier.get();
      } catch (Throwable t) {
        completeExceptionally(t instanceof CompletionException ? t : new CompletionException(t));
        return;
      }
      complete(value);
    });
    return this;
  }
}
