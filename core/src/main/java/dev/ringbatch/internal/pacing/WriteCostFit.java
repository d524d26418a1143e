package dev.ringbatch.internal.pacing;

/**
 * The sink's cost fitted online as {@code write ≈ F + c * n} (a fixed cost per call and a cost per item), by
 * least squares over recent batches, each refit halving the weight of what came before. It is {@linkplain
 * #reliable() reliable} only when the writes scatter little around the line (a residual no wider than the mean
 * write) and enough batches were seen: the adaptive limits then fall back to natural batching. Sizes too alike to
 * tell F from c keep the c learnt before, or, none learnt yet, count the whole write as fixed. No allocation.
 * Consumer thread only.
 */
final class WriteCostFit {
  private static final int MIN_SAMPLES = 8;
  private double s1;
  private double sn;
  private double snn;
  private double sw;
  private double snw;
  private double sww;
  private double fixed;
  private double perItem;
  private double meanSize;
  private boolean reliable;
  private boolean knowsPerItem;

  /** One batch of {@code size} items written in {@code nanos}. */
  void add(int size, long nanos) {
    double n = size;
    double w = Math.max(0, nanos);
    s1++;
    sn += n;
    snn += n * n;
    sw += w;
    snw += n * w;
    sww += w * w;
  }

  /** Fits the line to what was added, then halves the weight of every sample so far. */
  void refit() {
    if (s1 < MIN_SAMPLES) {
      reliable = false;
      return;
    }
    meanSize = sn / s1;
    double meanWrite = sw / s1;
    double varSize = snn / s1 - meanSize * meanSize;
    double cov = snw / s1 - meanSize * meanWrite;
    double varWrite = Math.max(0, sww / s1 - meanWrite * meanWrite);
    // Sizes too alike to tell F from c: keep the c learnt before (sizes move together with the load, and a cost
    // per item does not go away because recent batches were alike), or, never having learnt one, count the whole
    // write as fixed.
    double c = varSize > 0.25 ? Math.max(0, cov / varSize) : knowsPerItem ? perItem : 0;
    knowsPerItem |= varSize > 0.25;
    perItem = c;
    fixed = Math.max(0, meanWrite - c * meanSize);
    double residual = Math.max(0, varWrite - 2 * c * cov + c * c * varSize); // var(w - c n), for any c
    reliable = meanWrite > 0 && residual <= meanWrite * meanWrite; // scatter no wider than the mean write
    s1 *= 0.5;
    sn *= 0.5;
    snn *= 0.5;
    sw *= 0.5;
    snw *= 0.5;
    sww *= 0.5;
  }

  boolean reliable() {
    return reliable;
  }

  /** Whether the batches' sizes ever varied enough to tell the cost per item from the fixed cost. */
  boolean knowsPerItem() {
    return knowsPerItem;
  }

  /** F, in nanoseconds. */
  double fixedNanos() {
    return fixed;
  }

  /** c, in nanoseconds per item. */
  double perItemNanos() {
    return perItem;
  }

  /** The share of a mean batch's write that is fixed cost: near 1 when batching more would pay most. */
  double fixedShare() {
    double write = fixed + perItem * meanSize;
    return write <= 0 ? 0 : fixed / write;
  }

  /** The most items whose fitted write stays within {@code nanos}; {@code Integer.MAX_VALUE} if any count does. */
  int sizeWithin(long nanos) {
    if (perItem <= 0) {
      return Integer.MAX_VALUE;
    }
    double n = (nanos - fixed) / perItem;
    return n >= Integer.MAX_VALUE ? Integer.MAX_VALUE : (int) Math.max(1, n);
  }

  @Override
  public String toString() {
    return "F=" + Math.round(fixed / 1_000) + "µs c=" + Math.round(perItem) + "ns" + (reliable ? "" : " (noisy)");
  }
}
