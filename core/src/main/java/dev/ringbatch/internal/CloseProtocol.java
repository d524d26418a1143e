package dev.ringbatch.internal;

import dev.ringbatch.BatcherClosedException;
import dev.ringbatch.BatcherStats;
import dev.ringbatch.CloseReport;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * Closing a batcher, as a straight script: begin (refuse new items) → publish the close marker → wait for the
 * consumer to write everything before it → if time ran out, take over ({@link HandOver}) → fail only what the
 * consumer provably will not touch → report. Runs once, on the first closing thread; later and concurrent
 * calls wait for that close's report up to their own timeout, and a call from the closing thread itself (a
 * dependent action of a future this close failed) returns at once.
 *
 * <p>The closing thread's interrupt does not cut the drain short: {@code close(timeout)} waits the whole
 * timeout for a healthy sink, and the interrupt flag is set again on return.
 */
final class CloseProtocol {
  private static final System.Logger LOG = System.getLogger(CloseProtocol.class.getName());
  /**
   * The one grace of a close past its timeout, for everything it waits for after the timeout: a consumer in its own
   * code to hand over, futures being completed, the user code that follows its report (callbacks, recorders).
   * {@code close(timeout)} returns by {@code timeout + GRACE} (a pause of the whole process aside).
   */
  static final long GRACE_NANOS = TimeUnit.MILLISECONDS.toNanos(200);
  private static final long POLL_NANOS = TimeUnit.MICROSECONDS.toNanos(50);
  /** The user-code wait's slices, between which it checks its {@link PauseAwareDeadline}. */
  private static final long USER_CODE_SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
  /** How often a close waiting for the drain checks that the consumer thread is still alive. */
  private static final long THREAD_CHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

  private final String name;
  private final int ringSize;
  private final PublishGate gate;
  private final CoalescingConsumer<?, ?> consumer;
  /** What the close takes over from the consumer: counted, then told once the report is out. */
  private final Holdings<?, ?> holdings;
  private final Thread consumerThread;
  private final HandOver handOver;
  private final FlushWaiters flushWaiters;
  private final GuardedStatsRecorders recorders;
  /** False for a shard: its sharded batcher tells the shared recorders once, when every shard is closed. */
  private final boolean reportsClose;
  private final Supplier<BatcherStats> stats;

  private final AtomicReference<@Nullable CompletableFuture<CloseReport>> first = new AtomicReference<>();
  /** Completed with the report as soon as it is out, before any user code runs. */
  private final CompletableFuture<CloseReport> published = new CompletableFuture<>();
  /** Completed once the recorders were told ({@link #recorded}). */
  private final CompletableFuture<Void> recorded = new CompletableFuture<>();
  private volatile @Nullable Thread closingThread;
  private volatile long startNanos;
  private volatile long abandoned;
  private volatile @Nullable CloseReport report;
  private volatile @Nullable Throwable abandonment;
  /** Closing thread only: whether it was interrupted before or during the close. */
  private boolean interrupted;
  /** Closing thread only: whether the take-over found the consumer in user code (a call out). */
  private boolean tookFromUserCode;

  CloseProtocol(String name, int ringSize, PublishGate gate, CoalescingConsumer<?, ?> consumer, Holdings<?, ?> holdings,
      Thread consumerThread, HandOver handOver, FlushWaiters flushWaiters, GuardedStatsRecorders recorders,
      boolean reportsClose, Supplier<BatcherStats> stats) {
    this.name = name;
    this.ringSize = ringSize;
    this.gate = gate;
    this.consumer = consumer;
    this.holdings = holdings;
    this.consumerThread = consumerThread;
    this.handOver = handOver;
    this.flushWaiters = flushWaiters;
    this.recorders = recorders;
    this.reportsClose = reportsClose;
    this.stats = stats;
  }

  @Nullable CloseReport report() {
    return report;
  }

  /** Completes with the close's report as soon as it is out, before the user code that follows it. */
  CompletableFuture<CloseReport> published() {
    return published;
  }

  /**
   * Completes once the close has told its recorders (of abandoned items, and that it closed): a sharded batcher
   * tells its own recorders after its shards'. Never completed with user code as a dependent.
   */
  CompletableFuture<Void> recorded() {
    return recorded;
  }

  /** The failure flushes get after a close that abandoned items; null otherwise. */
  @Nullable Throwable abandonment() {
    return abandonment;
  }

  CloseReport close(Duration timeout) {
    CompletableFuture<CloseReport> mine = new CompletableFuture<>();
    CompletableFuture<CloseReport> earlier = first.compareAndExchange(null, mine);
    if (earlier != null) {
      if (closingThread == Thread.currentThread() || consumer.completingOnThisThread()) {
        // Called back from a future this close is failing, or from one a completing thread completes, which
        // the close waits for: waiting here would be waiting for ourselves.
        return provisional();
      }
      return LaterClose.await(name, published, timeout, this::provisional);
    }
    startNanos = System.nanoTime();
    closingThread = Thread.currentThread();
    interrupted = Thread.interrupted();
    try {
      CloseReport done = shutDown(timeout);
      mine.complete(done);
      return done;
    } catch (RuntimeException | Error e) {
      published.completeExceptionally(e);
      recorded.complete(null); // nothing more will be told
      mine.completeExceptionally(e);
      throw e;
    } finally {
      closingThread = null;
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private CloseReport shutDown(Duration timeout) {
    long start = startNanos;
    long timeoutNanos = Checks.saturatedNanos(timeout);
    long deadline = start + Math.min(timeoutNanos, Long.MAX_VALUE / 4); // 73 years: no overflow, whatever the origin
    long graceEnd = deadline + GRACE_NANOS; // one for every wait after the timeout
    gate.beginClose();
    boolean drained = publishCloseMarker(deadline) && awaitConsumer(deadline) && consumer.drained();
    Abandonment gathered = new Abandonment();
    Throwable failure = null;
    String orphaned = null;
    boolean interruptConsumer = false;
    if (drained) {
      consumer.awaitCompletions(deadline); // async sinks: callbacks still running on completing threads
    } else {
      String description = "close timed out after " + timeout.toMillis() + " ms";
      consumer.requestAbandon(description, consumerThread);
      int outcome = takeOver(graceEnd);
      if (outcome == HandOver.STOPPED) {
        drained = awaitConsumer(graceEnd) && consumer.drained();
      } else if (outcome == HandOver.TAKEN) {
        consumer.failHoldings(gathered, graceEnd); // settled and gathered; nobody is told before the report is out
        holdings.count(gathered);
        // A batch settled before the take-over (counted) may still be completing its futures: flushes and the
        // report wait for them, within the grace, unless its dependent actions block.
        consumer.awaitCompletions(graceEnd);
        // nothing was left to abandon (an idle batcher closed with 0, say), nor a slot whose item may come later
        drained = gathered.items() == 0 && gathered.stragglers().isEmpty();
        // Only a consumer taken from user code (a sink, a dependent action, a ticker) is interrupted: one that
        // yielded at a checkpoint is on its way out, and one not yet started is in its thread factory's code.
        interruptConsumer = tookFromUserCode && consumerThread.isAlive() && !consumer.terminated().isDone();
      } else if (consumer.failedFatally()) { // it stopped on a failure of its own and failed what it held
        orphaned = "batcher '" + name + "': its consumer had stopped on a failure of its own (logged) and failed"
            + " the items it held itself";
        failure = new BatcherClosedException(name, ringSize, true, description + " after the consumer had"
            + " stopped on a failure of its own; the items it held failed");
      } else {
        orphaned = "batcher '" + name + "': the consumer did not hand over within "
            + TimeUnit.NANOSECONDS.toMillis(GRACE_NANOS) + " ms of the timeout; it fails what it"
            + " holds itself when it gets to run";
        failure = new BatcherClosedException(name, ringSize, true, description + " before the consumer handed"
            + " over; the items it holds fail when it does");
      }
    }
    gate.closed();
    long abandonedItems = gathered.items();
    abandoned = abandonedItems;
    if (abandonedItems > 0) {
      failure = new BatcherClosedException(name, ringSize, true,
          "close timed out after " + timeout.toMillis() + " ms and abandoned " + abandonedItems + " item(s)");
    }
    if (failure == null && !gathered.stragglers().isEmpty()) { // flushes must not say their items were written
      failure = new BatcherClosedException(name, ringSize, true, "close timed out after " + timeout.toMillis()
          + " ms while " + gathered.stragglers().size() + " slot(s) were claimed but not published; an item"
          + " published there fails as abandoned");
    }
    abandonment = failure;
    CloseReport done = new CloseReport(drained, abandonedItems, Duration.ofNanos(System.nanoTime() - start),
        stats.get());
    report = done;
    published.complete(done); // later and concurrent closes return it from now on
    // No user code ran before this point. What follows is user code (flush futures' and abandoned items'
    // dependent actions, recorders, log handlers), and whatever it calls back finds the close finished: flush()
    // completes at once, close() returns this report, stats() includes every abandoned item.
    Throwable flushFailure = failure;
    String orphanNote = orphaned;
    boolean wasDrained = drained;
    boolean interrupt = interruptConsumer;
    String unwatched = holdings.watchStragglers(gathered); // a thread of its own, never waited for
    long until = graceEnd;
    // Told once the recorders include their items, unless a recorder still blocks 100 ms after the report.
    CompletableFuture<Void> abandonedRecorded = new CompletableFuture<>();
    // A thread per kind of user code, so that none that blocks holds up another kind: the callers' dependent
    // actions, the flushes' (and the log handlers), the recorders, and a thread factory's Thread.interrupt().
    Runnable tellCallers = () -> holdings.tellAfter(abandonedRecorded, gathered, System.nanoTime() + GRACE_NANOS / 2);
    Runnable tellFlushes = () -> {
      flushWaiters.completeAll(flushFailure);
      if (orphanNote != null) {
        SafeLog.log(LOG, Level.ERROR, orphanNote, null);
      }
      if (unwatched != null) {
        SafeLog.log(LOG, Level.ERROR, unwatched, null);
      }
      if (!wasDrained) {
        SafeLog.log(LOG, Level.WARNING, "batcher '" + name + "' closed without draining: " + done, null);
      }
    };
    Runnable tellRecorders = () -> {
      try {
        CompletableFuture<Void> consumersOwn = consumer.ownRecorded();
        if (consumersOwn != null) { // the consumer failed what it held itself (a fatal error): its recorders first
          // A grace of this thread's own, which the close does not wait for: the hand-over may have used the close's.
          Threads.awaitQuietly(consumersOwn, Math.max(until, System.nanoTime() + GRACE_NANOS));
        }
        try {
          holdings.record(gathered);
        } finally {
          abandonedRecorded.complete(null);
        }
        if (reportsClose) {
          recorders.recordClosed(done);
        }
      } finally {
        recorded.complete(null);
      }
    };
    if (interrupt) { // a sink blocked in interruptible I/O may give up
      runUserCode(until, tellCallers, tellFlushes, tellRecorders, this::interruptQuietly);
    } else {
      runUserCode(until, tellCallers, tellFlushes, tellRecorders);
    }
    return done;
  }

  /** A thread factory's thread may override interrupt(): user code, which must not stop the close. */
  private void interruptQuietly() {
    if (consumer.terminated().isDone()) {
      return; // back from the user code and gone meanwhile: the thread may be running its factory's code now
    }
    try {
      consumerThread.interrupt();
    } catch (Throwable t) {
      SafeLog.log(LOG, Level.WARNING, "batcher '" + name + "': interrupting its consumer thread threw", t);
    }
  }

  /**
   * Runs the user code that follows the report, each part on a thread of its own, and waits for them until
   * {@code until} (which a pause of the whole process does not use up: {@link PauseAwareDeadline}): a dependent
   * action or recorder that blocks cannot hold the close past its timeout and grace, nor the other parts. Every
   * future is completed by then unless such a callback still blocks; the futures after it in its part complete
   * when it returns.
   */
  private void runUserCode(long until, Runnable... parts) {
    CountDownLatch done = new CountDownLatch(parts.length);
    for (int i = 0; i < parts.length; i++) {
      Runnable part = parts[i];
      Runnable counted = () -> {
        try {
          part.run();
        } finally {
          done.countDown();
        }
      };
      if (!Threads.startDaemon("ringbatch-" + name + "-close" + (i == 0 ? "" : "-" + i), counted)) {
        counted.run(); // out of memory or threads: tell them here
      }
    }
    // Up to the grace in one wait (the close's timeout may be long: no wake-ups meanwhile), the grace in slices.
    long graceStart = until - GRACE_NANOS;
    while (graceStart - System.nanoTime() > 0) {
      try {
        if (done.await(graceStart - System.nanoTime(), TimeUnit.NANOSECONDS)) {
          return;
        }
      } catch (InterruptedException e) {
        interrupted = true; // restored on return; the wait goes on
      }
    }
    PauseAwareDeadline grace = new PauseAwareDeadline(until); // a pause of the process does not use it up
    while (true) {
      try {
        if (done.await(USER_CODE_SLICE_NANOS, TimeUnit.NANOSECONDS)) {
          return;
        }
      } catch (InterruptedException e) {
        interrupted = true; // restored on return; the wait goes on
      }
      if (grace.passed()) {
        return; // a callback blocks: its future, and those after it in its part, complete when it returns
      }
    }
  }

  /** Publishes the close marker, waiting (parked, woken as the consumer frees room) until {@code deadline}. */
  private boolean publishCloseMarker(long deadline) {
    while (true) {
      // In slices, to notice a consumer that is gone and will never make room.
      long slice = Math.min(deadline, System.nanoTime() + THREAD_CHECK_NANOS);
      long sequence = gate.awaitRoom(slice, this::noteInterrupt);
      if (sequence >= 0) {
        gate.publishCloseMarker(sequence);
        consumer.closeMarkerPublished();
        return true;
      }
      if (deadline - System.nanoTime() <= 0 || consumerStopped()) {
        return false;
      }
    }
  }

  private void noteInterrupt() {
    interrupted = true;
  }

  /** Waits until the consumer thread has ended or {@code deadline} passed; true if it ended. */
  private boolean awaitConsumer(long deadline) {
    while (true) {
      long remaining = deadline - System.nanoTime();
      if (remaining <= 0) {
        return consumer.terminated().isDone();
      }
      if (!consumerThread.isAlive()) {
        return consumer.terminated().isDone(); // a thread that never ran the consumer ends nothing
      }
      try {
        consumer.terminated().get(Math.min(remaining, THREAD_CHECK_NANOS), TimeUnit.NANOSECONDS);
        // the run method returned: let the thread end too, so a caller sees no consumer thread left
        consumerThread.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
        return true;
      } catch (InterruptedException e) {
        interrupted = true; // restored on return; the drain goes on
      } catch (TimeoutException notYet) {
        // look again whether the thread is alive
      } catch (ExecutionException impossible) {
        throw new IllegalStateException("consumer termination failed", impossible.getCause());
      }
    }
  }

  private int takeOver(long deadline) {
    PauseAwareDeadline grace = new PauseAwareDeadline(deadline); // a pause of the process does not use it up
    while (true) {
      boolean late = grace.passed();
      int outcome = handOver.state();
      if ((outcome == HandOver.CALLING_OUT || outcome == HandOver.NOT_STARTED) && handOver.tryTakeOver()) {
        tookFromUserCode = outcome == HandOver.CALLING_OUT;
        return HandOver.TAKEN;
      }
      if (outcome == HandOver.TAKEN || outcome == HandOver.STOPPED || outcome == HandOver.ORPHANED) {
        return outcome;
      }
      if (outcome == HandOver.OWNED && consumerStopped() && handOver.takeFromStopped()) {
        return HandOver.TAKEN; // its thread ended (a fatal error) or never ran: nobody else will fail them
      }
      if (outcome == HandOver.OWNED && late && handOver.orphan()) {
        return HandOver.ORPHANED;
      }
      consumer.wake(consumerThread); // in its own code, microseconds from a checkpoint
      LockSupport.parkNanos(this, POLL_NANOS);
      absorbInterrupt();
    }
  }

  private boolean consumerStopped() {
    return consumer.terminated().isDone() || !consumerThread.isAlive();
  }

  private void absorbInterrupt() {
    if (Thread.interrupted()) {
      interrupted = true;
    }
  }

  /** What a close still under way can say: not drained yet, and what it abandoned so far. */
  private CloseReport provisional() {
    CloseReport done = report;
    return done != null ? done
        : new CloseReport(false, abandoned, Duration.ofNanos(System.nanoTime() - startNanos), stats.get());
  }
}
