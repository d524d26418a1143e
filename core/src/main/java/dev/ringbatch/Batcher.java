package dev.ringbatch;

import dev.ringbatch.internal.DisruptorBatcher;
import dev.ringbatch.stats.StatsRecorder;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * Coalesces many threads' items into batches for one {@link BatchSink}, giving each caller its own result.
 *
 * <p>Producers publish items into a bounded ring; one consumer thread takes what it finds and writes a batch
 * whenever the ring runs dry, or a batch reaches {@link BatchLimits#maxBatchSize()} or
 * {@link BatchLimits#maxBatchBytes()} (or its {@link BatchLimits#linger()} runs out: one set, or one the
 * {@link Adaptive} limits of the default config measured to pay). At low load a batch is one item and nobody waits
 * on a timer; under load batches grow by themselves.
 *
 * <pre>{@code
 * try (Batcher<Order, Integer> batcher = Batcher.of("orders", BatcherConfig.ofDefaults(), sink)) {
 *   int rows = batcher.submitAndWait(order);           // blocking view
 *   CompletableFuture<Integer> f = batcher.submit(o2);  // asynchronous view
 *   batcher.offer(o3);                                  // fire and forget
 * }
 * }</pre>
 *
 * <h2>Guarantees</h2>
 * <ul>
 *   <li>Every accepted item is handed to the sink exactly once, or its future fails (it was abandoned by a
 *       close that timed out). Every future completes exactly once.</li>
 *   <li>Every refused item is told: its future fails with {@link BatcherFullException} or
 *       {@link BatcherClosedException}, or {@link #offer} returns {@code false}; it is counted.</li>
 *   <li>Items from one producer thread reach the sink in the order that thread submitted them.</li>
 *   <li>The sink is called on the consumer thread only, one batch at a time.</li>
 * </ul>
 *
 * <h2>Threads</h2>
 * All methods are thread-safe. Futures complete on the consumer thread, so dependent actions attached with
 * {@code thenApply} and friends run there: keep them short and non-blocking, or use the {@code *Async}
 * variants. The consumer thread itself may {@link #submit} and {@link #offer} (a sink that logs into its own
 * batcher): such items are accepted while there is room and refused at once, never blocked, when the ring is
 * full. It may not wait on its own batcher: {@link #submitAndWait} and {@link #close()} throw
 * {@link IllegalStateException} there.
 *
 * @param <T> the item type
 * @param <R> the per-item result type
 */
public interface Batcher<T, R> extends AutoCloseable {

  /**
   * Creates and starts a batcher without a weigher; {@code config} must not set a byte limit.
   *
   * @throws IllegalArgumentException if {@code name} is blank
   * @throws IllegalStateException if {@code config} sets {@code maxBatchBytes}, which needs a weigher
   * @throws NullPointerException if an argument is null
   */
  static <T, R> Batcher<T, R> of(String name, BatcherConfig config, BatchSink<T, R> sink) {
    return DisruptorBatcher.start(name, config, null, sink);
  }

  /**
   * Creates and starts a batcher whose items are weighed for the {@link BatchLimits#maxBatchBytes()} limit.
   *
   * @throws IllegalArgumentException if {@code name} is blank
   * @throws NullPointerException if an argument is null
   */
  static <T, R> Batcher<T, R> of(String name, BatcherConfig config, Weigher<? super T> weigher,
      BatchSink<T, R> sink) {
    java.util.Objects.requireNonNull(weigher, "weigher");
    return DisruptorBatcher.start(name, config, weigher, sink);
  }

  /**
   * Creates and starts a batcher whose sink writes asynchronously: the consumer goes on coalescing while up
   * to {@link BatcherConfig#maxInFlightBatches()} batches are in flight. See {@link AsyncBatchSink}. The config's
   * {@link BatcherConfig#retryPolicy() retryPolicy} does not apply: a failed stage fails its items.
   *
   * @throws IllegalArgumentException if {@code name} is blank
   * @throws IllegalStateException if {@code config} sets {@code maxBatchBytes}, which needs a weigher
   * @throws NullPointerException if an argument is null
   */
  static <T, R> Batcher<T, R> ofAsync(String name, BatcherConfig config, AsyncBatchSink<T, R> sink) {
    return DisruptorBatcher.startAsync(name, config, null, sink);
  }

  /**
   * Creates and starts a sharded batcher: {@code shards} independent batchers, each with its own ring,
   * consumer thread and sink (made by {@code sinks} for shard 0, 1, ...), behind this one interface. An item
   * goes to the shard its {@code key} hashes to, so items with equal keys are written in the order each
   * producer submitted them; a key is compared by its {@code equals} and {@code hashCode}, so an array key (equal
   * by identity only) is refused when the item is submitted. Use it when the sink's system takes parallel writers (one JDBC connection per
   * shard, say). {@code config} applies to each shard, so the total capacity is {@code shards * ringSize}.
   * Stats are sums over the shards ({@link #shardStats()} has each); flush and close span them all.
   *
   * @throws IllegalArgumentException if {@code name} is blank or {@code shards} is not positive
   * @throws NullPointerException if an argument is null, or {@code sinks} returns null
   */
  static <T, R> Batcher<T, R> sharded(String name, BatcherConfig config, int shards,
      java.util.function.Function<? super T, ?> key,
      java.util.function.IntFunction<? extends BatchSink<T, R>> sinks) {
    java.util.Objects.requireNonNull(key, "key");
    return dev.ringbatch.internal.ShardedBatcher.start(name, config, shards, key, null, sinks);
  }

  /**
   * Creates and starts a sharded batcher that spreads items round-robin: no order is kept between any two
   * items. See {@link #sharded(String, BatcherConfig, int, java.util.function.Function,
   * java.util.function.IntFunction)}.
   */
  static <T, R> Batcher<T, R> sharded(String name, BatcherConfig config, int shards,
      java.util.function.IntFunction<? extends BatchSink<T, R>> sinks) {
    return dev.ringbatch.internal.ShardedBatcher.start(name, config, shards, null, null, sinks);
  }

  /** Returns the name given at creation; it appears in thread names, exceptions and metrics. */
  String name();

  /** Returns the configuration given at creation; see {@link #limits()} for the batch limits in force. */
  BatcherConfig config();

  /**
   * Submits an item and returns a future of its result.
   *
   * <p>The future completes with the sink's result for the item, or fails with: the sink's exception;
   * {@link BatcherFullException} if the ring was full (at once under {@link OverflowPolicy#DROP}, after
   * {@link BatcherConfig#submitTimeout()} under {@link OverflowPolicy#BLOCK}); {@link BatcherClosedException}
   * if the batcher is closing, or if a close timed out before the item was written. Under {@code BLOCK} this
   * call waits for room before it returns.
   *
   * @throws NullPointerException if {@code item} is null, or a sharded batcher's key function returns null
   * @throws IllegalArgumentException if the weigher returns a negative weight for {@code item}, or a sharded
   *     batcher's key function returns an array
   */
  CompletableFuture<R> submit(T item);

  /**
   * Submits an item and waits for its result: the synchronous view of {@link #submit}.
   *
   * @return the sink's result for the item
   * @throws BatchWriteException if the sink failed the item (the sink's exception is the cause)
   * @throws BatcherFullException if the ring was full
   * @throws BatcherClosedException if the batcher is closing or closed, or abandoned the item
   * @throws InterruptedException if interrupted while waiting for room or for the result; an item already
   *     accepted is still written
   * @throws IllegalStateException if called on the batcher's own consumer thread
   * @throws NullPointerException if {@code item} is null, or a sharded batcher's key function returns null
   * @throws IllegalArgumentException as {@link #submit} does
   */
  R submitAndWait(T item) throws InterruptedException;

  /**
   * Submits an item and waits at most {@code timeout} for its result: {@link #submitAndWait(Object)} with a
   * bound, for a caller that must not wait on a hung sink. The bound covers the whole call: under
   * {@link OverflowPolicy#BLOCK} the wait for room lasts at most the shorter of {@code timeout} and
   * {@link BatcherConfig#submitTimeout()} (then {@link BatcherFullException}, and the item is not accepted).
   *
   * <p><b>An item whose caller stopped waiting</b> ({@link java.util.concurrent.TimeoutException}) is still accepted: it is written or
   * failed exactly once, like any other, and counted in {@link #stats()} and the recorders; only its result is
   * not delivered. A caller that needs the eventual outcome uses {@link #submit} and waits on the future with its
   * own timeout instead.
   *
   * @return the sink's result for the item
   * @throws java.util.concurrent.TimeoutException if the result did not come within {@code timeout}
   * @throws BatchWriteException if the sink failed the item (the sink's exception is the cause)
   * @throws BatcherFullException if the ring was full
   * @throws BatcherClosedException if the batcher is closing or closed, or abandoned the item
   * @throws InterruptedException if interrupted while waiting for room or for the result; an item already
   *     accepted is still written
   * @throws IllegalArgumentException if {@code timeout} is negative, or as {@link #submit} does
   * @throws IllegalStateException if called on the batcher's own consumer thread
   * @throws NullPointerException if {@code item} or {@code timeout} is null, or a sharded batcher's key function
   *     returns null
   */
  R submitAndWait(T item, java.time.Duration timeout) throws InterruptedException,
      java.util.concurrent.TimeoutException;

  /**
   * Submits an item for which the caller needs no result (a log line, a metric). It allocates nothing per
   * item. Follows the {@linkplain BatcherConfig#overflowPolicy() overflow policy}: under {@code BLOCK} it
   * waits for room up to the submit timeout.
   *
   * <p>If the sink later fails the item, the failure is counted in {@link BatcherStats#failed()}, reported
   * to the {@link StatsRecorder}s, and told to the {@link BatcherConfig#offerFailureHandler()} if there is one;
   * otherwise logged at {@code WARNING}, at most once every ten seconds per batcher.
   *
   * @return {@code true} if the item was accepted, {@code false} if it was refused (and counted)
   * @throws NullPointerException if {@code item} is null, or a sharded batcher's key function returns null
   * @throws IllegalArgumentException if the weigher returns a negative weight for {@code item}, or a sharded
   *     batcher's key function returns an array
   */
  boolean offer(T item);

  /**
   * Returns a future that completes when every item accepted before this call has been written or failed.
   * It cuts a linger short. After a close it completes at once, or fails with
   * {@link BatcherClosedException} if that close abandoned items (or gave up on a slot a producer had claimed and
   * not yet published, whose item may then still arrive and fail). Does not wait itself.
   *
   * @throws IllegalStateException if called on the batcher's consumer thread (from its sink, or a dependent
   *     action the consumer runs) or from a dependent action on a thread completing one of its async batches:
   *     the flush would wait for that very thread
   */
  CompletableFuture<Void> flush();

  /** Returns the batch limits in force. */
  BatchLimits limits();

  /**
   * Replaces the batch limits; the consumer applies them from its next batch on (a batch being filled when this
   * returns keeps the limits it began with; one set from the sink applies to the batch after the sink's). Safe to
   * call at any time from any thread.
   *
   * @throws IllegalStateException if {@code limits.maxBatchSize()} exceeds the ring size, or
   *     {@code limits} sets a byte limit and the batcher has no weigher
   * @throws NullPointerException if {@code limits} is null
   */
  void setLimits(BatchLimits limits);

  /** Returns a snapshot of the counters. Cheap enough to poll; safe from any thread. */
  BatcherStats stats();

  /** Returns each shard's counters: one element for a batcher that is not sharded. */
  default java.util.List<BatcherStats> shardStats() {
    return java.util.List.of(stats());
  }

  /** Adds a recorder that sees every later batch and rejection. */
  void addStatsRecorder(StatsRecorder recorder);

  /** Removes a recorder added with {@link #addStatsRecorder}; returns whether it was registered. */
  boolean removeStatsRecorder(StatsRecorder recorder);

  /** Whether {@link #close()} has begun. */
  boolean isClosed();

  /**
   * Closes with the configured {@link BatcherConfig#closeTimeout()}. See {@link #close(Duration)}.
   *
   * @throws IllegalStateException if called on the batcher's own consumer thread
   */
  @Override
  void close();

  /**
   * Stops accepting, writes what was accepted, completes every future and stops the consumer thread,
   * waiting at most {@code timeout}.
   *
   * <p>From the moment it begins, new items are refused with {@link BatcherClosedException} and producers
   * waiting for room stop waiting. If the drain does not finish in time (a slow or hung sink), every accepted
   * item not yet written is abandoned: its future fails with {@link BatcherClosedException}
   * ({@link BatcherClosedException#isAbandoned()}); an item whose batch was inside the sink at that moment may
   * or may not have been written, and its exception says so ({@link BatcherClosedException#isOutcomeUnknown()}).
   * If the consumer thread was in the sink or in a future's dependent action, it is interrupted. Returns within
   * {@code timeout} plus one short grace (200 ms, moved by a pause of the whole process such as a long GC, by 1 s
   * at most) for everything it waits for after the timeout: the hand-over, futures being completed and the user
   * code that follows its report. A sink call the consumer had already
   * begun to make (its thread descheduled between handing the batch over and the call itself) may still start
   * after close returned: its items were already told the outcome is unknown, and what it records is ignored.
   *
   * <p>An interrupted calling thread does not cut the drain short: the close waits up to {@code timeout} as
   * usual and returns with the interrupt flag set again. Idempotent: later calls return the first call's
   * report (a concurrent call waits for it up to its own timeout; a call from a dependent action running on
   * the closing thread returns a provisional report at once).
   *
   * @return what the close achieved
   * @throws IllegalArgumentException if {@code timeout} is negative
   * @throws IllegalStateException if called on the batcher's own consumer thread
   */
  CloseReport close(Duration timeout);

  /** Returns the report of the close, or {@code null} if no close has finished yet. */
  @Nullable CloseReport closeReport();
}
