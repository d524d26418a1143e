package dev.ringbatch;

import static dev.ringbatch.internal.shared.Checks.requireNonNegative;
import static dev.ringbatch.internal.shared.Checks.requirePositive;

import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The limits that end a batch before the ring runs dry: at most {@link #maxBatchSize()} items, at most
 * {@link #maxBatchBytes()} of weight, and, when {@link #linger()} is positive, a wait of up to that long for
 * more items when a batch is small. Immutable; change a running batcher's limits with
 * {@link Batcher#setLimits(BatchLimits)}.
 *
 * <p>Without linger (the default of fixed limits, and of {@link Adaptive} ones until a linger is measured to pay)
 * a batch ends the moment the ring runs dry, so a lone caller never waits for a timer and batches grow by
 * themselves under load ("natural batching").
 */
public final class BatchLimits {

  /** The value of {@link #maxBatchBytes()} that means "no byte limit". */
  public static final long NO_BYTE_LIMIT = Long.MAX_VALUE;

  private static final BatchLimits DEFAULTS = new BatchLimits(256, NO_BYTE_LIMIT, Duration.ZERO);

  private final int maxBatchSize;
  private final long maxBatchBytes;
  private final Duration linger;

  private BatchLimits(int maxBatchSize, long maxBatchBytes, Duration linger) {
    this.maxBatchSize = requirePositive("maxBatchSize", maxBatchSize);
    this.maxBatchBytes = requirePositive("maxBatchBytes", maxBatchBytes);
    this.linger = requireNonNegative("linger", linger);
  }

  /**
   * Returns the fixed limits' defaults: 256 items, no byte limit, no linger. A {@link BatcherConfig} given no
   * limits tunes them instead ({@link Adaptive#throughput()}); {@code limits(BatchLimits.ofDefaults())} on its
   * builder asks for these, fixed.
   */
  public static BatchLimits ofDefaults() {
    return DEFAULTS;
  }

  /**
   * Returns limits with the given values.
   *
   * @throws IllegalArgumentException if {@code maxBatchSize} or {@code maxBatchBytes} is not positive, or
   *     {@code linger} is negative
   * @throws NullPointerException if {@code linger} is null
   */
  public static BatchLimits of(int maxBatchSize, long maxBatchBytes, Duration linger) {
    return new BatchLimits(maxBatchSize, maxBatchBytes, linger);
  }

  /** The most items in one batch. A batch ends when it reaches this count. Default 256. */
  public int maxBatchSize() {
    return maxBatchSize;
  }

  /**
   * The most weight (as given by the batcher's {@link Weigher}) in one batch, or {@link #NO_BYTE_LIMIT}.
   * An item that would push a batch past the limit starts the next batch; an item heavier than the limit
   * on its own is written alone, never stuck.
   */
  public long maxBatchBytes() {
    return maxBatchBytes;
  }

  /**
   * How long a batch smaller than {@link #maxBatchSize()} may wait for more items once the ring has run
   * dry, counted from its first item. Zero (the default) writes at once.
   */
  public Duration linger() {
    return linger;
  }

  /** Returns a copy with {@code maxBatchSize} replaced. */
  public BatchLimits withMaxBatchSize(int maxBatchSize) {
    return new BatchLimits(maxBatchSize, maxBatchBytes, linger);
  }

  /** Returns a copy with {@code maxBatchBytes} replaced. */
  public BatchLimits withMaxBatchBytes(long maxBatchBytes) {
    return new BatchLimits(maxBatchSize, maxBatchBytes, linger);
  }

  /** Returns a copy with {@code linger} replaced. */
  public BatchLimits withLinger(Duration linger) {
    return new BatchLimits(maxBatchSize, maxBatchBytes, linger);
  }

  /** Whether a byte limit is set. */
  public boolean hasByteLimit() {
    return maxBatchBytes != NO_BYTE_LIMIT;
  }

  @Override
  public boolean equals(@Nullable Object o) {
    return o instanceof BatchLimits other
        && maxBatchSize == other.maxBatchSize
        && maxBatchBytes == other.maxBatchBytes
        && linger.equals(other.linger);
  }

  @Override
  public int hashCode() {
    return Objects.hash(maxBatchSize, maxBatchBytes, linger);
  }

  @Override
  public String toString() {
    return "BatchLimits{maxBatchSize=" + maxBatchSize
        + ", maxBatchBytes=" + (hasByteLimit() ? Long.toString(maxBatchBytes) : "none")
        + ", linger=" + linger + '}';
  }
}
