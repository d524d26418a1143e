package dev.ringbatch;

/**
 * Gives an item's weight, usually its size in bytes, for the {@link BatchLimits#maxBatchBytes()} limit.
 *
 * <p>Called on the producer's thread, inside {@link Batcher#submit} or {@link Batcher#offer}, before the
 * item enters the ring; it must be thread-safe, cheap and side-effect free. A negative weight is a bug in
 * the weigher: the call throws {@link IllegalArgumentException} and the item is not accepted.
 *
 * @param <T> the item type
 */
@FunctionalInterface
public interface Weigher<T> {

  /** Returns the weight of {@code item}, zero or more. */
  long weigh(T item);
}
