package dev.ringbatch;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * A sink for tests: records every batch (a copy of its items), returns each item's {@code toString()}
 * length as its result, and can be held shut so that a test knows the consumer is busy inside the sink.
 * Thread-safe for the test thread reading while the consumer writes.
 */
final class RecordingSink<T> implements BatchSink<T, Integer> {
  private final List<List<T>> batches = new CopyOnWriteArrayList<>();
  private final Semaphore entered = new Semaphore(0);
  private volatile CountDownLatch gate = new CountDownLatch(0);

  /** From now on every write waits until {@link #open()}. */
  RecordingSink<T> hold() {
    gate = new CountDownLatch(1);
    return this;
  }

  /** Lets every held and later write through. */
  void open() {
    gate.countDown();
  }

  /** Waits until the consumer has entered {@code write} once more (the call records its batch first). */
  void awaitEntered() throws InterruptedException {
    if (!entered.tryAcquire(10, TimeUnit.SECONDS)) {
      throw new AssertionError("the sink was not called within 10 s");
    }
  }

  @Override
  public void write(Batch<T, Integer> batch) throws Exception {
    batches.add(new ArrayList<>(batch.items()));
    entered.release();
    if (!gate.await(30, TimeUnit.SECONDS)) {
      throw new AssertionError("the test never opened the sink");
    }
    for (int i = 0; i < batch.size(); i++) {
      batch.complete(i, batch.item(i).toString().length());
    }
  }

  List<List<T>> batches() {
    return batches;
  }

  List<Integer> batchSizes() {
    List<Integer> sizes = new ArrayList<>();
    for (List<T> batch : batches) {
      sizes.add(batch.size());
    }
    return sizes;
  }

  List<T> items() {
    List<T> all = new ArrayList<>();
    batches.forEach(all::addAll);
    return all;
  }
}
