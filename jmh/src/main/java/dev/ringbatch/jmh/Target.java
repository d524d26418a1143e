package dev.ringbatch.jmh;

import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.OverflowPolicy;
import dev.ringbatch.WaitMode;
import dev.ringbatch.jmh.baseline.DirectSink;
import dev.ringbatch.jmh.baseline.QueueBatcher;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadFactory;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * What a benchmark drives: ringbatch or one of the baselines, all with the same capacity and batch limit and
 * a sink that only counts. Each JMH fork uses one implementation, so the calls stay monomorphic.
 */
abstract class Target {
  static final int CAPACITY = 16_384;
  static final int MAX_BATCH = 1_024;

  /** Fire and forget. */
  abstract void offer(Long item) throws InterruptedException;

  /** Submit with a future. */
  abstract CompletableFuture<?> submit(Long item) throws InterruptedException;

  /** Waits until everything accepted so far reached the sink: makes an iteration end to end. */
  abstract void drain() throws InterruptedException;

  abstract double meanBatchSize();

  abstract void close() throws InterruptedException;

  static Target create(String name) {
    return create(name, CAPACITY, MAX_BATCH);
  }

  /** An implementation with {@code capacity} slots (ring or queue) and batches of at most {@code maxBatch}. */
  static Target create(String name, int capacity, int maxBatch) {
    return create(name, capacity, maxBatch, new CountingConsumer());
  }

  /** As {@link #create(String, int, int)}, every implementation writing its batches with {@code writer}. */
  static Target create(String name, int capacity, int maxBatch, Consumer<List<Long>> writer) {
    Consumer<List<Long>> counting = writer;
    switch (name) {
      case "ringbatch":
        return new Ringbatch(WaitMode.BLOCKING, capacity, maxBatch, counting);
      case "ringbatch-yielding":
        return new Ringbatch(WaitMode.YIELDING, capacity, maxBatch, counting);
      case "ringbatch-itemwaits": // with a recorder asking for item waits, as BatcherMetrics does by default
        return new Ringbatch(WaitMode.BLOCKING, capacity, maxBatch, counting).timingItemWaits();
      case "ringbatch-vconsumer": // the consumer on a virtual thread, beside virtual callers (JDK 21+)
        return new Ringbatch(WaitMode.BLOCKING, capacity, maxBatch, counting, VirtualThreads.factory());
      case "abq":
        return new Queue(QueueBatcher.arrayBlocking(capacity, maxBatch, counting));
      case "lbq":
        return new Queue(QueueBatcher.linkedBlocking(capacity, maxBatch, counting));
      case "direct":
        return new Direct(new DirectSink<>(counting));
      default:
        throw new IllegalArgumentException("unknown target " + name);
    }
  }

  /** Counts items; the volatile write keeps the JIT from removing the consumer's work. */
  static final class CountingConsumer implements Consumer<List<Long>> {
    private volatile long items;

    @Override
    public void accept(List<Long> batch) {
      items += batch.size(); // one writer: the consumer thread (or the lock holder)
    }
  }

  /** Sums the item waits it is told; the volatile writes keep the JIT from removing the work. */
  static final class ItemWaitSums implements dev.ringbatch.stats.StatsRecorder {
    private volatile long items;
    private volatile long totalNanos;

    @Override
    public boolean recordsItemWaits() {
      return true;
    }

    @Override
    public void recordItemWaits(int count, long totalWaitNanos, long maxWaitNanos) {
      items += count; // one writer: the consumer thread
      totalNanos += totalWaitNanos;
    }
  }

  static final class Ringbatch extends Target {
    private final Batcher<Long, Void> batcher;

    Ringbatch(WaitMode mode, int capacity, int maxBatch, Consumer<List<Long>> writer) {
      this(mode, capacity, maxBatch, writer, null);
    }

    Ringbatch(WaitMode mode, int capacity, int maxBatch, Consumer<List<Long>> writer,
        @Nullable ThreadFactory consumerThreads) {
      BatcherConfig.Builder config = BatcherConfig.builder().ringSize(capacity).maxBatchSize(maxBatch)
          .overflowPolicy(OverflowPolicy.BLOCK).submitTimeout(BatcherConfig.NO_TIMEOUT).waitMode(mode);
      if (consumerThreads != null) {
        config.threadFactory(consumerThreads);
      }
      batcher = Batcher.of("bench", config.build(), BatchSink.noResult(writer::accept));
    }

    /** Adds a recorder that asks for item waits and sums them, as a meter would: every item is stamped. */
    Ringbatch timingItemWaits() {
      batcher.addStatsRecorder(new ItemWaitSums());
      return this;
    }

    @Override
    void offer(Long item) {
      batcher.offer(item);
    }

    @Override
    CompletableFuture<?> submit(Long item) {
      return batcher.submit(item);
    }

    @Override
    void drain() {
      batcher.flush().join();
    }

    @Override
    double meanBatchSize() {
      return batcher.stats().meanBatchSize();
    }

    @Override
    void close() {
      batcher.close(Duration.ofSeconds(10));
    }
  }

  static final class Queue extends Target {
    private final QueueBatcher<Long> batcher;

    Queue(QueueBatcher<Long> batcher) {
      this.batcher = batcher;
    }

    @Override
    void offer(Long item) throws InterruptedException {
      batcher.offer(item);
    }

    @Override
    CompletableFuture<?> submit(Long item) throws InterruptedException {
      return batcher.submit(item);
    }

    @Override
    void drain() throws InterruptedException {
      batcher.flush().join();
    }

    @Override
    double meanBatchSize() {
      return batcher.meanBatchSize();
    }

    @Override
    void close() throws InterruptedException {
      batcher.close();
    }
  }

  static final class Direct extends Target {
    private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);
    private final DirectSink<Long> sink;

    Direct(DirectSink<Long> sink) {
      this.sink = sink;
    }

    @Override
    void offer(Long item) {
      sink.write(item);
    }

    @Override
    CompletableFuture<?> submit(Long item) {
      sink.write(item);
      return DONE;
    }

    @Override
    void drain() {
      // every write already reached the sink when the call returned
    }

    @Override
    double meanBatchSize() {
      return 1;
    }

    @Override
    void close() {
      // nothing runs in the background
    }
  }
}
