package dev.ringbatch;

import java.util.concurrent.RejectedExecutionException;

/**
 * Thrown (or used to fail a future) when a batcher refuses an item because its ring is full: at once under
 * {@link OverflowPolicy#DROP}, after {@link BatcherConfig#submitTimeout()} under {@link OverflowPolicy#BLOCK},
 * or when the waiting producer was interrupted. The message names the batcher, its capacity and the reason:
 * {@code "Batcher 'orders' is full (capacity 1024); item dropped"}.
 *
 * <p>Created without a stack trace: rejections are expected under overload and must stay cheap, and the
 * message says everything the trace would.
 */
public final class BatcherFullException extends RejectedExecutionException {
  private static final long serialVersionUID = 1L;

  private final String batcherName;
  private final int capacity;
  private final RejectionReason reason;

  /**
   * Creates the exception.
   *
   * @param batcherName the batcher's name
   * @param capacity the batcher's ring size
   * @param reason why the item was refused
   * @param detail what happened to the item, e.g. {@code "item dropped"}
   */
  public BatcherFullException(String batcherName, int capacity, RejectionReason reason, String detail) {
    super("Batcher '" + batcherName + "' is full (capacity " + capacity + "); " + detail);
    this.batcherName = batcherName;
    this.capacity = capacity;
    this.reason = reason;
  }

  /** Returns the name of the batcher that refused the item. */
  public String batcherName() {
    return batcherName;
  }

  /** Returns the ring size of that batcher. */
  public int capacity() {
    return capacity;
  }

  /** Returns why the item was refused: {@code FULL}, {@code TIMEOUT} or {@code INTERRUPTED}. */
  public RejectionReason reason() {
    return reason;
  }

  @Override
  public synchronized Throwable fillInStackTrace() {
    return this;
  }
}
