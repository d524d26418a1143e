package dev.ringbatch.jmh.baseline;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.function.Consumer;

/**
 * The batcher a careful engineer would write by hand, the honest baseline: producers {@code put} into a
 * bounded {@link BlockingQueue}; one consumer thread {@code take}s the first entry, {@code drainTo}s up to a
 * batch more, calls the sink and completes the futures. Natural batching too: whatever the queue holds
 * becomes the batch.
 *
 * @param <T> the item type
 */
@SuppressWarnings("try") // close() joins the consumer and lets the benchmark see an interrupt
public final class QueueBatcher<T> implements AutoCloseable {

  /** An item with the future of its caller; {@code offer} puts items without an entry. */
  private record Entry(Object item, CompletableFuture<Void> future) {}

  private static final Object STOP = new Object();

  private final BlockingQueue<Object> queue;
  private final int maxBatch;
  private final Consumer<List<T>> sink;
  private final Thread consumer;
  private volatile long batches;
  private volatile long items;

  private QueueBatcher(BlockingQueue<Object> queue, int maxBatch, Consumer<List<T>> sink) {
    this.queue = queue;
    this.maxBatch = maxBatch;
    this.sink = sink;
    this.consumer = new Thread(this::consume, "queue-batcher");
    consumer.setDaemon(true);
    consumer.start();
  }

  /** An {@link ArrayBlockingQueue} of {@code capacity}. */
  public static <T> QueueBatcher<T> arrayBlocking(int capacity, int maxBatch, Consumer<List<T>> sink) {
    return new QueueBatcher<>(new ArrayBlockingQueue<>(capacity), maxBatch, sink);
  }

  /** A {@link LinkedBlockingQueue} of {@code capacity}. */
  public static <T> QueueBatcher<T> linkedBlocking(int capacity, int maxBatch, Consumer<List<T>> sink) {
    return new QueueBatcher<>(new LinkedBlockingQueue<>(capacity), maxBatch, sink);
  }

  /** Queues an item with a future, waiting for room. */
  public CompletableFuture<Void> submit(T item) throws InterruptedException {
    CompletableFuture<Void> future = new CompletableFuture<>();
    queue.put(new Entry(item, future));
    return future;
  }

  /** Queues an item without a future, waiting for room; allocates nothing. */
  public void offer(T item) throws InterruptedException {
    queue.put(item);
  }

  /** Returns a future that completes when everything queued before it has been written. */
  public CompletableFuture<Void> flush() throws InterruptedException {
    CompletableFuture<Void> marker = new CompletableFuture<>();
    queue.put(new Entry(STOP, marker));
    return marker;
  }

  public double meanBatchSize() {
    long b = batches;
    return b == 0 ? 0 : (double) items / b;
  }

  @SuppressWarnings("unchecked")
  private void consume() {
    List<Object> drained = new ArrayList<>(maxBatch);
    List<T> batch = new ArrayList<>(maxBatch);
    List<CompletableFuture<Void>> futures = new ArrayList<>(maxBatch);
    try {
      while (true) {
        drained.add(queue.take());
        queue.drainTo(drained, maxBatch - 1);
        boolean stop = false;
        for (Object o : drained) {
          if (o instanceof Entry entry) {
            if (entry.item() == STOP) {
              futures.add(entry.future());
              continue;
            }
            batch.add((T) entry.item());
            futures.add(entry.future());
          } else if (o == STOP) {
            stop = true;
          } else {
            batch.add((T) o);
          }
        }
        if (!batch.isEmpty()) {
          sink.accept(batch);
          batches++;
          items += batch.size();
        }
        for (CompletableFuture<Void> future : futures) {
          future.complete(null);
        }
        drained.clear();
        batch.clear();
        futures.clear();
        if (stop) {
          return;
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public void close() throws InterruptedException {
    queue.put(STOP);
    consumer.join(10_000);
  }
}
