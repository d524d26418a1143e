package dev.ringbatch.internal.pacing;

import dev.ringbatch.Adaptive;
import dev.ringbatch.BatchLimits;
import dev.ringbatch.internal.consume.PendingBatch;
import java.time.Duration;
import java.util.SplittableRandom;

/**
 * A model of a closed loop in simulated time for the adaptive limits' controller: K callers whose batch completes
 * after F + c * n; with no linger they split into two cohorts of K/2 (each writes while the other comes back), and a
 * linger of L gathers a share 1 - exp(-3 L / R) of the other cohort, 95 % of which are back within R.
 * Deterministic: every safety rule and every choice is checked without a clock or a thread. {@link #cycle} runs one
 * batch through the controller.
 */
class ClosedLoop {
  static final long MICROS = 1_000;
  static final BatchLimits CAPS = BatchLimits.of(4096, BatchLimits.NO_BYTE_LIMIT, Duration.ZERO);

  final AdaptiveLimits controller;
  int callers;
  final long fixed;
  final long perItem;
  long comeBack;
  final PendingBatch<Object, Object> batch = new PendingBatch<>(16, 1 << 20);
  long now = 1_000_000_000L;
  long maxLingerSeen;
  int maxSizeSeen;
  long cyclesLingering;
  long cyclesUnderCap;
  long longestRoundTrip;
  /** Items carried and the time they took (pauses between cycles left out): {@link #rate()}. */
  long items;
  long elapsed;
  /** Into how many cohorts the callers split without a linger. */
  int cohorts = 2;
  /** One write in ten takes 20 times as long (GC pauses, a neighbour): the fit turns noisy. */
  boolean noisy;
  /** The full cap and no linger in force whatever the controller chose (it is still fed): the static baseline. */
  boolean pinned;
  final SplittableRandom random = new SplittableRandom(42);

  ClosedLoop(Adaptive mode, int callers, long fixed, long perItem, long comeBack) {
    this.controller = new AdaptiveLimits(mode, CAPS, false);
    this.callers = callers;
    this.fixed = fixed;
    this.perItem = perItem;
    this.comeBack = comeBack;
  }

  void cycle() {
    BatchLimits limits = pinned ? CAPS : controller.limits();
    long linger = limits.linger().toNanos();
    maxLingerSeen = Math.max(maxLingerSeen, linger);
    int half = callers / cohorts;
    long begin = now;
    now += 2 * MICROS; // the first caller back is taken
    long firstTaken = now;
    int n = half;
    if (linger > 0 && controller.mayLinger(now)) {
      n += (int) Math.round((callers - half) * (1 - Math.exp(-3.0 * linger / comeBack))); // 95 % back by then
      now += linger;
      cyclesLingering++;
    }
    n = Math.min(n, limits.maxBatchSize());
    cyclesUnderCap += limits.maxBatchSize() < CAPS.maxBatchSize() ? 1 : 0;
    maxSizeSeen = Math.max(maxSizeSeen, n);
    batch.clear();
    for (int i = 0; controller.needsStamps() && i < n; i++) { // published a little before they were taken: the
      batch.add(i, null, 1, i, (i < Math.min(n, half) ? firstTaken : now) - 5 * MICROS); // cohort, then the gathered
    }
    controller.writeStarting(batch.copyStamps(controller));
    long start = now;
    long write = writeTime(n);
    if (noisy && random.nextInt(10) == 0) {
      write *= 20;
    }
    now += write;
    String change = controller.writeEnded(n, start, write, now, false);
    if (change != null && Boolean.getBoolean("dbg")) {
      System.err.println(change);
    }
    longestRoundTrip = Math.max(longestRoundTrip, now - (firstTaken - 5 * MICROS));
    items += n;
    elapsed += now - begin;
  }

  long writeTime(int n) {
    return fixed + perItem * n;
  }

  void run(int cycles) {
    for (int i = 0; i < cycles; i++) {
      cycle();
    }
  }

  /** Items per nanosecond since the model began or {@link #resetRate()}. */
  double rate() {
    return (double) items / elapsed;
  }

  void resetRate() {
    items = 0;
    elapsed = 0;
  }
}
