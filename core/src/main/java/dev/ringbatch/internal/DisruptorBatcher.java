package dev.ringbatch.internal;

import static dev.ringbatch.internal.shared.Checks.requireArgument;
import static dev.ringbatch.internal.shared.Checks.requireNonNegative;
import static dev.ringbatch.internal.shared.Checks.requireState;
import static java.util.Objects.requireNonNull;

import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import dev.ringbatch.Adaptive;
import dev.ringbatch.AsyncBatchSink;
import dev.ringbatch.BatchLimits;
import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherClosedException;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.BatcherStats;
import dev.ringbatch.CloseReport;
import dev.ringbatch.RejectionReason;
import dev.ringbatch.Ticker;
import dev.ringbatch.Weigher;
import dev.ringbatch.internal.close.CloseHelper;
import dev.ringbatch.internal.close.CloseProtocol;
import dev.ringbatch.internal.consume.AsyncBatchWriter;
import dev.ringbatch.internal.consume.BatchCompleter;
import dev.ringbatch.internal.consume.BatchWriter;
import dev.ringbatch.internal.consume.CoalescingConsumer;
import dev.ringbatch.internal.consume.ConsumerCounters;
import dev.ringbatch.internal.consume.ConsumerLimits;
import dev.ringbatch.internal.consume.ConsumerWaitStrategy;
import dev.ringbatch.internal.consume.FlushWaiters;
import dev.ringbatch.internal.consume.HandOver;
import dev.ringbatch.internal.consume.Holdings;
import dev.ringbatch.internal.consume.LostFailureLog;
import dev.ringbatch.internal.consume.SyncBatchWriter;
import dev.ringbatch.internal.pacing.AdaptiveLimits;
import dev.ringbatch.internal.pacing.SelfClock;
import dev.ringbatch.internal.pacing.SpinHint;
import dev.ringbatch.internal.ring.CallerWait;
import dev.ringbatch.internal.ring.ConsumerGroup;
import dev.ringbatch.internal.ring.ItemFuture;
import dev.ringbatch.internal.ring.PublishGate;
import dev.ringbatch.internal.ring.SubmissionSlot;
import dev.ringbatch.internal.shared.Checks;
import dev.ringbatch.internal.shared.GuardedStatsRecorders;
import dev.ringbatch.internal.shared.GuardedTicker;
import dev.ringbatch.stats.StatsRecorder;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;

/**
 * The {@link Batcher} on a Disruptor multi-producer ring: wires the parts together and answers the API. Each
 * part has one job and owns its state: {@link PublishGate} the producer side, {@link CoalescingConsumer} the
 * consumer loop and the ring slots, a {@link BatchWriter} chosen once ({@link SyncBatchWriter} or
 * {@link AsyncBatchWriter}) the sink calls, {@link BatchCompleter} the finishing of a batch,
 * {@link FlushWaiters} flush progress, {@link HandOver} who owns the consumer's holdings, and
 * {@link CloseProtocol} the close.
 */
public final class DisruptorBatcher<T, R> implements Batcher<T, R> {
  private final String name;
  private final BatcherConfig config;
  private final int ringSize;
  private final @Nullable Weigher<? super T> weigher;
  private final RingBuffer<SubmissionSlot> ring;
  private final ConsumerWaitStrategy waitStrategy;
  private final CoalescingConsumer<T, R> consumer;
  /** The limits the consumer applies: set or pinned here, steered by an adaptive controller. */
  private final ConsumerLimits inForce;
  private final Thread consumerThread;
  private final ConsumerGroup consumers;
  private final GuardedStatsRecorders recorders;
  private final ConsumerCounters counters = new ConsumerCounters();
  private final FlushWaiters flushWaiters = new FlushWaiters();
  private final SpinHint spinHint = new SpinHint();
  private final PublishGate gate;
  private final CloseProtocol closing;
  /** Whether items are stamped whatever the recorders say: the adaptive limits' latency target needs them. */
  private boolean stampsForAdaptive;

  private DisruptorBatcher(String name, BatcherConfig config, @Nullable Weigher<? super T> weigher,
      @Nullable BatchSink<T, R> sink, @Nullable AsyncBatchSink<T, R> asyncSink, ConsumerGroup consumers,
      LostFailureLog lostLog, int shard) {
    this.name = name;
    this.config = config;
    this.ringSize = config.ringSize();
    this.weigher = weigher;
    this.recorders = new GuardedStatsRecorders(name);
    Ticker ticker = new GuardedTicker(name, config.ticker());
    SelfClock selfClock = new SelfClock();
    this.waitStrategy = new ConsumerWaitStrategy(config.waitMode(), selfClock);
    this.ring = SubmissionSlot.newRing(ringSize, waitStrategy);
    selfClock.watch(ring::getCursor);
    Sequence consumed = new Sequence(-1);
    ring.addGatingSequences(consumed);
    this.consumers = consumers;
    this.gate = new PublishGate(name, ring, config.overflowPolicy(), config.submitTimeout(), consumers, recorders,
        ticker);
    HandOver handOver = HandOver.notStarted();
    BatchCompleter completer = new BatchCompleter(name, counters, recorders, config.offerFailureHandler(), lostLog);
    BatchLimits limits = config.limits();
    Adaptive adaptive = config.adaptive();
    AdaptiveLimits controller = adaptive == null ? null : new AdaptiveLimits(adaptive, limits, asyncSink != null);
    if (controller != null) {
      stampsForAdaptive = controller.needsStamps();
      gate.stampItems(stampsForAdaptive);
    }
    BatchWriter<T, R> writer = asyncSink == null
        ? new SyncBatchWriter<>(name, ringSize, requireNonNull(sink, "sink"), config.retryPolicy(), ticker,
            handOver, completer, flushWaiters, selfClock, spinHint)
        : new AsyncBatchWriter<>(name, ringSize, asyncSink, config.maxInFlightBatches(), initialBatchCapacity(config),
            ticker, handOver, completer, flushWaiters, waitStrategy::wake, spinHint, controller);
    this.inForce = new ConsumerLimits(limits, controller);
    Holdings<T, R> holdings = new Holdings<>(name, ring, consumed, writer, completer);
    this.consumer = new CoalescingConsumer<>(name, ring, ring.newBarrier(), consumed, waitStrategy, writer, handOver,
        completer, flushWaiters, inForce, ticker, gate, selfClock, holdings);
    ThreadFactory factory = config.threadFactory();
    Thread thread = factory == null ? defaultThread(shard < 0 ? name : name + "-" + shard, consumer)
        : factory.newThread(consumer);
    this.consumerThread = requireNonNull(thread, "threadFactory returned null");
    Checks.requireState(thread.getState() == Thread.State.NEW, "threadFactory returned a thread that was already"
        + " started ('%s'): batcher '%s' needs a new thread for its consumer", thread.getName(), name);
    consumers.add(thread);
    // The consumer first (a factory that numbers its threads gives it the first number), then the close helper,
    // started only by a close with user code to call after its report; a shard's is its sharded batcher's.
    CloseHelper helper = shard < 0 ? new CloseHelper(name, factory) : null; // a shard's is its sharded batcher's
    Checks.requireState(helper == null || !helper.runsOn(thread), "threadFactory returned the same thread twice"
        + " (%s): batcher '%s' needs two, its consumer and its close helper", thread, name);
    this.closing = new CloseProtocol(name, ringSize, gate, consumer, holdings, thread, handOver, flushWaiters,
        recorders, helper, this::stats);
  }

  /**
   * The capacity a pooled batch starts with (it grows on demand): the size limit, except that an adaptive
   * batcher's default cap is the ring, and up to maxInFlightBatches + 1 pooled batches that large could each hold
   * arrays of the whole ring.
   */
  private static int initialBatchCapacity(BatcherConfig config) {
    int cap = config.limits().maxBatchSize();
    return config.adaptive() == null ? cap : Math.min(cap, 1024);
  }

  /** Validates, creates and starts a batcher; the entry point of {@link Batcher#of}. */
  public static <T, R> Batcher<T, R> start(String name, BatcherConfig config,
      @Nullable Weigher<? super T> weigher, BatchSink<T, R> sink) {
    requireNonNull(sink, "sink");
    return start(name, config, weigher, sink, null, new ConsumerGroup(), new LostFailureLog(name), -1);
  }

  /** Validates, creates and starts a batcher with an async sink; the entry point of {@link Batcher#ofAsync}. */
  public static <T, R> Batcher<T, R> startAsync(String name, BatcherConfig config,
      @Nullable Weigher<? super T> weigher, AsyncBatchSink<T, R> sink) {
    requireNonNull(sink, "sink");
    return start(name, config, weigher, null, sink, new ConsumerGroup(), new LostFailureLog(name), -1);
  }

  /**
   * Shard {@code shard} of the sharded batcher {@code name}: named as it (a caller's refusal names the batcher the
   * caller holds), its default thread {@code ringbatch-<name>-<shard>}; a member of {@code consumers}, logging lost
   * failures to the sharded batcher's {@code lostLog}, and silent on close towards the recorders (the sharded
   * batcher reports its close once).
   */
  static <T, R> DisruptorBatcher<T, R> startShard(String name, int shard, BatcherConfig config,
      @Nullable Weigher<? super T> weigher, BatchSink<T, R> sink, ConsumerGroup consumers, LostFailureLog lostLog) {
    requireNonNull(sink, "sink");
    return start(name, config, weigher, sink, null, consumers, lostLog, shard);
  }

  private static <T, R> DisruptorBatcher<T, R> start(String name, BatcherConfig config,
      @Nullable Weigher<? super T> weigher, @Nullable BatchSink<T, R> sink, @Nullable AsyncBatchSink<T, R> asyncSink,
      ConsumerGroup consumers, LostFailureLog lostLog, int shard) {
    Checks.requireName(name);
    requireNonNull(config, "config");
    Checks.requireRingMemory(1, config.ringSize());
    requireState(weigher != null || !config.limits().hasByteLimit(),
        "maxBatchBytes (%s) needs a weigher: use Batcher.of(name, config, weigher, sink)",
        config.limits().maxBatchBytes());
    DisruptorBatcher<T, R> batcher =
        new DisruptorBatcher<>(name, config, weigher, sink, asyncSink, consumers, lostLog, shard);
    ItemFuture.preloadWaitingPath();
    batcher.consumer.release(batcher.consumerThread); // the consumer runs on that thread only
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
    return submit(item, 0, Long.MAX_VALUE);
  }

  /**
   * Submits {@code item}, waiting for room (under {@code BLOCK}) until {@code maxWaitNanos} after {@code startNanos}:
   * the weigher's time counts against it.
   */
  private CompletableFuture<R> submit(T item, long startNanos, long maxWaitNanos) {
    requireNonNull(item, "item");
    long weight = weigh(item);
    long wait = maxWaitNanos == Long.MAX_VALUE ? maxWaitNanos
        : Math.max(0, maxWaitNanos - (System.nanoTime() - startNanos));
    // Its waiting caller parks without CompletableFuture's stack; on a platform thread it spins a little first while
    // the sink is quick.
    CompletableFuture<R> future = consumers.contains(Thread.currentThread()) ? new ItemFuture.OnConsumer<>(consumers, name)
        : spinHint.worthSpinning() ? new ItemFuture.Spinning<>() : new ItemFuture<>();
    @SuppressWarnings("unchecked")
    CompletableFuture<Object> untyped = (CompletableFuture<Object>) future;
    long sequence = gate.accept(item, untyped, weight, wait);
    if (sequence < 0) {
      future.completeExceptionally(gate.rejection(sequence, maxWaitNanos));
    }
    return future;
  }

  @Override
  public boolean offer(T item) {
    requireNonNull(item, "item");
    return gate.accept(item, null, weigh(item)) >= 0;
  }

  @Override
  public R submitAndWait(T item) throws InterruptedException {
    requireNotConsumer();
    try {
      return CallerWait.outcome(name, submit(item), -1, Duration.ZERO);
    } catch (TimeoutException impossible) {
      throw new AssertionError("no timeout was set", impossible);
    }
  }

  @Override
  public R submitAndWait(T item, Duration timeout) throws InterruptedException, TimeoutException {
    return submitAndWait(item, System.nanoTime(), timeout);
  }

  /** {@link #submitAndWait(Object, Duration)} of a call that began at {@code start}: a sharded batcher's. */
  R submitAndWait(T item, long start, Duration timeout) throws InterruptedException, TimeoutException {
    Checks.requireNonNegative("timeout", timeout);
    requireNotConsumer();
    long nanos = Checks.saturatedNanos(timeout);
    CompletableFuture<R> future = submit(item, start, nanos);
    long left = nanos - (System.nanoTime() - start);
    return CallerWait.outcome(name, future, Math.max(0, left), timeout);
  }

  private void requireNotConsumer() {
    requireState(!consumers.contains(Thread.currentThread()),
        "submitAndWait must not be called on the consumer thread of batcher '%s' (for example from its sink):"
            + " it would wait for itself; use submit or offer", name);
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

  // ---------------------------------------------------------------- flush, limits, stats

  @Override
  public CompletableFuture<Void> flush() {
    requireState(!consumers.contains(Thread.currentThread()) && !consumer.completingOnThisThread(),
        "flush() must not be called on the consumer thread of batcher '%s', nor from a dependent action that"
            + " completes one of its batches: the flush would wait for that very thread; flush from another thread",
        name);
    CompletableFuture<Void> future = flushWaiters.await(ring.getCursor(), waitStrategy::wake);
    BatcherClosedException ownFailure = consumer.ownFailure();
    if (closing.report() != null) {
      flushWaiters.completeAll(closing.abandonment()); // the close ended before it could see this waiter
    } else if (ownFailure != null) {
      flushWaiters.completeAll(ownFailure); // the consumer failed on its own, and failed what it held
    }
    return future;
  }

  @Override
  public BatchLimits limits() {
    return inForce.current();
  }

  @Override
  public void setLimits(BatchLimits limits) {
    requireNonNull(limits, "limits");
    requireState(limits.maxBatchSize() <= ringSize,
        "maxBatchSize (%s) must not exceed ringSize (%s)", limits.maxBatchSize(), ringSize);
    requireState(weigher != null || !limits.hasByteLimit(),
        "maxBatchBytes (%s) needs a weigher, but batcher '%s' was created without one",
        limits.maxBatchBytes(), name);
    inForce.set(limits);
  }

  @Override
  public BatcherStats stats() {
    // Outcomes first, as one consistent reading, then accepted: every item counted above was accepted before,
    // so a snapshot never shows more outcomes than accepted items (see PublishGate#accepted).
    long written;
    long failed;
    long abandoned;
    synchronized (counters) {
      written = counters.written();
      failed = counters.failed();
      abandoned = counters.abandoned();
    }
    ConsumerCounters.BatchCounts batchCounts = counters.readBatchCounts(); // items read before batches: see there
    long accepted = gate.accepted();
    return new BatcherStats(accepted, gate.rejected(RejectionReason.FULL), gate.rejected(RejectionReason.TIMEOUT),
        gate.rejected(RejectionReason.INTERRUPTED), gate.rejected(RejectionReason.CLOSED),
        written, failed, abandoned, batchCounts.batches(), batchCounts.items(), batchCounts.last(), batchCounts.largest(),
        ringSize,
        ring.remainingCapacity(), inForce.current());
  }

  @Override
  public void addStatsRecorder(StatsRecorder recorder) {
    synchronized (recorders) { // the gate's flag follows the recorders in the order they change
      recorders.add(recorder);
      gate.stampItems(stampsForAdaptive || recorders.timesItemWaits());
    }
  }

  @Override
  public boolean removeStatsRecorder(StatsRecorder recorder) {
    synchronized (recorders) {
      boolean removed = recorders.remove(recorder);
      gate.stampItems(stampsForAdaptive || recorders.timesItemWaits());
      return removed;
    }
  }

  // ---------------------------------------------------------------- closing

  /** The consumer's thread, started or not. */
  Thread consumerThread() {
    return consumerThread;
  }

  /** The close's script, whose steps a sharded close runs across its shards. */
  CloseProtocol closing() {
    return closing;
  }

  /** Refuses new items from now on; the close that follows drains what was accepted. For a sharded close. */
  void beginClose() {
    gate.beginClose();
  }

  @Override
  public boolean isClosed() {
    return !gate.isOpen();
  }

  @Override
  public @Nullable CloseReport closeReport() {
    return closing.report();
  }

  @Override
  public void close() {
    close(config.closeTimeout());
  }

  /**
   * See {@link Batcher#close(Duration)}. The closing thread's interrupt does not cut the drain short; the flag
   * is set again on return.
   */
  @Override
  public CloseReport close(Duration timeout) {
    requireNonNegative("timeout", timeout);
    requireState(!consumers.contains(Thread.currentThread()),
        "close() must not be called on the consumer thread of batcher '%s' (for example from its sink):"
            + " it would wait for itself", name);
    return closing.close(timeout);
  }

  @Override
  public String toString() {
    int state = gate.state();
    return "Batcher{name='" + name + "', state="
        + (state == PublishGate.OPEN ? "open" : state == PublishGate.CLOSING ? "closing" : "closed")
        + ", " + stats() + '}';
  }
}
