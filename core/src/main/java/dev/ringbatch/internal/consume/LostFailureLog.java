package dev.ringbatch.internal.consume;

import dev.ringbatch.internal.shared.SafeLog;
import java.lang.System.Logger.Level;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * Logs the failures nobody else can be told of (fire-and-forget items the sink failed, an offer failure handler
 * that threw) at most once per {@link #INTERVAL_NANOS} per batcher: the first with its stack trace, the ones in
 * between summed up in the next line. A sink failing every batch then costs a line every ten seconds, not a stack
 * trace per batch. Thread-safe: the consumer and async completing threads share it.
 */
public final class LostFailureLog {
  private static final System.Logger LOG = System.getLogger(BatchCompleter.class.getName());

  /** Ten seconds between two lines. */
  static final long INTERVAL_NANOS = 10_000_000_000L;

  private final String name;
  private final LongSupplier nanoClock;
  private boolean loggedBefore;
  private long lastLogged;
  private long unloggedItems;
  private long unloggedBatches;
  private long unloggedHandlerFailures;

  /** The log of batcher {@code name}, on the system clock. */
  public LostFailureLog(String name) {
    this(name, System::nanoTime);
  }

  public LostFailureLog(String name, LongSupplier nanoClock) {
    this.name = name;
    this.nanoClock = nanoClock;
  }

  /** {@code items} fire-and-forget items of a batch of {@code size} failed, the last with {@code cause}. */
  void failed(int items, int size, @Nullable Throwable cause) {
    String summary;
    synchronized (this) {
      unloggedItems += items;
      unloggedBatches++;
      if (!due()) {
        return;
      }
      summary = unloggedItems == items ? ""
          : " (" + (unloggedItems - items) + " more in " + (unloggedBatches - 1) + " batches since the last line)";
      unloggedItems = 0;
      unloggedBatches = 0;
    }
    SafeLog.log(LOG, Level.WARNING, "batcher '" + name + "': " + items + " fire-and-forget item(s) of a batch of "
        + size + " failed" + summary + "; logged at most once every 10 s: stats().failed() counts them all, and"
        + " BatcherConfig.Builder.offerFailureHandler takes each one", cause);
  }

  /** The offer failure handler threw {@code t}. */
  void handlerThrew(Throwable t) {
    long before;
    synchronized (this) {
      unloggedHandlerFailures++;
      if (!due()) {
        return;
      }
      before = unloggedHandlerFailures - 1;
      unloggedHandlerFailures = 0;
    }
    SafeLog.log(LOG, Level.WARNING, "batcher '" + name + "': the offer failure handler threw"
        + (before == 0 ? "" : " (and " + before + " more times since the last line)"), t);
  }

  /** Whether a line may be logged now; under the lock. */
  private boolean due() {
    long now = nanoClock.getAsLong();
    if (loggedBefore && now - lastLogged < INTERVAL_NANOS) {
      return false;
    }
    loggedBefore = true;
    lastLogged = now;
    return true;
  }
}
