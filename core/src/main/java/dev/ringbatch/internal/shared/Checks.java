package dev.ringbatch.internal.shared;

import java.time.Duration;

/**
 * Argument and state checks whose messages name the field, the rule and the value the caller passed, e.g.
 * {@code "ringSize must be a positive power of two but was 1000"}. Public types of this module call it;
 * users must not.
 */
public final class Checks {

  private Checks() {}

  /** Throws {@link IllegalArgumentException} with the formatted message unless {@code condition} holds. */
  public static void requireArgument(boolean condition, String format, Object... args) {
    if (!condition) {
      throw new IllegalArgumentException(String.format(format, args));
    }
  }

  /** Throws {@link IllegalStateException} with the formatted message unless {@code condition} holds. */
  public static void requireState(boolean condition, String format, Object... args) {
    if (!condition) {
      throw new IllegalStateException(String.format(format, args));
    }
  }

  /** Returns {@code value} if it is positive; otherwise throws naming {@code field}. */
  public static int requirePositive(String field, int value) {
    requireArgument(value > 0, "%s must be positive but was %s", field, value);
    return value;
  }

  /** Returns {@code value} if it is positive; otherwise throws naming {@code field}. */
  public static long requirePositive(String field, long value) {
    requireArgument(value > 0, "%s must be positive but was %s", field, value);
    return value;
  }

  /** Returns {@code value} if it is non-null and not negative; otherwise throws naming {@code field}. */
  public static Duration requireNonNegative(String field, Duration value) {
    java.util.Objects.requireNonNull(value, field);
    requireArgument(!value.isNegative(), "%s must not be negative but was %s", field, value);
    return value;
  }

  /** Returns {@code value} if it is non-null and longer than zero; otherwise throws naming {@code field}. */
  public static Duration requirePositive(String field, Duration value) {
    java.util.Objects.requireNonNull(value, field);
    requireArgument(!value.isNegative() && !value.isZero(), "%s must be positive but was %s", field, value);
    return value;
  }

  /** Returns {@code name} if it is a usable batcher name; otherwise throws naming the problem. */
  public static String requireName(String name) {
    java.util.Objects.requireNonNull(name, "name");
    requireArgument(!name.isBlank(), "name must not be blank but was '%s'", name);
    return name;
  }

  /**
   * Heap a ring takes per slot: the padded {@code SubmissionSlot} (160 bytes with compressed references, 176
   * without), its reference in the ring's array, on JDK 19 and earlier its item and future references in the two
   * dense arrays, the Disruptor's availability flag, and the batch storage that may grow to the ring size: 189
   * bytes with compressed references and dense arrays, 229 without compressed references (ZGC on JDK 17, heaps
   * of 32 GB and more); the larger, with some margin.
   */
  static final long BYTES_PER_SLOT = 240;

  /**
   * Refuses rings that cannot be allocated in this JVM's maximum heap, before anything is allocated, so that a
   * bad size is an {@link IllegalArgumentException} naming the field and not an {@link OutOfMemoryError}.
   */
  public static void requireRingMemory(int shards, int ringSize) {
    long maxHeap = Runtime.getRuntime().maxMemory();
    double bytes = (double) shards * ringSize * BYTES_PER_SLOT;
    if (bytes <= maxHeap) {
      return;
    }
    String size = bytesText(bytes);
    String heap = maxHeap == Long.MAX_VALUE ? "unlimited" : bytesText(maxHeap);
    if (shards == 1) {
      throw new IllegalArgumentException(String.format("ringSize %s would take about %s of heap for its slots,"
          + " more than the maximum heap of %s (-Xmx); use a smaller ringSize", ringSize, size, heap));
    }
    throw new IllegalArgumentException(String.format("shards %s with ringSize %s would take about %s of heap for"
        + " their slots, more than the maximum heap of %s (-Xmx); use fewer shards or a smaller ringSize",
        shards, ringSize, size, heap));
  }

  private static String bytesText(double bytes) {
    String[] units = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int unit = 0;
    while (bytes >= 1024 && unit < units.length - 1) {
      bytes /= 1024;
      unit++;
    }
    return String.format(java.util.Locale.ROOT, "%.1f %s", bytes, units[unit]);
  }

  /** Converts to nanoseconds, saturating at {@link Long#MAX_VALUE} instead of overflowing. */
  public static long saturatedNanos(Duration duration) {
    try {
      return duration.toNanos();
    } catch (ArithmeticException tooLong) {
      return duration.isNegative() ? Long.MIN_VALUE : Long.MAX_VALUE;
    }
  }
}
