package dev.ringbatch.internal.close;

import dev.ringbatch.BatcherClosedException;
import dev.ringbatch.BatcherStats;
import dev.ringbatch.CloseReport;
import dev.ringbatch.internal.consume.Abandonment;
import dev.ringbatch.internal.consume.CoalescingConsumer;
import dev.ringbatch.internal.consume.FlushWaiters;
import dev.ringbatch.internal.consume.HandOver;
import dev.ringbatch.internal.consume.Holdings;
import dev.ringbatch.internal.consume.StragglerWatch;
import dev.ringbatch.internal.ring.PublishGate;
import dev.ringbatch.internal.shared.Checks;
import dev.ringbatch.internal.shared.GuardedStatsRecorders;
import dev.ringbatch.internal.shared.SafeLog;
import dev.ringbatch.internal.shared.Threads;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * Closing a batcher, as a straight script: begin (refuse new items) → publish the close marker → wait for the
 * consumer to write everything before it → if time ran out, give up and take over ({@link HandOver}) → fail only
 * what the consumer provably will not touch → report → tell, on the {@link CloseHelper}: the user code that follows
 * the report never runs on the closing thread, which waits for it only until the end of its one grace. Runs once,
 * on the first closing thread; later and concurrent calls wait for that close's report up to their own timeout,
 * and a call from a thread completing futures the close waits for returns at once. A sharded batcher runs the same
 * steps, each for all its shards before the next, and one helper for them all.
 *
 * <p>The closing thread's interrupt does not cut the drain short: {@code close(timeout)} waits the whole
 * timeout for a healthy sink, and the interrupt flag is set again on return.
 */
public final class CloseProtocol {
  private static final System.Logger LOG = System.getLogger(CloseProtocol.class.getName());
  /**
   * The one grace of a close past its timeout, for everything it waits for after the timeout: a consumer in its own
   * code to hand over, futures being completed, the user code that follows its report (callbacks, recorders).
   * {@code close(timeout)} returns by {@code timeout + GRACE} (a pause of the whole process aside).
   */
  public static final long GRACE_NANOS = TimeUnit.MILLISECONDS.toNanos(200);
  private static final long POLL_NANOS = TimeUnit.MICROSECONDS.toNanos(50);
  /** How often a close waiting for another thread (the consumer, its helper) checks that it is still alive. */
  static final long THREAD_CHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

  private final String name;
  private final int ringSize;
  private final PublishGate gate;
  private final CoalescingConsumer<?, ?> consumer;
  /** What the close takes over from the consumer: counted, then told once the report is out. */
  private final Holdings<?, ?> holdings;
  private final Thread consumerThread;
  /**
   * Whether the consumer thread's {@code interrupt()} is the JDK's own (a {@code Thread} or virtual thread, not a
   * factory's subclass that overrides it): then the helper calls it first, before any callback that may need what
   * the interrupted sink holds; else last, after every caller is told and the stragglers watched.
   */
  private final boolean jdkInterrupt;
  private final HandOver handOver;
  private final FlushWaiters flushWaiters;
  private final GuardedStatsRecorders recorders;
  /** Runs the user code after the report; a shard's is its sharded batcher's, which runs all shards' at once. */
  private final @Nullable CloseHelper helper;
  private final Supplier<BatcherStats> stats;

  private final AtomicReference<@Nullable CompletableFuture<CloseReport>> first = new AtomicReference<>();
  /** Completed with the report as soon as it is out, before any user code runs. */
  private final CompletableFuture<CloseReport> published = new CompletableFuture<>();
  private volatile @Nullable Thread closingThread;
  private volatile long startNanos;
  private volatile long abandoned;
  private volatile @Nullable CloseReport report;
  private volatile @Nullable Throwable abandonment;
  /** Closing thread only: whether it was interrupted before or during the close. */
  private boolean interrupted;
  /** Closing thread only: whether the take-over found the consumer in user code (a call out). */
  private boolean tookFromUserCode;

  public CloseProtocol(String name, int ringSize, PublishGate gate, CoalescingConsumer<?, ?> consumer, Holdings<?, ?> holdings,
      Thread consumerThread, HandOver handOver, FlushWaiters flushWaiters, GuardedStatsRecorders recorders,
      @Nullable CloseHelper helper, Supplier<BatcherStats> stats) {
    this.name = name;
    this.ringSize = ringSize;
    this.gate = gate;
    this.consumer = consumer;
    this.holdings = holdings;
    this.consumerThread = consumerThread;
    this.jdkInterrupt = Threads.isJdkMethod(consumerThread, "interrupt");
    this.handOver = handOver;
    this.flushWaiters = flushWaiters;
    this.recorders = recorders;
    this.helper = helper;
    this.stats = stats;
  }

  public @Nullable CloseReport report() {
    return report;
  }

  /** The failure flushes get after a close that abandoned items; null otherwise. */
  public @Nullable Throwable abandonment() {
    return abandonment;
  }

  public CloseReport close(Duration timeout) {
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
    CloseHelper helper = this.helper;
    Checks.requireState(helper != null, "batcher '%s' is a shard: its sharded batcher closes it", name);
    long deadline = deadline(startNanos, timeout);
    long graceEnd = deadline + GRACE_NANOS; // one for every wait after the timeout
    begin(startNanos);
    boolean drained = publishMarker(deadline) && awaitDrained(deadline);
    if (!drained) {
      giveUp(timeout);
    }
    Ending ending = end(drained, timeout, deadline, graceEnd);
    Runnable recordClosed = recorders.isEmpty() ? null : () -> recorders.recordClosed(ending.report());
    interrupted |= helper.runAndAwait(List.of(ending), recordClosed, graceEnd);
    return ending.report();
  }

  /** The end of a close's timeout begun at {@code start}, in {@link System#nanoTime()} terms. */
  public static long deadline(long start, Duration timeout) {
    return start + Math.min(Checks.saturatedNanos(timeout), Long.MAX_VALUE / 4); // 73 years: no overflow
  }

  // ---- the script's steps, which a sharded close runs across its shards, each step for all before the next

  /** Refuses new items from now on (the close begun at {@code start} drains what was accepted). */
  public void begin(long start) {
    startNanos = start;
    gate.beginClose();
  }

  /** Publishes the close marker, waiting (parked, woken as the consumer frees room) until {@code deadline}. */
  public boolean publishMarker(long deadline) {
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

  /** Waits until {@code deadline} for the consumer to write everything before the marker and end; true if it did. */
  public boolean awaitDrained(long deadline) {
    return awaitConsumer(deadline) && consumer.drained();
  }

  /** Time ran out: asks the consumer to give up what it holds. */
  public void giveUp(Duration timeout) {
    consumer.requestAbandon("close timed out after " + timeout.toMillis() + " ms", consumerThread);
  }

  /**
   * Ends the close: takes over what a consumer that {@code drained} not holds, fails only what it provably will
   * not touch, counts it, and publishes the report; no user code runs here. Returns the report with the user
   * code that follows it, for a {@link CloseHelper} to run.
   */
  public Ending end(boolean drained, Duration timeout, long deadline, long graceEnd) {
    Abandonment gathered = new Abandonment();
    Throwable failure = null;
    String orphaned = null;
    boolean interruptConsumer = false;
    if (drained) {
      consumer.awaitCompletions(deadline); // async sinks: callbacks still running on completing threads
    } else {
      String description = "close timed out after " + timeout.toMillis() + " ms";
      int outcome = takeOver(graceEnd);
      if (outcome == HandOver.STOPPED) {
        drained = awaitDrained(graceEnd);
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
    CloseReport done = new CloseReport(drained, abandonedItems, Duration.ofNanos(System.nanoTime() - startNanos),
        stats.get());
    report = done;
    published.complete(done); // later and concurrent closes return it from now on
    return new Ending(done, tell(gathered, failure, orphaned, drained, done, graceEnd),
        interruptConsumer ? this::interruptQuietly : null, jdkInterrupt, holdings.watch(gathered));
  }

  /**
   * The user code that follows the report, as the consumer runs its own: the recorders (after those of items the
   * consumer failed itself), then the callers, then the flushes and the log lines. Whatever it calls back finds the
   * close finished: flush() completes at once, close() returns the report, stats() includes every abandoned item.
   */
  private List<Runnable> tell(Abandonment gathered, @Nullable Throwable flushFailure, @Nullable String orphanNote,
      boolean wasDrained, CloseReport done, long until) {
    if (gathered.isEmpty() && orphanNote == null && wasDrained && flushWaiters.isEmpty()
        && recorders.isEmpty()) {
      return List.of(); // no user code to call: no thread to start
    }
    Runnable record = () -> {
      CompletableFuture<Void> consumersOwn = consumer.ownRecorded();
      if (consumersOwn != null) { // the consumer failed what it held itself (a fatal error): its recorders first
        Threads.awaitQuietly(consumersOwn, Math.max(until, System.nanoTime() + GRACE_NANOS));
      }
      holdings.record(gathered);
    };
    Runnable tellCallers = () -> holdings.tell(gathered);
    Runnable tellFlushes = () -> {
      flushWaiters.completeAll(flushFailure);
      if (orphanNote != null) {
        SafeLog.log(LOG, Level.ERROR, orphanNote, null);
      }
      if (!wasDrained) {
        SafeLog.log(LOG, Level.WARNING, "batcher '" + name + "' closed without draining: " + done, null);
      }
    };
    return List.of(record, tellCallers, tellFlushes);
  }

  /** Whether the closing thread was interrupted during a step; clears it (a sharded close sets its flag again). */
  public boolean takeInterrupted() {
    boolean was = interrupted;
    interrupted = false;
    return was;
  }

  /**
   * What a close leaves to its {@link CloseHelper}: the user code after its report, a watch, and the interrupt of a
   * consumer taken from user code (the JDK's own, or a thread factory's override).
   */
  public record Ending(CloseReport report, List<Runnable> tell, @Nullable Runnable interrupt, boolean interruptIsJdkCode,
      @Nullable StragglerWatch watch) {}

  /**
   * Interrupts a consumer taken from user code, on the helper: the JDK's interrupt may close a channel (user code,
   * for a channel of your own), and a thread factory's thread may override it.
   */
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

  /** Whether the consumer ended (or its thread never ran it): it will never make room or hand over. */
  public boolean consumerStopped() {
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
