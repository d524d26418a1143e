package dev.ringbatch.internal;

import dev.ringbatch.Ticker;
import java.lang.System.Logger.Level;

/**
 * The configured {@link Ticker}, which is user code, read so that it can never throw into the consumer: a
 * ticker that throws is reported once and replaced by {@link System#nanoTime()} for that read. A batcher's
 * parts read time only through this.
 */
final class GuardedTicker implements Ticker {
  private static final System.Logger LOG = System.getLogger(GuardedTicker.class.getName());

  private final String batcherName;
  private final Ticker ticker;
  private volatile boolean reported;

  GuardedTicker(String batcherName, Ticker ticker) {
    this.batcherName = batcherName;
    this.ticker = ticker;
  }

  @Override
  public long read() {
    try {
      return ticker.read();
    } catch (Throwable t) {
      if (!reported) {
        reported = true;
        SafeLog.log(LOG, Level.ERROR, "the ticker of batcher '" + batcherName + "' threw; System.nanoTime() is"
            + " used for each read that throws", t);
      }
      return System.nanoTime();
    }
  }
}
