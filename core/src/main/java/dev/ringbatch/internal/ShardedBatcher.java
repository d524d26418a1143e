package dev.ringbatch.internal;

import static dev.ringbatch.internal.Checks.requireNonNegative;
import static dev.ringbatch.internal.Checks.requireState;
import static java.util.Objects.requireNonNull;

import dev.ringbatch.BatchLimits;
import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.BatcherStats;
import dev.ringbatch.CloseReport;
import dev.ringbatch.RejectionReason;
import dev.ringbatch.Weigher;
import dev.ringbatch.stats.StatsRecorder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.IntFunction;
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
  /** Past the timeout, how long a sharded close waits for its shards' closes (each has its own 200 ms grace). */
  private static final long SHARD_GRACE_NANOS = TimeUnit.SECONDS.toNanos(1);
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
  /** The threads closing the shards: a close called back on one of them must not wait for itself. */
  private volatile List<Thread> closers = List.of();
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
    try {
      for (int i = 0; i < count; i++) {
        BatchSink<T, R> sink = sinks.apply(i);
        if (sink == null) {
          throw new NullPointerException("sinks returned null for shard " + i);
        }
        started.add(DisruptorBatcher.startShard(name + "-" + i, config, weigher, sink, consumers, lostLog));
      }
    } catch (Throwable e) { // a sink function or thread factory may throw anything, even a sneaky checked one
      started.forEach(shard -> shard.close(Duration.ZERO));
      throw e;
    }
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
    return shardFor(item).submitAndWait(item, timeout);
  }

  @Override
  public boolean offer(T item) {
    return shardFor(item).offer(item);
  }

  @Override
  public CompletableFuture<Void> flush() {
    CompletableFuture<?>[] flushes = new CompletableFuture<?>[shards.size()];
    for (int i = 0; i < flushes.length; i++) {
      flushes[i] = shards.get(i).flush();
    }
    return CompletableFuture.allOf(flushes);
  }

  /**
   * The largest limits in force among the shards, field by field: each shard applies its own (an adaptive one
   * chooses them by its own load); {@link #shardStats()} shows each.
   */
  @Override
  public BatchLimits limits() {
    List<BatchLimits> each = new ArrayList<>(shards.size());
    shards.forEach(shard -> each.add(shard.limits()));
    return largest(each);
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
  public void setLimits(BatchLimits limits) {
    shards.get(0).setLimits(limits); // validates before any shard changes
    shards.forEach(shard -> shard.setLimits(limits));
  }

  @Override
  public BatcherStats stats() {
    List<BatcherStats> each = shardStats();
    return sum(each);
  }

  @Override
  public List<BatcherStats> shardStats() {
    List<BatcherStats> each = new ArrayList<>(shards.size());
    shards.forEach(shard -> each.add(shard.stats()));
    return each;
  }

  private static BatcherStats sum(List<BatcherStats> each) {
    long accepted = 0;
    long written = 0;
    long failed = 0;
    long abandoned = 0;
    long batches = 0;
    long remaining = 0;
    long[] rejected = new long[RejectionReason.values().length];
    List<BatchLimits> limits = new ArrayList<>(each.size());
    int last = 0;
    int largest = 0;
    int ring = 0;
    for (BatcherStats s : each) {
      accepted += s.accepted();
      written += s.written();
      failed += s.failed();
      abandoned += s.abandoned();
      batches += s.batches();
      remaining += s.remainingCapacity();
      ring += s.ringSize();
      BatchLimits l = s.limits();
      if (l != null) {
        limits.add(l);
      }
      last = Math.max(last, s.lastBatchSize());
      largest = Math.max(largest, s.largestBatchSize());
      for (RejectionReason reason : RejectionReason.values()) {
        rejected[reason.ordinal()] += s.rejected(reason);
      }
    }
    return new BatcherStats(accepted, rejected[RejectionReason.FULL.ordinal()],
        rejected[RejectionReason.TIMEOUT.ordinal()], rejected[RejectionReason.INTERRUPTED.ordinal()],
        rejected[RejectionReason.CLOSED.ordinal()], written, failed, abandoned, batches, last, largest, ring,
        remaining, limits.isEmpty() ? null : largest(limits));
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
   * Closes every shard at once, each on its own thread, under the same timeout, and tells the recorders once
   * when all are done. Idempotent: later calls wait for the first close's report up to their own timeout.
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
      return closers.contains(Thread.currentThread()) ? provisional(start)
          : LaterClose.await(name, earlier, timeout, () -> provisional(start));
    }
    try {
      long start = System.nanoTime();
      CloseReport report = closeShards(timeout);
      closeReport = report;
      mine.complete(report);
      long deadline = start + Math.min(Checks.saturatedNanos(timeout), Long.MAX_VALUE / 4);
      recordClosed(report, deadline + SHARD_GRACE_NANOS, deadline + CloseProtocol.GRACE_NANOS);
      return report;
    } catch (RuntimeException | Error e) {
      mine.completeExceptionally(e);
      throw e;
    }
  }

  /**
   * Tells the recorders the batcher closed, after the shards told theirs (of items they abandoned) unless one still
   * blocks at {@code deadline}. User code, on a thread of its own that the close waits for only until
   * {@code graceEnd}, the end of the close's one grace: a recorder that blocks cannot hold the close.
   */
  private void recordClosed(CloseReport report, long deadline, long graceEnd) {
    CompletableFuture<Void> told = new CompletableFuture<>();
    Runnable tell = () -> {
      try {
        for (DisruptorBatcher<T, R> shard : shards) {
          Threads.awaitQuietly(shard.closeRecorded(), deadline);
        }
        closeRecorders.recordClosed(report);
      } finally {
        told.complete(null);
      }
    };
    if (!Threads.startDaemon("ringbatch-" + name + "-close", tell)) {
      tell.run(); // out of memory or threads
      return;
    }
    Threads.awaitQuietly(told, graceEnd);
  }

  private CloseReport closeShards(Duration timeout) {
    long start = System.nanoTime();
    List<CompletableFuture<CloseReport>> reports = new ArrayList<>(shards.size());
    List<Thread> threads = new ArrayList<>(shards.size());
    for (DisruptorBatcher<T, R> shard : shards) {
      // The shard's report, out before the user code its close runs afterwards: that code cannot hold this close.
      CompletableFuture<CloseReport> report = shard.closePublished();
      Thread closer = new Thread(() -> {
        try {
          shard.close(timeout);
        } catch (Throwable t) {
          report.completeExceptionally(t); // no-op if the report was already out
        }
      }, "ringbatch-" + shard.name() + "-closer");
      closer.setDaemon(true);
      threads.add(closer);
      reports.add(report);
    }
    closers = List.copyOf(threads);
    threads.forEach(Thread::start);
    boolean drained = true;
    long abandoned = 0;
    boolean interrupted = Thread.interrupted(); // as a single batcher: the drain is not cut short
    // Each shard's close returns within the timeout plus its grace, unless a dependent action it runs blocks:
    // the wait is bounded all the same.
    long deadline = start + Math.min(Checks.saturatedNanos(timeout), Long.MAX_VALUE / 4) + SHARD_GRACE_NANOS;
    for (CompletableFuture<CloseReport> report : reports) {
      while (true) {
        try {
          CloseReport r = report.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
          drained &= r.drained();
          abandoned += r.abandoned();
          break;
        } catch (InterruptedException e) {
          interrupted = true;
        } catch (TimeoutException stuck) {
          drained = false;
          break;
        } catch (ExecutionException e) {
          throw new IllegalStateException("closing a shard of batcher '" + name + "' failed", e.getCause());
        }
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    return new CloseReport(drained, abandoned, Duration.ofNanos(System.nanoTime() - start), stats());
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
