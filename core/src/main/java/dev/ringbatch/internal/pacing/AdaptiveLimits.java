package dev.ringbatch.internal.pacing;

import dev.ringbatch.Adaptive;
import dev.ringbatch.BatchLimits;
import dev.ringbatch.internal.shared.Checks;
import java.time.Duration;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * The controller of {@link Adaptive} limits: chooses the linger and the batch size the consumer uses, from what
 * it measures. Consumer thread only, except {@link #published()} and {@link #asyncWritten}; no allocation per
 * batch. The whole design, with the reasons and the figures behind each rule: docs/architecture.md, "Adaptive
 * limits: the controller".
 *
 * <p><b>Measures</b> per {@link Epoch} (at least {@value Epoch#MIN_BATCHES} batches and 2 ms of the batcher's
 * ticker): items per second, the sink's cost fitted as {@code F + c * n} ({@link WriteCostFit}) and, in latency
 * mode, each item's round trip from its publish stamp to the write's end.
 *
 * <p><b>Chooses</b> a rung of one {@link GatheringLadder} (smaller caps, natural batching, lingers doubling from
 * 10 µs), by measurement: a {@link LingerProbe} tries a rung up or down in epochs interleaved with the current
 * one and moves only on a gain of {@value LingerProbe#GAIN_PERCENT} %, paired and in all. A failed probe doubles
 * the pause before the next (up to {@value #MAX_HOLD} epochs), a flat one looks further along, a change of regime
 * (the smoothed rate or batch size halved or doubled) brings probes back at once. Lingers are probed only where
 * the fit says waiting can pay, smaller caps only where batches would fill them; a noisy fit drops the linger.
 * Latency mode adds AIMD against the epoch's p99.
 *
 * <p><b>Safety.</b> The configured caps are never exceeded. {@link #mayLinger} lets a batch linger only right
 * after a write of two items or more: the first item after an idle spell, and a lone caller's, are never
 * delayed. The batches right after a change of rung, and epochs spent partly idle, count towards no epoch.
 */
public final class AdaptiveLimits {
  static final int MAX_HOLD = 64;
  private static final double MIN_FIXED_SHARE = 0.2;
  private static final long IDLE_NANOS = 1_000_000;
  private static final long UNSET = Long.MIN_VALUE;

  private final boolean latency;
  private final long targetNanos;
  private final BatchLimits caps;
  /** What a batch may gather, as rungs of (size, linger): the one axis of the search. */
  private final GatheringLadder ladder;
  private final WriteCostFit fit = new WriteCostFit();

  /** The rung in force between probes. */
  private int base;
  /** The rung in force now: the base, or a probe's candidate. */
  private int rung;
  private int sizeLimit;
  private BatchLimits current;
  volatile BatchLimits published;

  private final Epoch epoch;

  private final LingerProbe probe = new LingerProbe();
  private int hold = 1;
  private int held;
  private int direction = 1;
  /** How many rungs the next probe reaches: doubled after a probe that gained too little to act on. */
  private int stride = 1;
  private static final int MAX_STRIDE = 8;
  /**
   * The smoothed epoch rate (over about eight epochs) and batch size (four), and what they are compared with: the
   * rate's since the search last moved (the new rung's, measured by its probe) or a new regime began, the batch
   * size's since the last probe.
   */
  private double rateAverage;
  private double batchAverage;
  private double refRate;
  private double refBatch;

  private int lastSize;
  private long lastWriteEnd = UNSET;
  /** Whether items were already published behind the last batch when it ended: the gap after it was not idle. */
  private boolean lastFollowed;
  private long[] stamps = new long[16];
  private int stamped;
  /** The last async write (size in the top 24 bits, nanoseconds below), handed over by its completing thread. */
  private volatile long asyncSample;
  private long asyncSeen;
  private long asyncWriteNanos;
  private final boolean async;

  public AdaptiveLimits(Adaptive mode, BatchLimits caps, boolean async) {
    this.latency = mode.goal() == Adaptive.Goal.LATENCY;
    Duration p99 = mode.p99();
    this.targetNanos = p99 == null ? 0 : Checks.saturatedNanos(p99);
    this.caps = caps;
    this.async = async;
    this.epoch = new Epoch(latency);
    this.ladder = new GatheringLadder(caps.maxBatchSize(), Checks.saturatedNanos(mode.maxLinger()), !latency);
    this.base = ladder.natural();
    this.rung = base;
    this.sizeLimit = caps.maxBatchSize();
    this.current = caps.withLinger(Duration.ZERO);
    this.published = current;
  }

  /** Whether items are stamped at publish: the round trips the latency mode needs. */
  public boolean needsStamps() {
    return latency;
  }

  /** The limits in force. Consumer thread. */
  public BatchLimits limits() {
    return current;
  }

  /** The linger between probes: where the search stands (a probe tries another for a few epochs). */
  Duration settledLinger() {
    return Duration.ofNanos(ladder.lingerNanos(base));
  }

  /** The size limit between probes. */
  int settledSize() {
    return Math.min(ladder.size(base), sizeLimit);
  }

  /** The limits in force, for any thread (stats, meters). */
  public BatchLimits published() {
    return published;
  }

  /**
   * Whether a batch whose first item was taken at {@code batchStart} may linger: only if it follows closely a
   * write of two items or more (someone to gather with). The first item after an idle spell, and a lone caller's,
   * go at once; so does one read on a ticker that stepped back since that write (a wall clock corrected, or
   * {@code GuardedTicker}'s switch of origin), which cannot tell how long the consumer was idle.
   */
  public boolean mayLinger(long batchStart) {
    long gap = batchStart - lastWriteEnd;
    return lastSize >= 2 && lastWriteEnd != UNSET && gap >= 0 && gap <= idleGap();
  }

  private long idleGap() {
    return Math.max(GatheringLadder.FIRST_LINGER_NANOS * 10, 2 * ladder.lingerNanos(rung));
  }

  /**
   * A batch is about to be handed to the writer, with the first {@code count} entries of {@link #stampsFor}
   * holding its publish stamps (which its completion clears).
   */
  public void writeStarting(int count) {
    stamped = latency ? count : 0;
  }

  /** The batch's publish stamps, copied before its write (its stamps are cleared once it completes). */
  public long[] stampsFor(int count) {
    if (stamps.length < count) {
      stamps = new long[Math.max(count, 2 * stamps.length)];
    }
    return stamps;
  }

  /**
   * A batch of {@code size} items, whose write the writer started at {@code start} (its own ticker reading),
   * ended at {@code now}: for a synchronous sink, written in {@code sinkNanos} (every attempt) and, if it held two
   * items or more, its futures completed; for an asynchronous one, handed over. {@code followed} says whether an
   * item was already published behind the batch at its end (the ring's cursor past its last sequence). Returns a
   * description of the change if the limits changed, or null.
   */
  public @Nullable String writeEnded(int size, long start, long sinkNanos, long now, boolean followed) {
    if (!epoch.begun() || start - epoch.start() < 0 || start - lastWriteEnd < 0 || now - start < 0) {
      epoch.restart(start); // the first batch, or the ticker stepped back (a new origin): measure afresh
    } else if (!lastFollowed && start - lastWriteEnd > Math.max(IDLE_NANOS, 4 * ladder.lingerNanos(rung))) {
      // Idle between writes: this epoch says nothing of the linger (a probe waits for the next). Not when an item was
      // already waiting as the last batch ended: the consumer then went straight on taking items, and a gap over 1 ms
      // is thousands of callers coming back (10,000 in one batch of ~9,000: read as idle, no epoch ever completed and
      // the limits never moved, 1.1M calls/s where a cap of 4,096 carries 1.6M; docs/results/issue37-idle-gap.txt).
      epoch.restart(start);
      epoch.drained(); // and no backlog of the last rung is left to settle
    }
    epoch.add(size);
    long writeNanos;
    if (async) {
      long sample = asyncSample;
      if (sample != asyncSeen) {
        asyncSeen = sample;
        asyncWriteNanos = sample & ((1L << 40) - 1);
        fit.add((int) (sample >>> 40), asyncWriteNanos);
      }
      writeNanos = asyncWriteNanos; // the items' round trip: their wait, and a write as long as the last
    } else {
      writeNanos = now - start; // the round trip ends once the futures are completed (a lone item's: right after)
      fit.add(size, sinkNanos); // the sink's cost alone: waking the callers is not the sink's
    }
    for (int i = 0; i < stamped; i++) {
      epoch.latencies.add(start - stamps[i] + writeNanos);
    }
    lastSize = size;
    lastWriteEnd = now;
    lastFollowed = followed;
    return epoch.complete(now) ? endEpoch(now, now - epoch.start()) : null;
  }

  /** An async batch of {@code size} items took {@code nanos}. Any thread that completes one. */
  public void asyncWritten(int size, long nanos) {
    asyncSample = ((long) Math.min(size, (1 << 23) - 1) << 40) | Math.min(Math.max(nanos, 0), (1L << 40) - 1);
  }

  /**
   * Ends the probe under way as one that failed (latency mode, over its target): the settled rung again, and a
   * longer pause before the next.
   */
  private void abandonProbe() {
    probe.end();
    hold = Math.min(MAX_HOLD, 2 * hold);
    held = 0;
    apply(base, sizeLimit);
  }

  private @Nullable String endEpoch(long now, long elapsed) {
    double rate = (double) epoch.items() / elapsed;
    fit.refit();
    String change;
    if (!probe.running()) {
      change = betweenProbes(rate, epoch.meanBatch());
    } else if (!fit.reliable() && Math.max(base, probe.candidate()) > ladder.natural()) {
      change = noisyFit(); // a linger's probe: the fit no longer says it can pay (a cap's needs no fit, and goes on)
    } else if (epoch.p99() > targetNanos) {
      abandonProbe(); // over the target during a probe: back to the settled rung at once; the next epoch acts on it
      stride = 1;
      change = null;
    } else if (probe.record(epoch.items(), elapsed, epoch.latencies)) {
      change = decideProbe();
    } else {
      apply(probe.arm() == LingerProbe.CANDIDATE ? probe.candidate() : base, sizeLimit); // probes are not logged
      epoch.settleAfterChange(); // the arm changed or not: each arm measured at one phase of a periodic load
      change = null;
    }
    epoch.restart(now);
    return change;
  }

  /**
   * The sink's cost turned too noisy to fit during a probe that lingers: no linger, at once, since the fit can no
   * longer say one pays. A smaller cap found by measurement stays.
   */
  private @Nullable String noisyFit() {
    probe.end();
    base = Math.min(base, ladder.natural());
    return apply(base, sizeLimit) ? "no linger: the sink's cost is too noisy to fit (" + fit + ")" : null;
  }

  private @Nullable String betweenProbes(double rate, double meanBatch) {
    long p99 = epoch.p99();
    // The load or the sink changed (the smoothed batch size or rate halved or doubled since its reference): look again
    // soon. Smoothed, since a closed loop on two cores is often bimodal from one epoch to the next; the rate over
    // about eight epochs: one write in ten twenty times as long swings an epoch's rate threefold, and over four
    // epochs the swings brought probes on at once, a few of which moved the cap on noise.
    rateAverage = rateAverage == 0 ? rate : rateAverage + (rate - rateAverage) / 8;
    batchAverage = batchAverage == 0 ? meanBatch : batchAverage + (meanBatch - batchAverage) / 4;
    if (refBatch == 0 || rateAverage > 2 * refRate || 2 * rateAverage < refRate || batchAverage > 2 * refBatch
        || 2 * batchAverage < refBatch) {
      hold = 1;
      held = 0;
      refRate = rateAverage;
      refBatch = batchAverage;
    }
    if (p99 > targetNanos && latency) {
      hold = 1;
      held = 0;
      if (base > ladder.natural()) {
        base--;
        return apply(base, sizeLimit) ? "p99 " + micros(p99) + " over the target " + micros(targetNanos) : null;
      }
      if (meanBatch * 2 < sizeLimit || sizeLimit == 1 || !fit.reliable()) {
        return null; // the size limit does not bind (smaller batches would change nothing), or no fit says they help
      }
      long full = Math.round(fit.fixedNanos() + fit.perItemNanos() * sizeLimit);
      // Smaller batches help only where the cost per item is what makes a write long: with a fixed cost near the
      // target, more writes of fewer items would only queue the items longer. Sizes too alike to tell the two
      // apart: halve once, and the fit learns from the two sizes.
      boolean explore = !fit.knowsPerItem(); // halve once: two sizes far apart tell F from c for good
      if (explore || (full > targetNanos / 2 && fit.fixedNanos() < targetNanos / 4.0)) {
        int smaller = explore ? Math.max(1, sizeLimit / 2)
            : Math.max(1, Math.max(sizeLimit / 2, Math.min(sizeLimit - 1, fit.sizeWithin(targetNanos / 2))));
        return apply(base, smaller) ? "p99 " + micros(p99) + " over the target " + micros(targetNanos)
            + "; a full batch's write is " + micros(full) + " (" + fit + ")" : null;
      }
      return null;
    }
    String change = null;
    if (latency && p99 > 0 && p99 < targetNanos * 0.9 && sizeLimit < caps.maxBatchSize()) {
      int larger = Math.min(caps.maxBatchSize(), sizeLimit + Math.max(1, caps.maxBatchSize() / 16));
      change = apply(base, larger) ? "p99 " + micros(p99) + " under the target " + micros(targetNanos) : null;
    }
    int natural = ladder.natural();
    boolean lingerPays = fit.reliable() && fit.fixedShare() >= MIN_FIXED_SHARE && meanBatch >= 2;
    // A linger only where waiting pays, probed from any rung below it (from a smaller cap, natural batching alone may
    // be no better, and only a linger gains).
    if (!lingerPays && base > natural) {
      String from = ladder.describe(base);
      base = natural;
      return apply(base, sizeLimit) ? from + " -> natural batching: batches of " + Math.round(meanBatch)
          + ", fixed share " + Math.round(100 * fit.fixedShare()) + " % (" + fit + ")" : change;
    }
    // From a smaller cap a stride stops at the first linger: doubled past natural batching, it stepped over the short
    // lingers (from a sixteenth: 1/8, 1/4, natural, then 80 µs), and a cap some batches still reach would hide them.
    int up = Math.min(lingerPays ? (base < natural ? natural + 1 : ladder.top()) : natural, base + stride);
    // A smaller cap is probed only where batches would fill it and some batch of the epoch exceeded it: a cap no batch
    // reaches changes nothing, and its probe reads only noise (read as a loss, it held 2,000 callers at 4,096), so
    // the probe goes on down to the first that binds. Also where batches fill the cap in force: callers queued in the
    // ring behind each batch may still be carried faster in smaller ones (2,000 virtual callers, no fixed cost: 256
    // carries 1.4x 1,024), and where they are not (a fixed cost paid by more writes), the probe finds it worse.
    int down = Math.max(base > natural ? natural : 0, base - stride);
    while (down > 0 && down < natural && ladder.size(down) >= epoch.largest()) {
      down--;
    }
    boolean mayGoUp = up > base && (!latency || (p99 > 0 && p99 < targetNanos * 0.9));
    boolean mayGoDown = down < base
        && (down >= natural || (ladder.size(down) < 2 * meanBatch && ladder.size(down) < epoch.largest()));
    if (!lingerPays && !mayGoUp && !mayGoDown) {
      return change; // no rung either side can pay: the epoch does not count towards the pause before a probe
    }
    if (++held < hold) {
      return change;
    }
    if (!mayGoUp && !mayGoDown) {
      held = 0;
      return change;
    }
    int candidate = (direction > 0 && mayGoUp) || !mayGoDown ? up : down;
    probe.start(candidate);
    apply(candidate, sizeLimit);
    return change;
  }

  private @Nullable String decideProbe() {
    int settled = base;
    int candidate = probe.candidate();
    double rateBase = probe.rate(LingerProbe.SETTLED);
    double rateCandidate = probe.rate(LingerProbe.CANDIDATE);
    long p99Base = probe.p99(LingerProbe.SETTLED);
    long p99Candidate = probe.p99(LingerProbe.CANDIDATE);
    double meanLogRatio = probe.meanLogRatio();
    boolean faster = meanLogRatio > LingerProbe.LOG_GAIN
        && rateCandidate > rateBase * (1 + LingerProbe.GAIN_PERCENT / 100.0);
    boolean better = latency
        ? (faster && p99Candidate <= targetNanos) || (p99Base > targetNanos && p99Candidate * 10 < p99Base * 9)
        : faster;
    String change = null;
    if (better) {
      change = ladder.describe(base) + " -> " + ladder.describe(candidate) + ": " + perMilli(rateBase)
          + " -> " + perMilli(rateCandidate) + " items/ms" + (latency ? ", p99 " + micros(p99Base) + " -> "
          + micros(p99Candidate) : "") + " (" + fit + ")";
      direction = candidate > base ? 1 : -1;
      base = candidate;
      stride = 1;
      hold = 1;
    } else if (base < ladder.natural() && candidate > ladder.natural() && meanLogRatio > -LingerProbe.LOG_GAIN) {
      // A smaller cap no better than a linger over the full cap: the lingers are searched on from natural batching, as
      // if the probe had been from there (a stride stops at the first linger from a smaller cap, and would stay)
      change = ladder.describe(base) + " -> natural batching: " + ladder.describe(candidate) + " as good ("
          + perMilli(rateBase) + " -> " + perMilli(rateCandidate) + " items/ms)";
      base = ladder.natural();
      direction = 1;
      stride = Math.min(MAX_STRIDE, 2 * (candidate - base));
      hold = Math.min(MAX_HOLD, 2 * hold);
    } else if (meanLogRatio > -LingerProbe.LOG_GAIN && stride < MAX_STRIDE && (!latency || p99Candidate <= targetNanos)) {
      stride *= 2; // too little difference to act on: a flat or gentle stretch, so look further along it next
      hold = Math.min(MAX_HOLD, 2 * hold); // but no sooner than after a failed probe: flat is not a gain
    } else {
      direction = candidate > base ? -1 : 1;
      stride = 1;
      hold = Math.min(MAX_HOLD, 2 * hold);
    }
    held = 0;
    if (base != settled) { // the rate from here is the new rung's: the candidate's, or as good as it (natural batching)
      rateAverage = rateCandidate;
      refRate = rateCandidate;
    } // a probe that did not move leaves the reference where it was: a change under way still counts in full
    refBatch = batchAverage;
    probe.end();
    apply(base, sizeLimit);
    return change;
  }

  /** Puts a rung and a size in force; returns whether anything changed. Allocates only on a change. */
  private boolean apply(int newRung, int newSize) {
    if (newRung == rung && newSize == sizeLimit) {
      return false;
    }
    epoch.settleAfterChange();
    rung = newRung;
    sizeLimit = newSize;
    current = BatchLimits.of(Math.min(ladder.size(newRung), newSize), caps.maxBatchBytes(),
        Duration.ofNanos(ladder.lingerNanos(newRung)));
    published = current;
    return true;
  }

  static String micros(long nanos) {
    return nanos % 1_000 == 0 || nanos > 100_000 ? nanos / 1_000 + " µs"
        : String.format(Locale.ROOT, "%.1f µs", nanos / 1e3);
  }

  private static String perMilli(double perNano) {
    return String.format(Locale.ROOT, "%.1f", perNano * 1e6);
  }

  @Override
  public String toString() {
    return "AdaptiveLimits{" + (latency ? "latency " + micros(targetNanos) : "throughput") + ", linger "
        + micros(ladder.lingerNanos(rung)) + ", size " + current.maxBatchSize() + ", " + fit + '}';
  }
}
