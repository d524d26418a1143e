package dev.ringbatch.internal;

import static java.util.Objects.requireNonNull;

import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;

/**
 * The one thread a batcher may start besides its consumer (a sharded batcher: besides its shards' consumers): it
 * runs the user code a close calls after its report. Made by the configured {@code ThreadFactory} when the batcher
 * is built (a close never calls the factory, which may block), and started only if a close has such code to call.
 *
 * <p>It runs that code in one sequence, in the order the consumer runs its own: the recorders, then the callers'
 * dependent actions, the flushes' and the log handlers, then {@code recordClosed}; then a thread factory's
 * {@code Thread.interrupt()} of a consumer taken from user code; last, the watch over slots claimed but not
 * published ({@link StragglerWatch}). A callback that blocks holds up what comes after it, as it would on the
 * consumer thread; never the close, which waits for the sequence only until the end of its grace.
 */
final class CloseHelper implements Runnable {
  private static final System.Logger LOG = System.getLogger(CloseHelper.class.getName());
  /** The wait's slices, between which it checks its {@link PauseAwareDeadline}. */
  private static final long SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
  /** How often the wait before the grace checks that the helper's thread is still alive. */
  private static final long THREAD_CHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

  private final String name;
  private final Thread thread;
  private final AtomicBoolean started = new AtomicBoolean();
  /** Whether the steps ran: a factory's thread may call {@link #run} twice, or at any time. */
  private final AtomicBoolean ran = new AtomicBoolean();
  private final CountDownLatch told = new CountDownLatch(1);
  /** Written before {@link Thread#start()}, which publishes them to the thread. */
  private List<Runnable> steps = List.of();
  private List<StragglerWatch> watches = List.of();

  private CloseHelper(String name, @Nullable ThreadFactory factory) {
    this.name = name;
    Thread made;
    if (factory == null) {
      made = new Thread(this, "ringbatch-" + name + "-close");
      made.setDaemon(true);
    } else {
      made = requireNonNull(factory.newThread(this), "threadFactory returned null");
    }
    this.thread = made;
  }

  /** The helper of batcher {@code name}, made by {@code factory} (null: a daemon thread of its own), not started. */
  static CloseHelper create(String name, @Nullable ThreadFactory factory) {
    return new CloseHelper(name, factory);
  }

  /** Whether {@code thread} is this helper's: a factory must not return one thread for two uses. */
  boolean runsOn(Thread thread) {
    return this.thread == thread;
  }

  /**
   * Runs the user code of {@code endings} (each its own part, in turn), then {@code last} (a sharded batcher's
   * recordClosed) and the endings' interrupts, then watches their stragglers; waits for all but the watch until
   * {@code until} (which a pause of the whole process does not use up). Runs nothing, and starts no thread, if there
   * is nothing to run. Once; returns whether the closing thread was interrupted while it waited.
   */
  boolean runAndAwait(List<CloseProtocol.Ending> endings, @Nullable Runnable last, long until) {
    List<Runnable> sequence = new ArrayList<>();
    List<StragglerWatch> watching = new ArrayList<>();
    for (CloseProtocol.Ending ending : endings) {
      sequence.addAll(ending.tell());
    }
    if (last != null) {
      sequence.add(last);
    }
    for (CloseProtocol.Ending ending : endings) {
      if (ending.interrupt() != null) {
        sequence.add(ending.interrupt());
      }
      if (ending.watch() != null) {
        watching.add(ending.watch());
      }
    }
    if (sequence.isEmpty() && watching.isEmpty()) {
      return false;
    }
    Checks.requireState(started.compareAndSet(false, true), "the close helper of batcher '%s' ran already", name);
    steps = sequence;
    watches = watching;
    try {
      thread.start();
    } catch (Throwable noThread) { // out of memory or threads, or a factory's odd thread: tell them here
      SafeLog.log(LOG, Level.WARNING, "batcher '" + name + "': its close helper could not start; the close runs"
          + " the user code that follows its report itself" + (watching.isEmpty() ? "" : ", and nobody watches the"
          + " slots it found claimed but not published: an item published there will not be failed"), noThread);
      if (ran.compareAndSet(false, true)) {
        runSteps();
      }
      return false;
    }
    return await(until);
  }

  @Override
  public void run() {
    if (!started.get() || !ran.compareAndSet(false, true)) { // a thread factory's thread calling it on its own
      throw new IllegalStateException("the close helper of batcher '" + name + "' runs once, when a close starts it");
    }
    runSteps();
    StragglerWatch.watchAll(watches);
  }

  private void runSteps() {
    try {
      for (Runnable step : steps) {
        try {
          step.run();
        } catch (Throwable own) { // every step guards user code: only an Error of our own; the next step goes on
          SafeLog.log(LOG, Level.ERROR, "batcher '" + name + "': a step of its close failed", own);
        }
      }
    } finally {
      told.countDown();
    }
  }

  /**
   * Waits for the sequence (all but the watch) until {@code until}, the grace in slices that a pause of the process
   * does not use up. A thread that ended without running it (a factory's thread that ignores its Runnable) leaves it
   * to the closing thread, as a thread that cannot start does.
   */
  private boolean await(long until) {
    boolean interrupted = false;
    PauseAwareDeadline grace = null;
    while (true) {
      long toGrace = until - CloseProtocol.GRACE_NANOS - System.nanoTime();
      if (toGrace <= 0 && grace == null) {
        grace = new PauseAwareDeadline(until);
      }
      try {
        if (told.await(grace != null ? SLICE_NANOS : Math.min(toGrace, THREAD_CHECK_NANOS), TimeUnit.NANOSECONDS)) {
          return interrupted;
        }
      } catch (InterruptedException e) {
        interrupted = true; // the wait goes on; the caller sets the flag again
      }
      if (!thread.isAlive() && ran.compareAndSet(false, true)) {
        SafeLog.log(LOG, Level.WARNING, "batcher '" + name + "': the thread its factory made for its close helper"
            + " ended without running it; the close runs the user code that follows its report itself", null);
        runSteps();
        return interrupted;
      }
      if (grace != null && grace.passed()) {
        return interrupted; // a callback blocks: what follows it runs when it returns
      }
    }
  }

  @Override
  public String toString() {
    return "CloseHelper{" + name + ", started=" + started.get() + '}';
  }
}
