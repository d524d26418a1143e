package dev.ringbatch.spring.boot;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * The sink writes of one batcher that have begun and not ended, for its health (the age of the oldest) and
 * its long-task timer. A write begins when the sink's {@code write} is called and ends when it returns or
 * throws, or, for an asynchronous sink, when its stage completes. Begun and ended on the consumer thread (or
 * the completing thread), read by health checks: a concurrent map of a few entries, one per write in flight.
 */
final class WritesInProgress {
  /** Told of each write as it begins; returns what to run when it ends (a long-task timer's sample stop). */
  @FunctionalInterface
  interface Listener {
    Runnable begun();
  }

  /** Whether the latest batcher of this name has an asynchronous sink: for the meters' {@code sink} tag. */
  volatile boolean async;

  private final LongSupplier nanoTime;
  private final Map<Object, Long> starts = new ConcurrentHashMap<>();
  private final List<Listener> listeners = new CopyOnWriteArrayList<>();

  WritesInProgress(LongSupplier nanoTime) {
    this.nanoTime = nanoTime;
  }

  void addListener(Listener listener) {
    listeners.add(listener);
  }

  void removeListener(Listener listener) {
    listeners.remove(listener);
  }

  /** Records a write beginning now; the returned action ends it, and must run exactly once. */
  Runnable begin() {
    Object write = new Object();
    starts.put(write, nanoTime.getAsLong());
    Runnable[] ends = new Runnable[listeners.size()];
    int n = 0;
    for (Listener listener : listeners) {
      if (n == ends.length) {
        break; // a listener added meanwhile sees the next write
      }
      ends[n++] = listener.begun();
    }
    int begun = n;
    return () -> {
      starts.remove(write);
      for (int i = 0; i < begun; i++) {
        ends[i].run();
      }
    };
  }

  /** How long the oldest write in progress has run, or null if none is. */
  @Nullable Duration oldestAge() {
    long now = nanoTime.getAsLong();
    long oldest = 0;
    boolean any = false;
    for (long start : starts.values()) {
      long age = now - start;
      if (!any || age > oldest) {
        oldest = age;
        any = true;
      }
    }
    return any ? Duration.ofNanos(Math.max(0, oldest)) : null;
  }
}
