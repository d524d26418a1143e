package dev.ringbatch.internal.shared;

import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;

/**
 * Walks a throwable's cause chain. Causes may form a loop ({@link Throwable#initCause} refuses only a
 * throwable as its own cause), and the retry decision runs on the consumer thread: the walk is bounded.
 */
public final class Causes {
  /** Far deeper than any real chain; a loop ends here. */
  private static final int MAX_DEPTH = 64;

  private Causes() {}

  /** Whether {@code t} or one of its first causes matches {@code test}. */
  public static boolean any(@Nullable Throwable t, Predicate<Throwable> test) {
    Throwable c = t;
    for (int depth = 0; c != null && depth < MAX_DEPTH; depth++, c = c.getCause()) {
      if (test.test(c)) {
        return true;
      }
    }
    return false;
  }

  /**
   * The cause inside a {@link java.util.concurrent.CompletionException} (what {@code get()} throws from a future
   * completed with it); the exception itself if it has none, or if asking for it throws; null for null.
   */
  public static @Nullable Throwable unwrapCompletion(@Nullable Throwable failure) {
    if (!(failure instanceof java.util.concurrent.CompletionException)) {
      return failure;
    }
    try {
      Throwable inner = failure.getCause();
      return inner != null ? inner : failure;
    } catch (Throwable brokenGetCause) {
      return failure;
    }
  }
}
