package dev.ringbatch.internal;

import static dev.ringbatch.internal.Checks.requireArgument;
import static dev.ringbatch.internal.Checks.requireNonNegative;
import static dev.ringbatch.internal.Checks.requireState;
import static java.util.Objects.requireNonNull;

import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import com.lmax.disruptor.SequenceBarrier;
import dev.ringbatch.AsyncBatchSink;
import dev.ringbatch.BatchLimits;
import dev.ringbatch.BatchSink;
import dev.ringbatch.BatchWriteException;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherClosedException;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.BatcherFullException;
import dev.ringbatch.BatcherStats;
import dev.ringbatch.CloseReport;
import dev.ringbatch.OverflowPolicy;
import dev.ringbatch.RejectionReason;
import dev.ringbatch.Weigher;
import dev.ringbatch.stats.StatsRecorder;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * The {@link Batcher} on a Disruptor multi-producer ring: the publish path (claim, fill, publish, with the
 * overflow policy when the ring is full) and the close protocol. The consumer side is
 * {@link CoalescingConsumer}.
 *
 * <h2>Publishing</h2>
 * A producer claims a sequence with {@code tryNext()} and only then reads {@code state}. The claim is a CAS
 * on the ring cursor, so a producer that claims after close claimed its marker also sees the closing state:
 * it publishes a tombstone and refuses its own item. Every item published as {@code ITEM} therefore lies
 * before the close marker, and the consumer writes it before it stops.
 *
 * <h2>Closing</h2>
 * Close sets {@code CLOSING}, publishes the close marker (waiting for room up to the timeout) and waits for
 * the consumer to reach it. If time runs out, it takes over from the consumer
 * ({@link CoalescingConsumer#handOver()}) and fails the pending batch and every unread item.
 */
public final class DisruptorBatcher<T, R> implements Batcher<T, R> {
  private static final System.Logger LOG = System.getLogger(Batcher.class.getName());

  private static final long REJECTED_FULL = -1;
  private static final long REJECTED_TIMEOUT = -2;
  private static final long REJECTED_INTERRUPTED = -3;
  private static final long REJECTED_CLOSED = -4;
  private static final long REJECTED_ON_CONSUMER = -5;

  /** How long an abandoning close waits for an idle consumer to stop, past the caller's timeout. */
  private static final long HAND_OVER_GRACE_NANOS = TimeUnit.MILLISECONDS.toNanos(200);
  private static final long MAX_PARK_NANOS = TimeUnit.MICROSECONDS.toNanos(50);

  private final String name;
  private final BatcherConfig config;
  private final int ringSize;
  private final @Nullable Weigher<? super T> weigher;
  private final OverflowPolicy overflowPolicy;
  private final long submitTimeoutNanos;
  private final RingBuffer<SubmissionSlot> ring;
  private final Sequence consumed = new Sequence(-1);
  private final ConsumerWaitStrategy waitStrategy;
  private final CoalescingConsumer<T, R> consumer;
  private final Thread consumerThread;
  private final ConsumerGroup consumers;
  private final GuardedStatsRecorders recorders;
  private final FlushWaiters flushWaiters = new FlushWaiters();
  private final LongAdder[] rejections = new LongAdder[RejectionReason.values().length];
  private final AtomicReference<@Nullable CompletableFuture<CloseReport>> closing = new AtomicReference<>();

  private final PublishGate gate;
  private volatile long abandoned;
  private volatile @Nullable CloseReport closeReport;
  private volatile @Nullable Throwable abandonment;

  private DisruptorBatcher(String name, BatcherConfig config, @Nullable Weigher<? super T> weigher,
      @Nullable BatchSink<T, R> sink, @Nullable AsyncBatchSink<T, R> asyncSink, ConsumerGroup consumers) {
    this.name = name;
    this.config = config;
    this.ringSize = config.ringSize();
    this.weigher = weigher;
    this.overflowPolicy = config.overflowPolicy();
    this.submitTimeoutNanos = Checks.saturatedNanos(config.submitTimeout());
    this.recorders = new GuardedStatsRecorders(name);
    for (int i = 0; i < rejections.length; i++) {
      rejections[i] = new LongAdder();
    }
    this.waitStrategy = new ConsumerWaitStrategy(config.waitMode(), config.ticker());
    this.ring = RingBuffer.createMultiProducer(SubmissionSlot::new, ringSize, waitStrategy);
    ring.addGatingSequences(consumed);
    this.gate = new PublishGate(ring);
    SequenceBarrier barrier = ring.newBarrier();
    this.consumer = new CoalescingConsumer<>(name, ring, barrier, consumed, waitStrategy, sink, asyncSink,
        config.maxInFlightBatches(), config.retryPolicy(), config.limits(), config.ticker(), recorders, flushWaiters);
    ThreadFactory factory = config.threadFactory();
    Thread thread = factory == null ? defaultThread(name, consumer) : factory.newThread(consumer);
    this.consumerThread = requireNonNull(thread, "threadFactory returned null");
    this.consumers = consumers;
    consumers.add(thread);
  }

  /** Validates, creates and starts a batcher; the entry point of {@link Batcher#of}. */
  public static <T, R> Batcher<T, R> start(String name, BatcherConfig config,
      @Nullable Weigher<? super T> weigher, BatchSink<T, R> sink) {
    return start(name, config, weigher, sink, new ConsumerGroup());
  }

  /** Validates, creates and starts a batcher with an async sink; the entry point of {@link Batcher#ofAsync}. */
  public static <T, R> Batcher<T, R> startAsync(String name, BatcherConfig config,
      @Nullable Weigher<? super T> weigher, AsyncBatchSink<T, R> sink) {
    requireNonNull(sink, "sink");
    return start(name, config, weigher, null, sink, new ConsumerGroup());
  }

  /** As {@link #start(String, BatcherConfig, Weigher, BatchSink)}, as a member of {@code consumers}. */
  static <T, R> DisruptorBatcher<T, R> start(String name, BatcherConfig config,
      @Nullable Weigher<? super T> weigher, BatchSink<T, R> sink, ConsumerGroup consumers) {
    requireNonNull(sink, "sink");
    return start(name, config, weigher, sink, null, consumers);
  }

  private static <T, R> DisruptorBatcher<T, R> start(String name, BatcherConfig config,
      @Nullable Weigher<? super T> weigher, @Nullable BatchSink<T, R> sink, @Nullable AsyncBatchSink<T, R> asyncSink,
      ConsumerGroup consumers) {
    Checks.requireName(name);
    requireNonNull(config, "config");
    requireState(weigher != null || !config.limits().hasByteLimit(),
        "maxBatchBytes (%s) needs a weigher: use Batcher.of(name, config, weigher, sink)",
        config.limits().maxBatchBytes());
    DisruptorBatcher<T, R> batcher = new DisruptorBatcher<>(name, config, weigher, sink, asyncSink, consumers);
    batcher.consumerThread.start();
    return batcher;
  }

  private static Thread defaultThread(String name, Runnable consumer) {
    Thread thread = new Thread(consumer, "ringbatch-" + name);
    thread.setDaemon(true);
    return thread;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public BatcherConfig config() {
    return config;
  }

  // ---------------------------------------------------------------- publishing

  @Override
  public CompletableFuture<R> submit(T item) {
    requireNonNull(item, "item");
    long weight = weigh(item);
    CompletableFuture<R> future = new CompletableFuture<>();
    long sequence = claim();
    if (sequence < 0) {
      future.completeExceptionally(rejection(sequence));
    } else if (!publish(sequence, item, future, weight)) {
      future.completeExceptionally(rejection(REJECTED_CLOSED));
    }
    return future;
  }

  @Override
  public boolean offer(T item) {
    requireNonNull(item, "item");
    long weight = weigh(item);
    long sequence = claim();
    return sequence >= 0 && publish(sequence, item, null, weight);
  }

  @Override
  public R submitAndWait(T item) throws InterruptedException {
    requireState(!consumers.contains(Thread.currentThread()),
        "submitAndWait must not be called on the consumer thread of batcher '%s' (for example from its sink):"
            + " it would wait for itself; use submit or offer", name);
    CompletableFuture<R> future = submit(item);
    try {
      return future.get();
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof BatcherFullException full) {
        if (full.reason() == RejectionReason.INTERRUPTED) {
          Thread.interrupted(); // InterruptedException is the signal now, as the JDK's blocking calls do
          InterruptedException interrupted = new InterruptedException(full.getMessage());
          interrupted.initCause(full);
          throw interrupted;
        }
        throw full;
      }
      if (cause instanceof BatcherClosedException closed) {
        throw closed;
      }
      throw new BatchWriteException(name, cause);
    }
  }

  private long weigh(T item) {
    Weigher<? super T> w = weigher;
    if (w == null) {
      return 0;
    }
    long weight = w.weigh(item);
    requireArgument(weight >= 0, "weigher must return a weight of zero or more but returned %s for %s",
        weight, item);
    return weight;
  }

  /** Fills and publishes a claimed slot; returns false (after publishing a tombstone) if the batcher closed. */
  private boolean publish(long sequence, T item, @Nullable CompletableFuture<R> future, long weight) {
    @SuppressWarnings("unchecked")
    CompletableFuture<Object> untyped = (CompletableFuture<Object>) future;
    if (gate.publish(sequence, item, untyped, weight)) {
      return true;
    }
    countRejection(RejectionReason.CLOSED);
    return false;
  }

  /** Claims a slot, or returns a negative {@code REJECTED_*} code (already counted). */
  private long claim() {
    long sequence = tryClaim();
    if (sequence < 0) {
      sequence = awaitSlot();
      if (sequence < 0) {
        countRejection(reasonOf(sequence));
      }
    }
    return sequence;
  }

  private long tryClaim() {
    long sequence = gate.tryClaim();
    return sequence < 0 ? REJECTED_FULL : sequence;
  }

  /** The ring is full: applies the overflow policy. */
  private long awaitSlot() {
    if (!gate.isOpen()) {
      return REJECTED_CLOSED;
    }
    if (consumers.contains(Thread.currentThread())) {
      return REJECTED_ON_CONSUMER;
    }
    if (overflowPolicy == OverflowPolicy.DROP) {
      return REJECTED_FULL;
    }
    long start = System.nanoTime();
    for (int round = 0; ; round++) {
      if (Thread.currentThread().isInterrupted()) {
        return REJECTED_INTERRUPTED;
      }
      long waited = System.nanoTime() - start;
      if (waited >= submitTimeoutNanos) {
        return REJECTED_TIMEOUT;
      }
      backOff(round, submitTimeoutNanos - waited);
      if (!gate.isOpen()) {
        return REJECTED_CLOSED;
      }
      long sequence = tryClaim();
      if (sequence >= 0) {
        return sequence;
      }
    }
  }

  /** Spins, then yields, then parks in short slices: room appears as soon as the consumer takes a run. */
  private static void backOff(int round, long remainingNanos) {
    if (round < 64) {
      Thread.onSpinWait();
    } else if (round < 80) {
      Thread.yield();
    } else {
      LockSupport.parkNanos(Math.min(remainingNanos, MAX_PARK_NANOS));
    }
  }

  private static RejectionReason reasonOf(long code) {
    if (code == REJECTED_TIMEOUT) {
      return RejectionReason.TIMEOUT;
    } else if (code == REJECTED_INTERRUPTED) {
      return RejectionReason.INTERRUPTED;
    } else if (code == REJECTED_CLOSED) {
      return RejectionReason.CLOSED;
    }
    return RejectionReason.FULL;
  }

  private void countRejection(RejectionReason reason) {
    rejections[reason.ordinal()].increment();
    recorders.recordRejected(reason);
  }

  private RuntimeException rejection(long code) {
    if (code == REJECTED_CLOSED) {
      return new BatcherClosedException(name, ringSize, false, "item rejected");
    } else if (code == REJECTED_TIMEOUT) {
      return new BatcherFullException(name, ringSize, RejectionReason.TIMEOUT,
          "item rejected after waiting " + describe(config.submitTimeout()) + " for room");
    } else if (code == REJECTED_INTERRUPTED) {
      return new BatcherFullException(name, ringSize, RejectionReason.INTERRUPTED,
          "item rejected: the producer was interrupted while waiting for room");
    } else if (code == REJECTED_ON_CONSUMER) {
      return new BatcherFullException(name, ringSize, RejectionReason.FULL,
          "item dropped: submitted on the batcher's own consumer thread, which must not wait for room");
    }
    return new BatcherFullException(name, ringSize, RejectionReason.FULL, "item dropped");
  }

  private static String describe(Duration duration) {
    return duration.toMillis() + " ms";
  }

  // ---------------------------------------------------------------- flush, limits, stats

  @Override
  public CompletableFuture<Void> flush() {
    CompletableFuture<Void> future = flushWaiters.await(ring.getCursor(), waitStrategy::wake);
    if (closeReport != null) {
      flushWaiters.completeAll(abandonment); // the close ended before it could see this waiter
    }
    return future;
  }

  @Override
  public BatchLimits limits() {
    return consumer.limits();
  }

  @Override
  public void setLimits(BatchLimits limits) {
    requireNonNull(limits, "limits");
    requireState(limits.maxBatchSize() <= ringSize,
        "maxBatchSize (%s) must not exceed ringSize (%s)", limits.maxBatchSize(), ringSize);
    requireState(weigher != null || !limits.hasByteLimit(),
        "maxBatchBytes (%s) needs a weigher, but batcher '%s' was created without one",
        limits.maxBatchBytes(), name);
    consumer.setLimits(limits);
  }

  @Override
  public BatcherStats stats() {
    ConsumerCounters counters = consumer.counters();
    long accepted = gate.accepted();
    return new BatcherStats(accepted,
        rejections[RejectionReason.FULL.ordinal()].sum(),
        rejections[RejectionReason.TIMEOUT.ordinal()].sum(),
        rejections[RejectionReason.INTERRUPTED.ordinal()].sum(),
        rejections[RejectionReason.CLOSED.ordinal()].sum(),
        counters.written(), counters.failed(), abandoned, counters.batches(),
        counters.lastBatchSize(), counters.largestBatchSize(), ringSize, ring.remainingCapacity());
  }

  @Override
  public void addStatsRecorder(StatsRecorder recorder) {
    recorders.add(recorder);
  }

  @Override
  public boolean removeStatsRecorder(StatsRecorder recorder) {
    return recorders.remove(recorder);
  }

  // ---------------------------------------------------------------- closing

  @Override
  public boolean isClosed() {
    return !gate.isOpen();
  }

  @Override
  public @Nullable CloseReport closeReport() {
    return closeReport;
  }

  @Override
  public void close() {
    close(config.closeTimeout());
  }

  @Override
  public CloseReport close(Duration timeout) {
    requireNonNegative("timeout", timeout);
    requireState(!consumers.contains(Thread.currentThread()),
        "close() must not be called on the consumer thread of batcher '%s' (for example from its sink):"
            + " it would wait for itself", name);
    CompletableFuture<CloseReport> mine = new CompletableFuture<>();
    CompletableFuture<CloseReport> first = closing.compareAndExchange(null, mine);
    if (first != null) {
      return awaitOtherClose(first, timeout);
    }
    try {
      CloseReport report = shutDown(timeout);
      mine.complete(report);
      return report;
    } catch (RuntimeException | Error e) {
      mine.completeExceptionally(e);
      throw e;
    }
  }

  private CloseReport awaitOtherClose(CompletableFuture<CloseReport> first, Duration timeout) {
    long start = System.nanoTime();
    try {
      return first.get(Checks.saturatedNanos(timeout), TimeUnit.NANOSECONDS);
    } catch (TimeoutException stillClosing) {
      return new CloseReport(false, abandoned, Duration.ofNanos(System.nanoTime() - start), stats());
    } catch (InterruptedException interrupted) {
      Thread.currentThread().interrupt();
      return new CloseReport(false, abandoned, Duration.ofNanos(System.nanoTime() - start), stats());
    } catch (ExecutionException failed) {
      throw new IllegalStateException("the first close() of batcher '" + name + "' failed", failed.getCause());
    }
  }

  private CloseReport shutDown(Duration timeout) {
    long start = System.nanoTime();
    long timeoutNanos = Checks.saturatedNanos(timeout);
    long deadline = timeoutNanos > Long.MAX_VALUE - start ? Long.MAX_VALUE : start + timeoutNanos;
    gate.beginClose();
    boolean drained = publishCloseMarker(deadline) && awaitConsumer(deadline) && consumer.drained();
    long abandonedItems = 0;
    if (!drained) {
      abandonedItems = abandon(timeout);
    }
    gate.closed();
    abandoned = abandonedItems;
    Throwable failure = abandonedItems == 0 ? null : new BatcherClosedException(name, ringSize, true,
        "close timed out after " + describe(timeout) + " and abandoned " + abandonedItems + " item(s)");
    abandonment = failure;
    if (abandonedItems > 0) {
      recorders.recordAbandoned(abandonedItems);
    }
    CloseReport report = new CloseReport(drained || abandonedItems == 0, abandonedItems,
        Duration.ofNanos(System.nanoTime() - start), stats());
    closeReport = report;
    flushWaiters.completeAll(failure);
    recorders.recordClosed(report);
    if (abandonedItems > 0) {
      LOG.log(Level.WARNING, "batcher '" + name + "' closed with items abandoned: " + report);
    }
    return report;
  }

  /** Publishes the close marker, waiting for room until {@code deadline}. */
  private boolean publishCloseMarker(long deadline) {
    for (int round = 0; ; round++) {
      if (gate.tryPublishCloseMarker()) {
        return true;
      }
      long remaining = deadline - System.nanoTime();
      if (remaining <= 0) {
        return false;
      }
      backOff(round, remaining);
    }
  }

  /** Waits until the consumer thread has ended or {@code deadline} passed; true if it ended. */
  private boolean awaitConsumer(long deadline) {
    try {
      long remaining = deadline - System.nanoTime();
      if (remaining > 0) {
        consumer.terminated().get(remaining, TimeUnit.NANOSECONDS);
        consumerThread.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
      }
    } catch (TimeoutException tooLate) {
      return false;
    } catch (InterruptedException interrupted) {
      Thread.currentThread().interrupt();
      return false;
    } catch (ExecutionException impossible) {
      throw new IllegalStateException("consumer termination failed", impossible.getCause());
    }
    return consumer.terminated().isDone();
  }

  /** Takes over from the consumer and fails everything accepted but not written. Returns how many. */
  private long abandon(Duration timeout) {
    int previous = consumer.handOver();
    boolean inSink = previous == CoalescingConsumer.WRITING;
    if (!inSink) {
      awaitConsumer(System.nanoTime() + HAND_OVER_GRACE_NANOS);
    }
    String after = "close timed out after " + describe(timeout);
    long count = consumer.failPending(new BatcherClosedException(name, ringSize, true, inSink
        ? after + " while the item's batch was inside the sink; it may or may not have been written"
        : after + " before the item was written; item abandoned"));
    count += consumer.failInFlight(new BatcherClosedException(name, ringSize, true,
        after + " while the item's batch was in flight in the async sink; it may or may not have been written"));
    count += failUnread(new BatcherClosedException(name, ringSize, true,
        after + " before the item was written; item abandoned"));
    if (consumerThread.isAlive()) {
      consumerThread.interrupt(); // a sink blocked in interruptible I/O may give up
    }
    return count;
  }

  /** Fails every item in slots the consumer has not read. */
  private long failUnread(BatcherClosedException cause) {
    long count = 0;
    long last = ring.getCursor();
    for (long sequence = consumed.get() + 1; sequence <= last; sequence++) {
      if (!awaitPublished(sequence)) {
        LOG.log(Level.ERROR, "batcher '" + name + "': slot " + sequence + " was claimed but never published");
        continue;
      }
      SubmissionSlot slot = ring.get(sequence);
      if (slot.kind == SubmissionSlot.ITEM) {
        CompletableFuture<Object> future = slot.future;
        if (future != null) {
          future.completeExceptionally(cause);
        }
        count++;
      }
      slot.mark(SubmissionSlot.EMPTY);
    }
    return count;
  }

  /**
   * Waits for a producer between its claim and its publish. That window runs no user code and no blocking
   * call, so the wait is short; it is bounded all the same.
   */
  private boolean awaitPublished(long sequence) {
    long start = System.nanoTime();
    for (int round = 0; !ring.isAvailable(sequence); round++) {
      if (System.nanoTime() - start > HAND_OVER_GRACE_NANOS) {
        return false;
      }
      backOff(round, HAND_OVER_GRACE_NANOS);
    }
    return true;
  }

  @Override
  public String toString() {
    int state = gate.state();
    return "Batcher{name='" + name + "', state="
        + (state == PublishGate.OPEN ? "open" : state == PublishGate.CLOSING ? "closing" : "closed")
        + ", " + stats() + '}';
  }
}
