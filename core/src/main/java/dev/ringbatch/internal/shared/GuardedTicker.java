package dev.ringbatch.internal.shared;

import dev.ringbatch.Ticker;
import java.lang.System.Logger.Level;

/**
 * The configured {@link Ticker}, which is user code, read so that it can never throw into the consumer: a
 * ticker that throws is reported and replaced by {@link System#nanoTime()} for good. Readings of the two
 * origins then meet only across that one switch (a linger started before it, say), and the consumer treats a
 * deadline further away than its linger as past (see {@link ConsumerWaitStrategy}). Falling back for the one
 * read that threw, and going on with the ticker, would mix the origins at every throw. A batcher's parts read
 * time only through this.
 */
public final class GuardedTicker implements Ticker {
  private static final System.Logger LOG = System.getLogger(GuardedTicker.class.getName());

  private final String batcherName;
  private final Ticker ticker;
  /** Set once, when the ticker first throws: from then on only System.nanoTime() is read. */
  private volatile boolean broken;

  public GuardedTicker(String batcherName, Ticker ticker) {
    this.batcherName = batcherName;
    this.ticker = ticker;
  }

  @Override
  public long read() {
    if (broken) {
      return System.nanoTime();
    }
    try {
      return ticker.read();
    } catch (Throwable t) {
      if (!broken) {
        broken = true;
        SafeLog.log(LOG, Level.ERROR, "the ticker of batcher '" + batcherName + "' threw; System.nanoTime() is"
            + " used instead from now on", t);
      }
      return System.nanoTime();
    }
  }
}
