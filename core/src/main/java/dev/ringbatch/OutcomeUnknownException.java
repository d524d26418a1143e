package dev.ringbatch;

import dev.ringbatch.internal.shared.Causes;
import org.jspecify.annotations.Nullable;

/**
 * The sink cannot tell whether an item was written: the reply to a {@code COMMIT} (or to a statement that
 * commits on its own) was lost, a disk filled up in the middle of a batch that had already written part of
 * its bytes. The caller is told exactly that: the item may be in the target system or not, and only the
 * target can say (look it up by a key before writing it again).
 *
 * <p>A {@link RetryPolicy} never retries a batch that failed with this exception (anywhere in its cause
 * chain): writing it again could duplicate what was written. The exception is the one case: a sink whose
 * writes are idempotent (such as {@link dev.ringbatch.sink.JdbcBatchSink} built with
 * {@code idempotent()}: {@code ON CONFLICT DO NOTHING}) says so with {@link #isSafeToRetry()}, and such a
 * batch is retried as the policy says; callers still get this exception if the retries run out.
 */
public class OutcomeUnknownException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final boolean safeToRetry;

  /**
   * Creates the exception.
   *
   * @param message what happened, and what is unknown
   * @param cause the error that made the outcome unknown
   */
  public OutcomeUnknownException(String message, @Nullable Throwable cause) {
    this(message, cause, false);
  }

  /**
   * Creates the exception.
   *
   * @param message what happened, and what is unknown
   * @param cause the error that made the outcome unknown
   * @param safeToRetry whether writing the items again cannot duplicate them (the write is idempotent)
   */
  public OutcomeUnknownException(String message, @Nullable Throwable cause, boolean safeToRetry) {
    super(message, cause);
    this.safeToRetry = safeToRetry;
  }

  /** Whether writing the items again cannot duplicate them: the sink's writes are idempotent. */
  public boolean isSafeToRetry() {
    return safeToRetry;
  }

  /** Whether {@code t} or any of its causes is an {@code OutcomeUnknownException}. */
  public static boolean isIn(@Nullable Throwable t) {
    return Causes.any(t, c -> c instanceof OutcomeUnknownException);
  }

  /**
   * Whether {@code t} or any of its causes is an {@code OutcomeUnknownException} that is not
   * {@linkplain #isSafeToRetry() safe to retry}: such a batch must not be written again.
   */
  public static boolean forbidsRetry(@Nullable Throwable t) {
    return Causes.any(t, c -> c instanceof OutcomeUnknownException unknown && !unknown.safeToRetry);
  }
}
