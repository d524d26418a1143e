package dev.ringbatch.internal.shared;

import java.lang.System.Logger;
import java.lang.System.Logger.Level;
import org.jspecify.annotations.Nullable;

/**
 * Logging that can never throw into the batcher: a log handler is user code, and so is the {@code toString}
 * or {@code getMessage} of a sink's exception. A failure to log is reported on {@code System.err}, once per
 * call, and otherwise dropped.
 */
public final class SafeLog {
  private SafeLog() {}

  public static void log(Logger logger, Level level, String message, @Nullable Throwable t) {
    try {
      if (t == null) {
        logger.log(level, message);
      } else {
        logger.log(level, message, t);
      }
    } catch (Throwable failed) {
      try {
        System.err.println("ringbatch: could not log \"" + message + "\": " + describe(failed));
      } catch (Throwable ignored) {
        // System.err itself failed: nothing is left to tell
      }
    }
  }

  /** The exception as {@code toString()} gives it, or its class name if that throws. */
  public static String describe(@Nullable Throwable t) {
    if (t == null) {
      return "null";
    }
    try {
      return String.valueOf(t);
    } catch (Throwable broken) {
      return t.getClass().getName() + " (whose toString() threw " + broken.getClass().getName() + ")";
    }
  }
}
