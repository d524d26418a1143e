package dev.ringbatch.internal.pacing;

import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * How long the consumer waits for the next batch to gather after writing one that callers were waiting on: the
 * self-clocked wait (Nagle's algorithm with the completions as the clock, as Linux's TCP autocorking). A batch
 * whose completion woke E waiting callers is, in a closed loop, followed by about E new items as those callers come
 * back; taking the first few of them as a batch of their own costs a sink call and a round of wake-ups each. So the
 * consumer parks, without spinning, until about {@code alpha * E} items are in the ring, or a deadline passes, and
 * one producer (the one whose claim reaches the target) wakes it.
 *
 * <p>It waits only where waiting pays: after a batch whose waiting callers were mostly virtual threads (platform
 * threads compete with the consumer for the cores, and a parked consumer then waits for a core behind them), and
 * only when fewer than half of the target is already in the ring (otherwise the callers came back while the sink
 * wrote, and the consumer takes them at once: waiting would only idle the sink). {@code alpha} is tuned by additive
 * increase and multiplicative decrease: a gather that reaches its target raises it by 1/16 (up to 1), one that hits
 * its deadline halves it, so a wrong guess costs at most one deadline. The deadline is twice the mean time recent
 * gathers took, between 20 µs and 1 ms. A batch with fewer than two waiting callers (a lone caller; producers that
 * do not wait) is followed by no wait. A sink slower still (a write of 320 µs or more) gets a window instead: every
 * caller just woken, on top of what was in the ring before the wakes, for a thirty-second of the write
 * ({@link #slowSink}). Consumer thread only.
 */
public final class SelfClock {
  /** Fewer waiting callers than this: the next batch is taken as soon as anything is there, as without the clock. */
  static final int MIN_WAITERS = 2;
  private static final double ALPHA_MIN = 1.0 / 64;
  private static final double ALPHA_STEP = 1.0 / 16;
  private static final long MIN_DEADLINE_NANOS = TimeUnit.MICROSECONDS.toNanos(20);
  private static final long MAX_DEADLINE_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
  /** A sink this many times faster than the callers come back is slow: the consumer does not gather, see target. */
  private static final int SLOW_SINK = 4;
  /** A write at least this long is followed by a gather window ({@link #slowSink}): 16 of the shortest windows. */
  private static final long SLOW_SINK_NANOS = TimeUnit.MICROSECONDS.toNanos(320);
  /** A slow sink's gather window is this share of its write, between 20 and 200 µs. */
  private static final int SLOW_WINDOW_SHARE = 32;
  private static final long SLOW_WINDOW_MAX_NANOS = TimeUnit.MICROSECONDS.toNanos(200);
  /** The weight of one gather in the mean time, 1/8 as TCP's smoothed round-trip time. */
  private static final int MEAN_SHIFT = 3;

  private double alpha = 0.5;
  /** The mean time a gather took to reach its target, in nanoseconds; starts at the deadline's middle. */
  private long meanGatherNanos = TimeUnit.MICROSECONDS.toNanos(100);
  /** The mean time batches that woke callers spent in the sink. */
  private long meanWriteNanos;
  /** The callers the last batch woke, and how many of them were virtual threads: until the next wait is chosen. */
  private int waiters;
  /** Whether the target just chosen is a slow sink's gather: its deadline is the window ({@link #slowSink}). */
  private boolean slowGather;
  /** Whether the gather running now is a slow sink's: its end is not measured ({@link #gathered}). */
  private boolean slowGatherRan;
  private static final long UNKNOWN = Long.MIN_VALUE;
  /** The ring's cursor just before the last batch's callers were woken, or {@link #UNKNOWN}. */
  private long cursorAtWakes = UNKNOWN;
  private @Nullable LongSupplier ringCursor;
  private int virtualWaiters;

  /**
   * A batch was completed, after {@code writeNanos} in the sink, waking {@code woken} callers of which {@code
   * virtual} on virtual threads. Called by the writer that completes batches on the consumer thread.
   */
  public void completed(int woken, int virtual, long writeNanos) {
    waiters = woken;
    virtualWaiters = virtual;
    if (woken == 0) {
      return;
    }
    meanWriteNanos += (Math.max(0, writeNanos) - meanWriteNanos) >> MEAN_SHIFT;
  }

  /** Forgets the last batch's callers: the next wait is the usual one. */
  public void forget() {
    waiters = 0;
    virtualWaiters = 0;
  }

  /**
   * Whether the consumer skips its short pause after a small run: the last batch completed woke callers, mostly
   * platform threads or of a slow sink (those callers are the producers now). Virtual-thread callers of a quick
   * sink keep it: on their carriers, the pause lets more of them come back before the consumer takes.
   */
  public boolean skipsPause() {
    return waiters > 0 && (2 * virtualWaiters < waiters || !quickSink());
  }

  /**
   * Whether the sink is quick next to the callers' return (see {@link #target}): virtual-thread callers are then
   * woken as soon as their futures are complete, and the consumer keeps its pause after a small run for them.
   * Measured: both help virtual callers of a no-op sink and hurt those of a 20 µs one.
   */
  public boolean quickSink() {
    return SLOW_SINK * meanWriteNanos <= meanGatherNanos;
  }

  /**
   * Whether the sink's write is long enough that a short gather after it pays ({@link #SLOW_SINK_NANOS}): a remote
   * call or a commit of a millisecond next to callers that come back within tens of microseconds. Without a
   * gather, closed-loop callers split into two cohorts that alternate, each waiting a whole write for the other
   * (measured, a 2 ms sink, 10 and 100 virtual callers: mean batch 5.8 of 10 and 52 of 100, p50 two writes); a
   * window of 20-100 µs merges them (1.6-1.7x the calls per second, docs/results/issue24-landscape.txt). The rule
   * reads the write time only, which every batch measures: it never switches itself off for want of a gather.
   */
  boolean slowSink() {
    return meanWriteNanos >= SLOW_SINK_NANOS;
  }

  /** Whether the last batch completed woke callers that wait for their results. */
  public boolean callersWaited() {
    return waiters > 0;
  }

  /**
   * How many items to wait for, parked, now that the last batch was completed, with {@code backlog} items already
   * in the ring; at most {@code maxBatchSize}. 0 for the usual wait. Forgets the last batch's callers: asked once.
   */
  public int target(long backlog, int maxBatchSize) {
    int woken = waiters;
    int virtual = virtualWaiters;
    waiters = 0;
    virtualWaiters = 0;
    if (woken < MIN_WAITERS || 2 * virtual < woken) {
      return 0;
    }
    int items = (int) Math.min(Math.ceil(alpha * woken), maxBatchSize);
    if (items < MIN_WAITERS) {
      alpha = Math.min(1.0, alpha + ALPHA_STEP / 4); // no gather, hence no measure: creep back up to try later
    }
    if (!quickSink()) {
      if (slowSink()) {
        return slowTarget(backlog, woken, maxBatchSize);
      }
      items = 1; // the callers come back while the sink writes: take what is there, parking at once if nothing is
    }
    items = Math.max(items, 1);
    return 2 * backlog >= items ? 0 : items;
  }

  /**
   * A slow sink's target: the callers just woken join the items that were in the ring before they were woken, so
   * that two cohorts become one batch; all of them (not alpha of them), for a short window, since the bulk comes
   * back within it and the tail goes next. Callers already back are counted once: the items published since the
   * wakes began ({@link #wakingFrom}) are taken for them. No wait when a full batch is there, or when what was there
   * before the wakes is twice the callers woken (producers that do not wait: the sink is not kept idle for a few).
   */
  private int slowTarget(long backlog, int woken, int maxBatchSize) {
    LongSupplier cursor = ringCursor;
    long since = cursorAtWakes == UNKNOWN || cursor == null ? 0 : Math.max(0, cursor.getAsLong() - cursorAtWakes);
    long before = Math.max(0, backlog - since);
    long items = Math.min(before + woken, maxBatchSize);
    if (backlog >= items || before >= 2L * woken) {
      return 0;
    }
    slowGather = true;
    return (int) items;
  }

  /**
   * Called just before a batch's callers are woken, with the ring's cursor readable through {@link #watch}: items
   * published from now on may be those callers coming back. Consumer thread.
   */
  public void wakingFrom() {
    LongSupplier cursor = ringCursor;
    // Read only for a slow sink, the one rule that uses it: a quick one's batches skip the contended cursor line.
    cursorAtWakes = cursor == null || !slowSink() ? UNKNOWN : cursor.getAsLong();
  }

  /** The ring's cursor, read for {@link #wakingFrom}; without it every item in the ring counts as there before. */
  public void watch(LongSupplier cursor) {
    ringCursor = cursor;
  }

  /** How long the next gather may wait for its target. */
  public long deadlineNanos() {
    if (slowGather) { // a slow sink's window: a thirty-second of its write, 20 to 200 µs
      slowGather = false;
      slowGatherRan = true;
      return Math.max(MIN_DEADLINE_NANOS, Math.min(SLOW_WINDOW_MAX_NANOS, meanWriteNanos / SLOW_WINDOW_SHARE));
    }
    return Math.max(MIN_DEADLINE_NANOS, Math.min(MAX_DEADLINE_NANOS, 2 * meanGatherNanos));
  }

  /**
   * A gather for {@code target} items ended after {@code nanos}: it {@code reached} its target, or its deadline
   * passed with {@code arrived} items in.
   */
  public void gathered(boolean reached, long nanos, long target, long arrived) {
    if (slowGatherRan) {
      slowGatherRan = false;
      return; // a slow sink's window teaches nothing about the quick gather (it may end at once, or time out)
    }
    if (target < MIN_WAITERS) {
      return; // parked for the first item only: nothing to learn about gathering
    }
    if (reached) {
      alpha = Math.min(1.0, alpha + ALPHA_STEP);
      meanGatherNanos += (Math.max(0, nanos) - meanGatherNanos) >> MEAN_SHIFT;
    } else if (2 * arrived < target) {
      alpha = Math.max(ALPHA_MIN, alpha / 2); // a wrong guess: halve it
    } // else most of the target came: the guess was about right, the deadline short
  }

  @Override
  public String toString() {
    return "SelfClock{alpha=" + alpha + ", meanGatherNanos=" + meanGatherNanos + '}';
  }
}
