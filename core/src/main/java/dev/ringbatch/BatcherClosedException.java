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
  private final boolean outcomeUnknown;

  /**
   * Creates the exception.
   *
   * @param batcherName the batcher's name
   * @param capacity the batcher's ring size
   * @param abandoned whether the item had been accepted and was abandoned by a close that timed out
   * @param detail what happened to the item
   */
  public BatcherClosedException(String batcherName, int capacity, boolean abandoned, String detail) {
    this(batcherName, capacity, abandoned, false, detail);
  }

  /**
   * Creates the exception for an item whose outcome is unknown or known.
   *
   * @param batcherName the batcher's name
   * @param capacity the batcher's ring size
   * @param abandoned whether the item had been accepted and was abandoned by a close that timed out
   * @param outcomeUnknown whether the item was inside the sink when the close gave up on it, so that it may
   *     or may not have been written
   * @param detail what happened to the item
   */
  public BatcherClosedException(String batcherName, int capacity, boolean abandoned, boolean outcomeUnknown,
      String detail) {
    super("Batcher '" + batcherName + "' is closed (capacity " + capacity + "); " + detail);
    this.batcherName = batcherName;
    this.capacity = capacity;
    this.abandoned = abandoned;
    this.outcomeUnknown = outcomeUnknown;
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

  /**
   * Whether the item's batch was inside the sink when a close that timed out gave up on it: the sink may or
   * may not have written it, and nothing in this process can tell. Check the target system (by a key) before
   * writing it again. False for items that were certainly not written.
   */
  public boolean isOutcomeUnknown() {
    return outcomeUnknown;
  }
}
