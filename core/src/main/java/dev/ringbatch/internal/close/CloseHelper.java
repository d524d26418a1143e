package dev.ringbatch.internal.close;

import static java.util.Objects.requireNonNull;

import dev.ringbatch.internal.consume.StragglerWatch;
import dev.ringbatch.internal.shared.Checks;
import dev.ringbatch.internal.shared.SafeLog;
import dev.ringbatch.internal.shared.Threads;
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
 * is built (a close never calls the factory, which may block), a daemon as the consumer's default is, and started
 * only if a close has such code to call.
 *
 * <p>It runs that code in one sequence: first the JDK's own {@code interrupt()} of a consumer taken from user code
 * (a sink in interruptible I/O gives up, and lets go of what it holds, before any callback may need it; it may run
 * a channel's close, so never on the closing thread); then, in the order the consumer runs its own, the recorders,
 * the callers' dependent actions, the flushes' and the log handlers, then {@code recordClosed}; then the watch over
 * slots claimed but not published ({@link StragglerWatch}); last, an {@code interrupt()} that the consumer thread's
 * class overrides (user code, which must hold up no caller and no watch). A callback that
 * blocks holds up what comes after it, as it would on the consumer thread; never the close, which waits for the
 * sequence only until the end of its grace. A factory's thread that does not run it (it ended without running it,
 * or has not begun by the end of the grace), or whose class overrides {@code start()} (user code, which may block,
 * and the close does not call it), is replaced by a daemon thread of the close's own, logged: the one thread a
 * batcher may start outside its factory, and only when the factory's thread fails it.
 */
public final class CloseHelper implements Runnable {
  private static final System.Logger LOG = System.getLogger(CloseHelper.class.getName());
  /** The wait's slices, between which it checks its {@link PauseAwareDeadline}. */
  private static final long SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

  private final String name;
  private final Thread thread;
  private final AtomicBoolean started = new AtomicBoolean();
  /** Whether a thread began the sequence: the factory's, or the close's own in its place. */
  private final AtomicBoolean begun = new AtomicBoolean();
  private final CountDownLatch told = new CountDownLatch(1);
  /** Written before {@link #started} is set, which publishes them to whichever thread runs the helper. */
  private List<Runnable> steps = List.of();
  private List<StragglerWatch> watches = List.of();
  private List<Runnable> interrupts = List.of();

  /** The helper of batcher {@code name}, made by {@code factory} (null: a daemon thread of its own), not started. */
  public CloseHelper(String name, @Nullable ThreadFactory factory) {
    this.name = name;
    Thread made;
    if (factory == null) {
      made = new Thread(this, "ringbatch-" + name + "-close");
    } else {
      made = requireNonNull(factory.newThread(this), "threadFactory returned null");
    }
    try {
      made.setDaemon(true); // it must never keep a JVM alive: the close's work is done when the JVM exits
    } catch (RuntimeException alreadyStarted) { // a factory's odd thread: starting it fails too, and is handled
      SafeLog.log(LOG, Level.DEBUG, "batcher '" + name + "': its close helper cannot be made a daemon", alreadyStarted);
    }
    this.thread = made;
  }

  /** Whether {@code thread} is this helper's: a factory must not return one thread for two uses. */
  public boolean runsOn(Thread thread) {
    return this.thread == thread;
  }

  /**
   * Runs the endings' JDK interrupts, then the user code of {@code endings} (each its own part, in turn), then
   * {@code last} (a sharded batcher's recordClosed), then watches their stragglers and calls their overridden
   * interrupts; waits for all but the watch and the overridden interrupts until {@code until} (which a pause of the whole process does not use up). Runs nothing, and
   * starts no thread, if there is nothing to run. Once; returns whether the closing thread was interrupted while it
   * waited.
   */
  public boolean runAndAwait(List<CloseProtocol.Ending> endings, @Nullable Runnable last, long until) {
    List<Runnable> sequence = new ArrayList<>();
    List<StragglerWatch> watching = new ArrayList<>();
    List<Runnable> interrupting = new ArrayList<>();
    for (CloseProtocol.Ending ending : endings) { // the JDK's own interrupts first: a sink gives up what it holds
      if (ending.interrupt() != null && ending.interruptIsJdkCode()) {
        sequence.add(ending.interrupt());
      }
    }
    for (CloseProtocol.Ending ending : endings) {
      sequence.addAll(ending.tell());
      if (ending.watch() != null) {
        watching.add(ending.watch());
      }
      if (ending.interrupt() != null && !ending.interruptIsJdkCode()) {
        interrupting.add(ending.interrupt());
      }
    }
    if (last != null) {
      sequence.add(last);
    }
    if (sequence.isEmpty() && watching.isEmpty() && interrupting.isEmpty()) {
      return false;
    }
    Checks.requireState(!started.get(), "the close helper of batcher '%s' ran already", name);
    steps = sequence;
    watches = watching;
    interrupts = interrupting;
    started.set(true); // publishes the lists to a factory's thread that runs the helper on its own, at any time
    if (!Threads.isJdkMethod(thread, "start")) {
      replace("overrides start(), user code the close does not run on the closing thread");
    } else {
      try {
        thread.start();
      } catch (Throwable noThread) { // out of memory or threads, or a factory's odd thread
        replace("could not start (" + SafeLog.describe(noThread) + ")");
      }
    }
    return await(until);
  }

  @Override
  public void run() {
    if (!started.get() || !begun.compareAndSet(false, true)) {
      return; // a factory's thread running it on its own, or too late: the close's own thread has it
    }
    runAll(null);
  }

  /** The sequence, then {@code warning} (a log line is user code: after the callers are told), the watch, the rest. */
  private void runAll(@Nullable String warning) {
    try {
      runEach(steps);
    } finally {
      told.countDown();
    }
    if (warning != null) {
      SafeLog.log(LOG, Level.WARNING, warning, null);
    }
    StragglerWatch.watchAll(watches);
    runEach(interrupts);
  }

  private void runEach(List<Runnable> parts) {
    for (Runnable part : parts) {
      try {
        part.run();
      } catch (Throwable own) { // every part guards user code: only an Error of our own; the next part goes on
        SafeLog.log(LOG, Level.ERROR, "batcher '" + name + "': a step of its close failed", own);
      }
    }
  }

  /**
   * The factory's thread did not run the sequence: a daemon thread of the close's own runs it, unless the factory's
   * began meanwhile; if none can start either, the closing thread tells them itself (no watch: it must return).
   */
  private void replace(String why) {
    if (!begun.compareAndSet(false, true)) {
      return;
    }
    // Logged by the thread that runs the sequence, never before it on the closing thread: a log handler is user code
    String warning = "batcher '" + name + "': the thread its factory made for its close helper " + why + "; a thread"
        + " of the close's own runs the user code that follows its report";
    try {
      Thread own = new Thread(() -> runAll(warning), "ringbatch-" + name + "-close");
      own.setDaemon(true);
      own.start();
    } catch (Throwable noThread) { // out of memory or threads: tell them here
      runEach(steps);
      runEach(interrupts);
      told.countDown();
      SafeLog.log(LOG, Level.WARNING, warning, null);
      if (!watches.isEmpty()) {
        SafeLog.log(LOG, Level.ERROR, "batcher '" + name + "': no thread could watch the slots its close found"
            + " claimed but not published; an item published there will not be failed", noThread);
      }
    }
  }

  /**
   * Waits for the sequence (all but the watch) until {@code until}, the grace in slices that a pause of the process
   * does not use up. A factory's thread that ended without running it, or has not begun it by the end of the grace,
   * is replaced ({@link #replace}).
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
        if (told.await(grace != null ? SLICE_NANOS : Math.min(toGrace, CloseProtocol.THREAD_CHECK_NANOS), TimeUnit.NANOSECONDS)) {
          return interrupted;
        }
      } catch (InterruptedException e) {
        interrupted = true; // the wait goes on; the caller sets the flag again
      }
      if (!begun.get() && !thread.isAlive()) {
        replace("ended without running it");
      }
      if (grace != null && grace.passed()) {
        if (!begun.get()) {
          replace("had not begun to run it when the close's grace ended");
        }
        return interrupted; // a callback blocks: what follows it runs when it returns
      }
    }
  }

  @Override
  public String toString() {
    return "CloseHelper{" + name + ", started=" + started.get() + '}';
  }
}
