package dev.ringbatch;

import org.jspecify.annotations.Nullable;

/**
 * The sink cannot tell whether an item was written: the reply to a {@code COMMIT} (or to a statement that
 * commits on its own) was lost, a disk filled up in the middle of a batch that had already written part of
 * its bytes. The caller is told exactly that: the item may be in the target system or not, and only the
 * target can say (look it up by a key before writing it again).
 *
 * <p>A {@link RetryPolicy} never retries a batch that failed with this exception (anywhere in its cause
 * chain): writing it again could duplicate what was written. Sinks whose writes are idempotent (such as
 * {@link dev.ringbatch.sink.JdbcBatchSink}'s {@code ON CONFLICT} mode) can retry safely and do not use it.
 */
public class OutcomeUnknownException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened, and what is unknown
   * @param cause the error that made the outcome unknown
   */
  public OutcomeUnknownException(String message, @Nullable Throwable cause) {
    super(message, cause);
  }

  /** Whether {@code t} or any of its causes is an {@code OutcomeUnknownException}. */
  public static boolean isIn(@Nullable Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
      if (c instanceof OutcomeUnknownException) {
        return true;
      }
    }
    return false;
  }
}
