package dev.ringbatch.internal.consume;

import dev.ringbatch.OutcomeUnknownException;

/** Whether a failure says its outcome is unknown, and what a later failure of the same items becomes then. */
final class UnknownOutcomes {
  private UnknownOutcomes() {}

  /**
   * What an item, or a whole batch, fails with when an earlier attempt's outcome was unknown ({@code unknown}) and a
   * later one failed it with {@code later}: that attempt may have written it, so the outcome is unknown (and as safe
   * to retry as the earlier attempt said, or no retry would have followed it). Named by class only: no user code
   * runs here.
   */
  static OutcomeUnknownException afterUnknownAttempt(Throwable unknown, Throwable later) {
    OutcomeUnknownException outcome = new OutcomeUnknownException("an earlier attempt of this batch failed with its"
        + " outcome unknown (" + unknown.getClass().getName() + ") and a later one failed with "
        + later.getClass().getName() + ": the items may or may not have been written", later, true);
    outcome.addSuppressed(unknown);
    return outcome;
  }

  /**
   * Whether {@code failure} says its outcome is unknown. Its cause chain is user code: one that throws is read as
   * "not unknown", and the failure still reaches the callers as it is.
   */
  static boolean outcomeUnknown(Throwable failure) {
    try {
      return OutcomeUnknownException.isIn(failure);
    } catch (Throwable brokenChain) {
      return false;
    }
  }
}
