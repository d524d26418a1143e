package dev.ringbatch;

/**
 * Thrown by {@link Batcher#submitAndWait} when the sink failed the caller's item; the sink's exception is
 * the {@linkplain #getCause() cause}.
 */
public final class BatchWriteException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param batcherName the batcher's name
   * @param cause what the sink threw or recorded for the item
   */
  public BatchWriteException(String batcherName, Throwable cause) {
    super("Batcher '" + batcherName + "' failed to write the item: " + cause, cause);
  }
}
