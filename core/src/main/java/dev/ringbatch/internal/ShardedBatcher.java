package dev.ringbatch.internal;

import static dev.ringbatch.internal.shared.Checks.requireNonNegative;
import static dev.ringbatch.internal.shared.Checks.requireState;
import static java.util.Objects.requireNonNull;

import dev.ringbatch.BatchLimits;
import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.BatcherStats;
import dev.ringbatch.CloseReport;
import dev.ringbatch.RejectionReason;
import dev.ringbatch.Weigher;
import dev.ringbatch.internal.close.CloseHelper;
import dev.ringbatch.internal.close.CloseProtocol;
import dev.ringbatch.internal.close.LaterClose;
import dev.ringbatch.internal.consume.LostFailureLog;
import dev.ringbatch.internal.ring.ConsumerGroup;
import dev.ringbatch.internal.shared.Causes;
import dev.ringbatch.internal.shared.Checks;
import dev.ringbatch.internal.shared.GuardedStatsRecorders;
import dev.ringbatch.stats.StatsRecorder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.function.IntFunction;
import java.util.function.ToLongFunction;
import org.jspecify.annotations.Nullable;

/**
 * N independent batchers ("shards"), each with its own ring, consumer thread and sink, behind one
 * {@link Batcher}. An item goes to the shard its key hashes to, so items with equal keys keep their order;
 * without a key, items go round-robin and no order is kept. Stats are the sums over the shards; flush and
 * close span them all, and a close closes every shard at once under one deadline.
 *
 * <p>The shards' consumer threads form one {@link ConsumerGroup}: a sink of one shard that submits into
 * another, full shard is refused at once instead of blocking, so shards cannot deadlock each other.
 */
public final class ShardedBatcher<T, R> implements Batcher<T, R> {
  /** How long a close waits for room for one shard's marker before it tries the next shard's. */
  private static final long MARKER_SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
  private final String name;
  private final BatcherConfig config;
  private final List<DisruptorBatcher<T, R>> shards;
  private final @Nullable Function<? super T, ?> key;
  private final ConsumerGroup consumers = new ConsumerGroup();
  private final AtomicLong roundRobin = new AtomicLong();
  /** Told once, when every shard has closed; the shards tell them everything else. */
  private final GuardedStatsRecorders closeRecorders;
  private final AtomicReference<@Nullable CompletableFuture<CloseReport>> closing = new AtomicReference<>();
  private volatile @Nullable CloseReport closeReport;
  /** Runs the user code after the close's report, of every shard: the one thread besides the shards' consumers. */
  private final CloseHelper helper;
  /** Set once every shard refuses new items: only then is the sharded batcher closed, as one batcher. */
  private volatile boolean refusing;

  private ShardedBatcher(String name, BatcherConfig config, int count, @Nullable Function<? super T, ?> key,
      @Nullable Weigher<? super T> weigher, IntFunction<? extends BatchSink<T, R>> sinks) {
    this.name = name;
    this.config = config;
    this.key = key;
    this.closeRecorders = new GuardedStatsRecorders(name);
    LostFailureLog lostLog = new LostFailureLog(name); // one for all shards: a line per batcher, not per shard
    List<DisruptorBatcher<T, R>> started = new ArrayList<>(count);
    CloseHelper made;
    try {
      for (int i = 0; i < count; i++) {
        BatchSink<T, R> sink = sinks.apply(i);
        if (sink == null) {
          throw new NullPointerException("sinks returned null for shard " + i);
        }
        started.add(DisruptorBatcher.startShard(name, i, config, weigher, sink, consumers, lostLog));
      }
      // After the shards' consumers, as a single batcher's: a factory that numbers its threads numbers them by shard.
      made = new CloseHelper(name, config.threadFactory());
      for (DisruptorBatcher<T, R> shard : started) {
        requireState(!made.runsOn(shard.consumerThread()), "threadFactory returned the same thread twice (%s):"
            + " batcher '%s' needs one per shard and one for its close helper", shard.consumerThread(), name);
      }
    } catch (Throwable e) { // a sink function or thread factory may throw anything, even a sneaky checked one
      // nothing was submitted and no recorder added: no user code to run, so no helper is started
      closeShards(started, Duration.ZERO, System.nanoTime(), new CloseHelper(name, null), null);
      throw e;
    }
    this.helper = made;
    this.shards = List.copyOf(started);
  }

  /**
   * Validates, creates and starts a sharded batcher; the entry point of {@link Batcher#sharded}.
   *
   * @param key the routing key of an item, or {@code null} for round-robin
   */
  public static <T, R> Batcher<T, R> start(String name, BatcherConfig config, int shards,
      @Nullable Function<? super T, ?> key, @Nullable Weigher<? super T> weigher,
      IntFunction<? extends BatchSink<T, R>> sinks) {
    Checks.requireName(name);
    requireNonNull(config, "config");
    Checks.requirePositive("shards", shards);
    requireNonNull(sinks, "sinks");
    Checks.requireRingMemory(shards, config.ringSize());
    return new ShardedBatcher<>(name, config, shards, key, weigher, sinks);
  }

  /** Shard {@code index}, for tests of what this batcher reports of its shards. */
  DisruptorBatcher<T, R> shard(int index) {
    return shards.get(index);
  }

  private DisruptorBatcher<T, R> shardFor(T item) {
    requireNonNull(item, "item");
    int count = shards.size();
    if (key == null) {
      return shards.get((int) Math.floorMod(roundRobin.getAndIncrement(), (long) count));
    }
    Object k = key.apply(item);
    if (k == null) {
      throw new NullPointerException("the key function of batcher '" + name + "' returned null for " + item);
    }
    if (k.getClass().isArray()) { // equal by identity only: one key's items would go to every shard, in no order
      throw new IllegalArgumentException("the key function of batcher '" + name + "' returned an array ("
          + k.getClass().getSimpleName() + ") for " + item + ": an array's equals and hashCode are its identity,"
          + " so items of equal keys would go to different shards; return a value with equals, such as a List");
    }
    int h = k.hashCode();
    return shards.get(Math.floorMod(h ^ (h >>> 16), count));
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public BatcherConfig config() {
    return config;
  }

  @Override
  public CompletableFuture<R> submit(T item) {
    return shardFor(item).submit(item);
  }

  @Override
  public R submitAndWait(T item) throws InterruptedException {
    return shardFor(item).submitAndWait(item);
  }

  @Override
  public R submitAndWait(T item, java.time.Duration timeout) throws InterruptedException,
      java.util.concurrent.TimeoutException {
    long start = System.nanoTime(); // the key function is user code: its time counts against the timeout
    return shardFor(item).submitAndWait(item, start, timeout);
  }

  @Override
  public boolean offer(T item) {
    return shardFor(item).offer(item);
  }

  @Override
  public CompletableFuture<Void> flush() {
    CompletableFuture<Void> flushed = new CompletableFuture<>();
    // allOf fails with a CompletionException around a shard's failure: the caller gets that failure itself (a
    // BatcherClosedException after an abandoning close), as from an unsharded batcher
    CompletableFuture.allOf(shards.stream().map(DisruptorBatcher::flush).toArray(CompletableFuture[]::new))
        .whenComplete((done, failure) -> {
          if (failure == null) {
            flushed.complete(null);
          } else {
            flushed.completeExceptionally(Causes.unwrapCompletion(failure));
          }
        });
    return flushed;
  }

  /**
   * The largest limits in force among the shards, field by field: each shard applies its own (an adaptive one
   * chooses them by its own load); {@link #shardStats()} shows each.
   */
  @Override
  public BatchLimits limits() {
    return largest(shards.stream().map(DisruptorBatcher::limits).toList());
  }

  private static BatchLimits largest(List<BatchLimits> each) {
    BatchLimits first = each.get(0);
    int size = first.maxBatchSize();
    long bytes = first.maxBatchBytes();
    Duration linger = first.linger();
    for (BatchLimits l : each) {
      size = Math.max(size, l.maxBatchSize());
      bytes = Math.max(bytes, l.maxBatchBytes());
      linger = l.linger().compareTo(linger) > 0 ? l.linger() : linger;
    }
    return size == first.maxBatchSize() && bytes == first.maxBatchBytes() && linger.equals(first.linger()) ? first
        : BatchLimits.of(size, bytes, linger);
  }

  @Override
  public synchronized void setLimits(BatchLimits limits) { // two at once must not leave the shards split
    shards.get(0).setLimits(limits); // validates before any shard changes
    shards.forEach(shard -> shard.setLimits(limits));
  }

  @Override
  public BatcherStats stats() {
    return sum(shardStats());
  }

  @Override
  public List<BatcherStats> shardStats() {
    return shards.stream().map(DisruptorBatcher::stats).toList();
  }

  private static BatcherStats sum(List<BatcherStats> each) {
    List<BatchLimits> limits = each.stream().map(BatcherStats::limits).filter(Objects::nonNull).toList();
    return new BatcherStats(total(each, BatcherStats::accepted), rejected(each, RejectionReason.FULL),
        rejected(each, RejectionReason.TIMEOUT), rejected(each, RejectionReason.INTERRUPTED),
        rejected(each, RejectionReason.CLOSED), total(each, BatcherStats::written),
        total(each, BatcherStats::failed), total(each, BatcherStats::abandoned), total(each, BatcherStats::batches),
        total(each, BatcherStats::batchedItems),
        each.stream().mapToInt(BatcherStats::lastBatchSize).max().orElse(0),
        each.stream().mapToInt(BatcherStats::largestBatchSize).max().orElse(0),
        each.stream().mapToInt(BatcherStats::ringSize).sum(), total(each, BatcherStats::remainingCapacity),
        limits.isEmpty() ? null : largest(limits));
  }

  private static long total(List<BatcherStats> each, ToLongFunction<BatcherStats> value) {
    return each.stream().mapToLong(value).sum();
  }

  private static long rejected(List<BatcherStats> each, RejectionReason reason) {
    return total(each, s -> s.rejected(reason));
  }

  @Override
  public void addStatsRecorder(StatsRecorder recorder) {
    closeRecorders.add(recorder);
    shards.forEach(shard -> shard.addStatsRecorder(recorder));
  }

  @Override
  public boolean removeStatsRecorder(StatsRecorder recorder) {
    boolean removed = closeRecorders.remove(recorder);
    for (DisruptorBatcher<T, R> shard : shards) {
      removed |= shard.removeStatsRecorder(recorder);
    }
    return removed;
  }

  @Override
  public boolean isClosed() {
    return refusing;
  }

  @Override
  public void close() {
    close(config.closeTimeout());
  }

  /**
   * Closes every shard at once, under the same timeout and grace, and tells the recorders once when all are
   * done. Idempotent: later calls wait for the first close's report up to their own timeout.
   */
  @Override
  public CloseReport close(Duration timeout) {
    requireNonNegative("timeout", timeout);
    requireState(!consumers.contains(Thread.currentThread()),
        "close() must not be called on a consumer thread of batcher '%s' (for example from its sink):"
            + " it would wait for itself", name);
    // One close for all: every shard refuses new items before any shard starts to drain, and before isClosed()
    // turns true, whichever close call gets here first.
    shards.forEach(DisruptorBatcher::beginClose);
    refusing = true;
    CompletableFuture<CloseReport> mine = new CompletableFuture<>();
    CompletableFuture<CloseReport> earlier = closing.compareAndExchange(null, mine);
    if (earlier != null) {
      long start = System.nanoTime();
      return LaterClose.await(name, earlier, timeout, () -> provisional(start));
    }
    long start = System.nanoTime();
    try {
      CloseReport report = closeShards(shards, timeout, start, helper, done -> {
        closeReport = done;
        mine.complete(done); // out before any user code: a close called back from it returns this report
        return closeRecorders.isEmpty() ? null : () -> closeRecorders.recordClosed(done);
      });
      return report;
    } catch (RuntimeException | Error e) {
      mine.completeExceptionally(e);
      throw e;
    }
  }

  /**
   * Closes {@code shards} under one deadline, each step of the close's script for all shards before the next (so
   * they drain, and hand over, at once); then runs the user code of them all on {@code helper}, the shards' first,
   * then what {@code published} returns (told the report once it is out; null: nothing), waiting for it until
   * the end of the one grace. The closing thread's interrupt does not cut the drain short; it is set again.
   */
  private static CloseReport closeShards(List<? extends DisruptorBatcher<?, ?>> shards, Duration timeout,
      long start, CloseHelper helper, @Nullable Function<CloseReport, @Nullable Runnable> published) {
    long deadline = CloseProtocol.deadline(start, timeout);
    long graceEnd = deadline + CloseProtocol.GRACE_NANOS;
    List<CloseProtocol> steps = new ArrayList<>(shards.size());
    for (DisruptorBatcher<?, ?> shard : shards) {
      steps.add(shard.closing());
    }
    boolean interrupted = Thread.interrupted();
    steps.forEach(shard -> shard.begin(start));
    boolean[] drained = new boolean[steps.size()]; // first: whether its marker is in
    boolean allMarked;
    do { // in slices, so that a full ring of one shard does not keep the others from their markers
      allMarked = true;
      for (int i = 0; i < drained.length; i++) {
        CloseProtocol shard = steps.get(i);
        drained[i] = drained[i] || shard.publishMarker(Math.min(deadline, System.nanoTime() + MARKER_SLICE_NANOS));
        allMarked &= drained[i] || shard.consumerStopped(); // a consumer gone never makes room: not waited for
      }
    } while (!allMarked && deadline - System.nanoTime() > 0);
    for (int i = 0; i < drained.length; i++) {
      drained[i] = drained[i] && steps.get(i).awaitDrained(deadline);
      if (!drained[i]) {
        steps.get(i).giveUp(timeout);
      }
    }
    List<CloseProtocol.Ending> endings = new ArrayList<>(steps.size());
    boolean allDrained = true;
    long abandoned = 0;
    for (int i = 0; i < drained.length; i++) {
      CloseProtocol.Ending ending = steps.get(i).end(drained[i], timeout, deadline, graceEnd);
      endings.add(ending);
      allDrained &= ending.report().drained();
      abandoned += ending.report().abandoned();
      interrupted |= steps.get(i).takeInterrupted();
    }
    CloseReport report = new CloseReport(allDrained, abandoned, Duration.ofNanos(System.nanoTime() - start),
        sum(shards.stream().map(shard -> shard.stats()).toList()));
    Runnable last = published == null ? null : published.apply(report);
    interrupted |= helper.runAndAwait(endings, last, graceEnd);
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    return report;
  }

  private CloseReport provisional(long start) {
    CloseReport done = closeReport;
    return done != null ? done : new CloseReport(false, stats().abandoned(),
        Duration.ofNanos(System.nanoTime() - start), stats());
  }

  @Override
  public @Nullable CloseReport closeReport() {
    return closeReport;
  }

  @Override
  public String toString() {
    return "ShardedBatcher{name='" + name + "', shards=" + shards.size() + ", " + stats() + '}';
  }
}
