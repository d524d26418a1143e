package dev.ringbatch;

/**
 * Thrown (or used to fail a future) when a batcher is closing or closed: an item submitted after
 * {@link Batcher#close()} began is refused ({@link #isAbandoned()} is {@code false}), and an item still
 * unwritten when the close timeout ran out is abandoned ({@link #isAbandoned()} is {@code true}; the
 * message says whether its batch was inside the sink, so that it may have been written after all).
 */
public final class BatcherClosedException extends IllegalStateException {
  private static final long serialVersionUID = 1L;

  private final String batcherName;
  private final int capacity;
  private final boolean abandoned;

  /**
   * Creates the exception.
   *
   * @param batcherName the batcher's name
   * @param capacity the batcher's ring size
   * @param abandoned whether the item had been accepted and was abandoned by a close that timed out
   * @param detail what happened to the item
   */
  public BatcherClosedException(String batcherName, int capacity, boolean abandoned, String detail) {
    super("Batcher '" + batcherName + "' is closed (capacity " + capacity + "); " + detail);
    this.batcherName = batcherName;
    this.capacity = capacity;
    this.abandoned = abandoned;
  }

  /** Returns the name of the batcher. */
  public String batcherName() {
    return batcherName;
  }

  /** Returns the ring size of that batcher. */
  public int capacity() {
    return capacity;
  }

  /** Whether the item had been accepted and was abandoned because {@code close} timed out. */
  public boolean isAbandoned() {
    return abandoned;
  }
}
