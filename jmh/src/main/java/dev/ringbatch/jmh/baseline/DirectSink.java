package dev.ringbatch.jmh.baseline;

import java.util.List;
import java.util.function.Consumer;

/** The floor: no batching, every caller calls the sink itself under a lock, one item at a time. */
public final class DirectSink<T> {
  private final Consumer<List<T>> sink;

  public DirectSink(Consumer<List<T>> sink) {
    this.sink = sink;
  }

  public synchronized void write(T item) {
    sink.accept(List.of(item));
  }
}
