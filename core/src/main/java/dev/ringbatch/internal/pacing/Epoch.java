package dev.ringbatch.internal.pacing;

/**
 * What {@link AdaptiveLimits} measures between two decisions: the batches handed to the writer since the epoch
 * began, at least {@value #MIN_BATCHES} of them and 2 ms (a latency epoch also {@value #SAMPLES} round trips, or
 * 50 ms). Consumer thread only; no allocation.
 */
final class Epoch {
  static final int MIN_BATCHES = 8;
  private static final long MIN_NANOS = 2_000_000;
  /** A latency epoch also waits for this many round trips (or 50 ms), so its p99 is one in a hundred. */
  static final int SAMPLES = 100;
  private static final long MAX_NANOS = 50_000_000;
  private static final long UNSET = Long.MIN_VALUE;
  /** Batches after a change of rung that no epoch counts: they still carry the last rung's backlog. */
  static final int SETTLE_BATCHES = 2;

  private final boolean latency;
  private long start = UNSET;
  private int batches;
  private long items;
  private int largest;
  /** Batches still to pass before the epoch counts again (after a change of rung). */
  private int settling;
  /** The round trips of the epoch's items (latency mode). */
  final LatencyHistogram latencies = new LatencyHistogram();

  Epoch(boolean latency) {
    this.latency = latency;
  }

  /** Whether the epoch began: false before the first batch. */
  boolean begun() {
    return start != UNSET;
  }

  long start() {
    return start;
  }

  /**
   * The consumer was idle ({@link AdaptiveLimits#writeEnded}): it drained whatever backlog the last rung left, so
   * the batches after a change need not settle any longer.
   */
  void drained() {
    settling = 0;
  }

  /** Measures afresh from {@code now}. */
  void restart(long now) {
    start = now;
    batches = 0;
    items = 0;
    largest = 0;
    latencies.clear();
  }

  /** A batch of {@code size} items. */
  void add(int size) {
    batches++;
    items += size;
    largest = Math.max(largest, size);
  }

  /**
   * The limits changed: the next {@value #SETTLE_BATCHES} batches still carry the last rung's backlog (its
   * callers' items, gathered under it), and the epoch begins after them. A probe settles every epoch, its arm changed
   * or not: an arm that changes more often (the candidate's, in the first pairs) would else be measured at another
   * phase of a periodic load.
   */
  void settleAfterChange() {
    settling = SETTLE_BATCHES;
  }

  /** Whether the epoch has measured enough by {@code now}, the end of a batch just added, to decide on. */
  boolean complete(long now) {
    if (settling > 0) {
      settling--;
      restart(now); // that batch was the last rung's: the epoch measures the rung in force from here
      return false;
    }
    long elapsed = now - start;
    return batches >= MIN_BATCHES && elapsed >= MIN_NANOS
        && (!latency || latencies.count() >= SAMPLES || elapsed >= MAX_NANOS);
  }

  long items() {
    return items;
  }

  double meanBatch() {
    return (double) items / batches;
  }

  /** The epoch's largest batch. */
  int largest() {
    return largest;
  }

  /** The epoch's p99 round trip, or 0 without half its samples (latency mode). */
  long p99() {
    return latency && latencies.count() >= SAMPLES / 2 ? latencies.valueAt(0.99) : 0;
  }
}
