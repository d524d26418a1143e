package dev.ringbatch.jmh;

import java.util.List;
import java.util.function.Consumer;

/**
 * A sink that behaves like a database on the same machine: busy for 20 us per batch (a round trip and a
 * commit) plus 50 ns per item, spinning rather than sleeping so that the cost is CPU, as it is for a driver
 * encoding rows. {@code "noop"} counts only.
 */
final class SimulatedDatabase implements Consumer<List<Long>> {
  private static final long PER_BATCH_NANOS = 20_000;
  private static final long PER_ITEM_NANOS = 50;
  private volatile long items;

  static Consumer<List<Long>> named(String sink) {
    switch (sink) {
      case "noop":
        return new Target.CountingConsumer();
      case "db":
        return new SimulatedDatabase();
      default:
        throw new IllegalArgumentException("unknown sink " + sink + " (noop or db)");
    }
  }

  @Override
  public void accept(List<Long> batch) {
    long until = System.nanoTime() + PER_BATCH_NANOS + PER_ITEM_NANOS * batch.size();
    while (System.nanoTime() - until < 0) {
      Thread.onSpinWait();
    }
    items += batch.size(); // one writer at a time
  }
}
