package dev.ringbatch;

import dev.ringbatch.HookFault.Hook;
import dev.ringbatch.stats.StatsRecorder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;

/**
 * One round of {@link HookChaosTest}: its random configuration, the hooks it gives the batcher, what every
 * caller was told and what the sinks were handed, and the invariant checks, run wherever something is
 * observed (a hook, a dependent action, the observer, a close). Violations are recorded, never thrown.
 */
final class HookRound {
  static final long REMAINING = -1L;
  static final byte NONE = 0;
  static final byte SUCCESS = 1;
  static final byte FAIL = 2;
  static final byte UNKNOWN = 3;
  static final byte OPEN = 0;
  static final byte RETURNED = 1;
  static final byte THREW = 2;
  static final ThreadLocal<Boolean> STAGE_THREAD = ThreadLocal.withInitial(() -> Boolean.FALSE);
  /**
   * How long past its timeout a close may take before it counts as hung: a healthy one takes up to about 600 ms
   * (hand-over grace, completions grace, user-code grace, 200 ms each), plus room for a stalled machine.
   */
  private static final long GRACE_NANOS = TimeUnit.SECONDS.toNanos(3);

  enum Mode { SYNC, WEIGHED, ASYNC, SHARDED }

  final int index;
  final long seed;
  final Random rnd;
  final String name;
  final Mode mode;
  final int ringSize;
  final int maxWeight;
  final boolean lingers;
  final boolean hookCloses;
  final boolean retrying;
  final boolean useFactory;
  final boolean interruptConsumer;
  final double pUnknown;
  final double pFail;
  final double pSinkThrow;
  final double pDependent;
  final double pKeep;
  final int holdPercent;
  final HookFault fault;
  final ExecutorService stagePool;
  private final HookChaosTest.Tally tally;
  final StringBuilder description = new StringBuilder();
  final Set<String> kinds = new TreeSet<>();

  final long startNanos = System.nanoTime();
  volatile Batcher<Long, Long> batcher;
  volatile boolean done;
  volatile boolean closeReturned;
  volatile long closeReturnedNanos;
  volatile boolean stopActors;
  /** Set when the library logged that a close gave up on a consumer that did not hand over (ORPHANED). */
  volatile boolean orphanLogged;
  /** Nanoseconds hooks parked on closing threads (a sharded close runs each shard's close on its own thread). */
  final AtomicLong closingThreadParkNanos = new AtomicLong();
  final CountDownLatch closeLatch = new CountDownLatch(1);
  final AtomicInteger inHooks = new AtomicInteger();
  final AtomicLong nextId = new AtomicLong();
  final Map<Long, Submission> byId = new ConcurrentHashMap<>();
  private final Map<Long, ItemLog> items = new ConcurrentHashMap<>();
  final Set<Thread> consumerThreads = ConcurrentHashMap.newKeySet();
  private final Set<Thread> closingThreads = ConcurrentHashMap.newKeySet();
  final Set<Thread> waitingThreads = ConcurrentHashMap.newKeySet();
  private final Map<Thread, Long> lastAccepted = new ConcurrentHashMap<>();
  private final AtomicLong completedWrittenOrFailed = new AtomicLong();
  private final AtomicLong completedAbandoned = new AtomicLong();
  private final ConcurrentLinkedDeque<Kept> kept = new ConcurrentLinkedDeque<>();
  final ConcurrentLinkedQueue<CompletableFuture<Void>> flushes = new ConcurrentLinkedQueue<>();
  private final AtomicInteger flushTimeouts = new AtomicInteger();
  private final AtomicInteger closingThreadFlushTimeouts = new AtomicInteger();
  private final ConcurrentLinkedQueue<Runnable> held = new ConcurrentLinkedQueue<>();
  /**
   * Whether an async stage may be held until the close returns: only once the round's threads, closers among
   * them, are started. Before, the test thread itself may wait without a bound for an item (a recorder hook
   * calling submitAndWait from addStatsRecorder), and no close would ever come to release the stage.
   */
  private volatile boolean holding;

  HookRound(int index, long seed, HookChaosTest.Tally tally) {
    this.index = index;
    this.seed = seed;
    this.tally = tally;
    this.rnd = new Random(seed);
    int m = rnd.nextInt(100);
    mode = m < 30 ? Mode.SYNC : m < 45 ? Mode.WEIGHED : m < 75 ? Mode.ASYNC : Mode.SHARDED;
    name = "hc" + index + "-" + Long.toHexString(seed & 0xFFFF);
    ringSize = 8 << rnd.nextInt(4);
    maxWeight = 1 + rnd.nextInt(500);
    lingers = rnd.nextBoolean();
    hookCloses = rnd.nextInt(4) == 0;
    retrying = mode != Mode.ASYNC && rnd.nextBoolean();
    useFactory = rnd.nextInt(5) != 0;
    interruptConsumer = rnd.nextBoolean();
    pUnknown = rnd.nextInt(3) == 0 ? 0 : rnd.nextDouble() * 0.15;
    pFail = rnd.nextDouble() * 0.1;
    pSinkThrow = rnd.nextDouble() * 0.3;
    pDependent = rnd.nextDouble() * 0.4;
    pKeep = rnd.nextDouble() * 0.5;
    holdPercent = mode == Mode.ASYNC ? rnd.nextInt(26) : 0;
    fault = new HookFault(this, rnd);
    AtomicInteger n = new AtomicInteger();
    stagePool = Executors.newCachedThreadPool(r -> {
      Thread t = new Thread(r, "hookchaos-stage-" + index + "-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
  }

  // ---------------------------------------------------------------- configuration and hooks

  BatcherConfig config() {
    BatcherConfig.Builder b = BatcherConfig.builder().ringSize(ringSize).maxBatchSize(1 + rnd.nextInt(ringSize))
        .linger(lingers ? Duration.ofNanos(100_000 + rnd.nextInt(5_000_000)) : Duration.ZERO)
        .overflowPolicy(rnd.nextBoolean() ? OverflowPolicy.BLOCK : OverflowPolicy.DROP)
        .submitTimeout(Duration.ofMillis(1 + rnd.nextInt(100))).closeTimeout(Duration.ofMillis(rnd.nextInt(151)))
        .waitMode(rnd.nextInt(8) == 0 ? WaitMode.YIELDING : WaitMode.BLOCKING)
        .ticker(() -> {
          fault.strike(Hook.TICKER);
          return System.nanoTime();
        });
    if (mode == Mode.WEIGHED && rnd.nextBoolean()) {
      b.maxBatchBytes(1 + rnd.nextInt(maxWeight * 8));
    }
    if (!lingers && rnd.nextBoolean()) { // the limits tune themselves: the ticker and the log handler run per batch
      Adaptive adaptive = rnd.nextBoolean() ? Adaptive.throughput()
          : Adaptive.latency(Duration.ofNanos(50_000 + rnd.nextInt(10_000_000)));
      b.adaptive(adaptive.withMaxLinger(Duration.ofNanos(rnd.nextInt(2_000_001))));
      if (rnd.nextBoolean()) {
        b.limits(BatchLimits.of(ringSize, BatchLimits.NO_BYTE_LIMIT, Duration.ZERO)); // the default cap, stated
      }
    }
    if (rnd.nextBoolean()) { // told of failed offers where a dependent action would run: the same faults
      b.offerFailureHandler((item, cause) -> fault.strike(Hook.DEPENDENT));
    }
    if (mode == Mode.ASYNC) {
      b.maxInFlightBatches(1 + rnd.nextInt(4));
    }
    if (retrying) {
      long initial = rnd.nextInt(1_000_001);
      b.retryPolicy(RetryPolicy.builder().maxAttempts(2 + rnd.nextInt(3)).initialBackoff(Duration.ofNanos(initial))
          .maxBackoff(Duration.ofNanos(initial + rnd.nextInt(2_000_001))).maxElapsed(Duration.ofMillis(20 + rnd.nextInt(80)))
          .retryOn(e -> {
            fault.strike(Hook.RETRY_ON);
            return !(e instanceof Error) && !(e instanceof CancellationException);
          }).build());
    }
    if (useFactory) {
      AtomicInteger shard = new AtomicInteger();
      b.threadFactory(r -> {
        fault.strike(Hook.FACTORY);
        // The factory makes the consumers and the close helper: the helper is named as the library's own is.
        boolean consumer = r.getClass().getSimpleName().equals("CoalescingConsumer");
        Thread t = new Thread(r, "ringbatch-" + name + (!consumer ? "-close"
            : mode == Mode.SHARDED ? "-" + shard.getAndIncrement() : "")) {
          @Override
          public void interrupt() { // user code too: a close that took over from a call out runs it
            // the library's calls only (a close's); the agitator's are the test's own
            if (Thread.currentThread() != this && !Thread.currentThread().getName().startsWith("hookchaos-")) {
              fault.strike(Hook.INTERRUPT);
            }
            super.interrupt();
          }
        };
        t.setDaemon(true);
        if (consumer) {
          consumerThreads.add(t);
        }
        return t;
      });
    }
    BatcherConfig config = b.build();
    description.append(mode).append(" ring=").append(ringSize).append(" maxBatch=").append(config.limits().maxBatchSize())
        .append(config.limits().hasByteLimit() ? " maxBytes=" + config.limits().maxBatchBytes() : "")
        .append(" linger=").append(config.limits().linger().toNanos() / 1000).append("us ")
        .append(config.adaptive() == null ? "" : config.adaptive() + " ")
        .append(config.overflowPolicy()).append(retrying ? " retry" : "")
        .append(mode == Mode.ASYNC ? " inFlight=" + config.maxInFlightBatches() + " hold=" + holdPercent + "%" : "")
        .append(useFactory ? "" : " default-thread").append(hookCloses ? " hook-closes" : "")
        .append(interruptConsumer ? " consumer-interrupts" : "").append(" hot=").append(fault.hot)
        .append(String.format(" p(unknown=%.2f fail=%.2f throw=%.2f dep=%.2f)", pUnknown, pFail, pSinkThrow, pDependent));
    return config;
  }

  Batcher<Long, Long> create(BatcherConfig config) {
    HookSinks sinks = new HookSinks(this);
    switch (mode) {
      case SYNC:
        return Batcher.of(name, config, sinks.sync());
      case WEIGHED:
        return Batcher.of(name, config, id -> {
          fault.strike(Hook.WEIGHER);
          return 1 + Math.floorMod(id * 0x9E3779B97F4A7C15L ^ seed, maxWeight);
        }, sinks.sync());
      case ASYNC:
        return Batcher.ofAsync(name, config, sinks.async());
      default:
        BatchSink<Long, Long> sink = sinks.sync();
        int shards = 2 + rnd.nextInt(2);
        description.append(" shards=").append(shards);
        return rnd.nextBoolean() ? Batcher.sharded(name, config, shards, id -> id % 7, i -> sink)
            : Batcher.sharded(name, config, shards, i -> sink);
    }
  }

  StatsRecorder recorder(boolean waits) {
    return new StatsRecorder() {
      @Override public void recordBatch(int size, long weight, long writeNanos, int failed) {
        fault.strike(Hook.RECORDER);
      }
      @Override public boolean recordsItemWaits() {
        fault.strike(Hook.RECORDER);
        return waits;
      }
      @Override public void recordItemWaits(int n, long totalWaitNanos, long maxWaitNanos) {
        fault.strike(Hook.RECORDER);
      }
      @Override public boolean recordsEachItemWait() {
        fault.strike(Hook.RECORDER);
        return waits;
      }
      @Override public void recordEachItemWait(long[] waitNanos, int count) {
        fault.strike(Hook.RECORDER);
      }
      @Override public void recordRejected(RejectionReason reason) {
        fault.strike(Hook.RECORDER);
      }
      @Override public void recordAbandoned(long count) {
        fault.strike(Hook.RECORDER);
      }
      @Override public void recordRetry(int attempt, Throwable cause) {
        fault.strike(Hook.RECORDER);
      }
      @Override public void recordClosed(CloseReport report) {
        checkReport(report, "recordClosed-report", "recordClosed");
        fault.strike(Hook.RECORDER);
      }
    };
  }

  void findConsumerThreads() {
    Pattern shard = Pattern.compile(Pattern.quote("ringbatch-" + name) + "(-\\d+)?");
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (shard.matcher(t.getName()).matches()) {
        consumerThreads.add(t);
      }
    }
  }

  // ---------------------------------------------------------------- what callers do (producers and re-entrant hooks)

  /** What one id's caller did and was told. */
  static final class Submission {
    final long id;
    final String origin;
    final CompletableFuture<Long> future; // the caller's future, or one holding what submitAndWait said; null: offer
    final boolean accepted; // offers: what offer returned; submissions: whether submit returned at all
    final boolean closedBefore;

    Submission(long id, String origin, CompletableFuture<Long> future, boolean accepted, boolean closedBefore) {
      this.id = id;
      this.origin = origin;
      this.future = future;
      this.accepted = accepted;
      this.closedBefore = closedBefore;
    }
  }

  CompletableFuture<Long> submit(String origin, boolean dependents) {
    Batcher<Long, Long> b = batcher;
    if (b == null) {
      return null;
    }
    long id = nextId.getAndIncrement();
    boolean closedBefore = b.isClosed();
    CompletableFuture<Long> f;
    try {
      f = b.submit(id);
    } catch (Throwable t) { // a throwing weigher
      byId.put(id, new Submission(id, origin + " (threw " + t + ")", null, false, closedBefore));
      return null;
    }
    Submission s = new Submission(id, origin, f, true, closedBefore);
    byId.put(id, s);
    AtomicInteger completions = new AtomicInteger();
    f.whenComplete((v, e) -> completed(s, e, completions));
    ThreadLocalRandom r = ThreadLocalRandom.current();
    if (dependents && r.nextDouble() < pDependent) {
      if (r.nextBoolean()) {
        f.thenRun(() -> fault.strike(Hook.DEPENDENT));
      } else {
        f.whenComplete((v, e) -> fault.strike(Hook.DEPENDENT));
      }
    }
    return f;
  }

  /** The caller's own first dependent action: counts, and checks that stats() already count the item. */
  private void completed(Submission s, Throwable e, AtomicInteger completions) {
    Throwable cause = unwrap(e);
    if (completions.incrementAndGet() != 1) {
      violation("future-completed-twice", "id " + s.id);
    }
    if (s.future.isCancelled()) {
      violation("future-cancelled", "id " + s.id + " isCancelled() after the batcher failed it with " + cause);
    }
    if (isRejection(cause)) {
      return;
    }
    if (s.closedBefore) {
      violation("accepted-after-isClosed", "id " + s.id + " (" + s.origin + ") submitted after isClosed() returned"
          + " true, then " + told(cause));
    }
    // Each item is counted before its future completes: written or failed by recordBatch, abandoned by the close.
    boolean abandoned = cause instanceof BatcherClosedException;
    long done = (abandoned ? completedAbandoned : completedWrittenOrFailed).incrementAndGet();
    BatcherStats st = batcher.stats();
    checkStats(st, "own dependent action");
    long counted = abandoned ? st.abandoned() : st.written() + st.failed();
    if (counted < done) {
      violation("dependent-action-sees-item-uncounted (" + told(cause) + ")", "id " + s.id + ": " + done + " futures"
          + " completed " + (abandoned ? "abandoned, stats abandoned " : "written or failed, stats written+failed ")
          + counted + ": " + st);
    }
  }

  void offer(String origin) {
    Batcher<Long, Long> b = batcher;
    if (b == null) {
      return;
    }
    long id = nextId.getAndIncrement();
    boolean closedBefore = b.isClosed();
    boolean ok;
    try {
      ok = b.offer(id);
    } catch (Throwable t) {
      byId.put(id, new Submission(id, origin + " offer (threw " + t + ")", null, false, closedBefore));
      return;
    }
    byId.put(id, new Submission(id, origin + " offer", null, ok, closedBefore));
    if (ok && closedBefore) {
      violation("accepted-after-isClosed", "offer(" + id + ") (" + origin + ") returned true after isClosed()");
    }
  }

  void submitAndWait(String origin) {
    Batcher<Long, Long> b = batcher;
    if (b == null) {
      return;
    }
    long id = nextId.getAndIncrement();
    CompletableFuture<Long> told = new CompletableFuture<>();
    byId.put(id, new Submission(id, origin + " submitAndWait", told, true, b.isClosed()));
    boolean consumer = onConsumerThread();
    waitingThreads.add(Thread.currentThread());
    try {
      // Every other call takes the bounded wait, generous enough never to run out unless something hangs.
      told.complete(id % 2 == 0 ? b.submitAndWait(id) : b.submitAndWait(id, java.time.Duration.ofSeconds(20)));
      if (consumer) {
        violation("submitAndWait-on-consumer-did-not-throw", origin);
      }
    } catch (BatchWriteException e) {
      told.completeExceptionally(e.getCause());
    } catch (InterruptedException e) {
      told.completeExceptionally(e.getCause() instanceof BatcherFullException full ? full
          : new OutcomeUnknownException("hookchaos: interrupted while waiting", e));
      Thread.currentThread().interrupt();
    } catch (TimeoutException e) {
      told.completeExceptionally(new OutcomeUnknownException("hookchaos: the bounded wait ran out", e));
    } catch (IllegalStateException e) {
      told.completeExceptionally(consumer && !(e instanceof BatcherClosedException)
          ? new BatcherFullException(name, ringSize, RejectionReason.FULL, "refused on the consumer") : e);
    } catch (Throwable t) {
      told.completeExceptionally(t);
    } finally {
      waitingThreads.remove(Thread.currentThread());
    }
  }

  void flushAndWait(String origin) {
    Batcher<Long, Long> b = batcher;
    if (b == null) {
      return;
    }
    CompletableFuture<Void> f = b.flush();
    flushes.add(f);
    String role = role();
    // The consumer (and a thread completing futures) waiting for its own flush is documented misuse.
    if (role.equals("consumer") || role.equals("stage thread") || flushTimeouts.get() >= 2) {
      return;
    }
    try {
      f.get(2, TimeUnit.SECONDS);
    } catch (TimeoutException e) {
      flushTimeouts.incrementAndGet();
      HookFault.state(this).flushTimeoutsTotal++;
      if (role.equals("closing thread")) {
        closingThreadFlushTimeouts.incrementAndGet();
      } else if (!held.isEmpty()) {
        return; // it waits for an async stage the sink holds until the close returns: the test's own wait
      }
      violation("flush-hang (" + origin + " on " + role + ")", "flush().get(2 s) timed out; close returned: "
          + closeReturned + ", " + batcher.stats());
    } catch (ExecutionException e) {
      if (!(e.getCause() instanceof BatcherClosedException)) {
        violation("flush-failed-oddly", String.valueOf(e.getCause()));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  void setRandomLimits(String origin) {
    Batcher<Long, Long> b = batcher;
    if (b == null) {
      return;
    }
    ThreadLocalRandom r = ThreadLocalRandom.current();
    long bytes = mode == Mode.WEIGHED && r.nextBoolean() ? 1 + r.nextInt(maxWeight * 8) : BatchLimits.NO_BYTE_LIMIT;
    Duration linger = lingers && r.nextBoolean() ? Duration.ofNanos(r.nextInt(5_000_001)) : Duration.ZERO;
    try {
      b.setLimits(BatchLimits.of(1 + r.nextInt(ringSize), bytes, linger));
    } catch (Throwable t) {
      violation("setLimits-threw", origin + ": " + t);
    }
  }

  /** close(timeout), timed and checked; a close that returned its final report marks "close returned". */
  CloseReport timedClose(Duration timeout, String origin) {
    Batcher<Long, Long> b = batcher;
    if (b == null) {
      return null;
    }
    Thread me = Thread.currentThread();
    boolean consumer = onConsumerThread();
    HookFault.ThreadState s = HookFault.state(this);
    long parked = s.parkedTotal;
    long closingParked = closingThreadParkNanos.get();
    int flushHangs = s.flushTimeoutsTotal;
    int closingFlushHangs = closingThreadFlushTimeouts.get();
    boolean added = closingThreads.add(me);
    long start = System.nanoTime();
    CloseReport report = null;
    try {
      report = b.close(timeout);
      if (consumer) {
        violation("close-on-consumer-did-not-throw", origin);
      }
    } catch (IllegalStateException e) {
      if (!consumer) {
        violation("close-threw", origin + ": " + e);
      }
    } catch (Throwable t) {
      violation("close-threw", origin + ": " + t);
    } finally {
      if (added) {
        closingThreads.remove(me);
      }
    }
    long took = System.nanoTime() - start;
    if (consumer) {
      return null;
    }
    CloseReport last = b.closeReport();
    if (last != null) {
      markCloseReturned();
    }
    if (report != null) {
      checkReport(report, report == last ? "close-report" : "provisional-close-report", origin);
    }
    if (!b.isClosed()) {
      violation("not-closed-after-close", origin);
    }
    if (took > timeout.toNanos() + GRACE_NANOS) {
      long inHooks = s.parkedTotal - parked;
      String why = s.flushTimeoutsTotal > flushHangs ? "flush().get in a hook on the closing thread"
          : closingThreadFlushTimeouts.get() > closingFlushHangs ? "flush().get in a hook on a shard's closing thread"
          : inHooks > 0 && took - inHooks <= timeout.toNanos() + GRACE_NANOS ? "hooks parked on the closing thread"
          : took - (closingThreadParkNanos.get() - closingParked) <= timeout.toNanos() + GRACE_NANOS
          ? "hooks parked on closing threads" : shardCloses().isEmpty() ? "other" : "a shard's close still running";
      violation("close-hang (" + why + ")", origin + ": close(" + timeout.toMillis() + " ms) took "
          + TimeUnit.NANOSECONDS.toMillis(took) + " ms, " + TimeUnit.NANOSECONDS.toMillis(inHooks)
          + " ms of it parked in hooks on the closing thread" + shardCloses());
    }
    return report;
  }

  /** The shards' closing threads still running, with the top of their stacks. */
  private String shardCloses() {
    StringBuilder s = new StringBuilder();
    for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
      String n = e.getKey().getName();
      if (n.startsWith("ringbatch-" + name + "-") && n.endsWith("-close")) {
        s.append("; ").append(n).append(" still in ");
        StackTraceElement[] trace = e.getValue();
        for (int i = 0; i < Math.min(12, trace.length); i++) {
          if (trace[i].getClassName().startsWith("dev.ringbatch")) {
            s.append(trace[i].getClassName().substring(13)).append('.').append(trace[i].getMethodName()).append(" <- ");
          }
        }
      }
    }
    return s.toString();
  }

  void markCloseReturned() {
    synchronized (this) {
      if (closeReturned) {
        return;
      }
      closeReturnedNanos = System.nanoTime();
      closeReturned = true;
    }
    closeLatch.countDown();
    releaseHeld();
  }

  /** From now on an async stage may be held until the close returns: the round's closers are about to start. */
  void startHolding() {
    if (!closeReturned) {
      holding = true;
    }
  }

  /** Holds an async stage's completion until the close returned; false if that already happened. */
  boolean hold(Runnable finish) {
    if (!holding || closeReturned) {
      return false;
    }
    held.add(finish);
    if (!holding || closeReturned) {
      releaseHeld();
    }
    return true;
  }

  void releaseHeld() {
    Runnable r;
    while ((r = held.poll()) != null) {
      Runnable finish = r;
      try {
        stagePool.execute(finish);
      } catch (java.util.concurrent.RejectedExecutionException e) {
        finish.run();
      }
    }
  }

  void stopHolding() {
    holding = false;
    releaseHeld();
  }

  boolean onConsumerThread() {
    return consumerThreads.contains(Thread.currentThread());
  }

  String role() {
    Thread t = Thread.currentThread();
    if (onConsumerThread()) {
      return "consumer";
    } else if (closingThreads.contains(t) || t.getName().startsWith("ringbatch-" + name) && t.getName().endsWith("-close")) {
      return "closing thread";
    } else if (STAGE_THREAD.get()) {
      return "stage thread";
    }
    return "other thread";
  }

  // ---------------------------------------------------------------- what the sinks were handed and recorded

  /** One sink attempt: the ids handed, the outcome recorded for each, and how the attempt ended. */
  static final class Attempt {
    final long[] ids;
    private final byte[] outcome;
    volatile byte end = OPEN;
    volatile boolean refused;

    Attempt(long[] ids) {
      this.ids = ids;
      this.outcome = new byte[ids.length];
    }

    synchronized void set(int i, byte o) {
      outcome[i] = o;
    }

    /** Marks every item without an outcome written; returns whether item {@code j} had none. */
    synchronized boolean setRemaining(int j) {
      boolean was = outcome[j] == NONE;
      for (int i = 0; i < outcome.length; i++) {
        if (outcome[i] == NONE) {
          outcome[i] = SUCCESS;
        }
      }
      return was;
    }

    synchronized byte get(int i) {
      return outcome[i];
    }
  }

  private static final class ItemLog {
    final List<Attempt> attempts = new ArrayList<>(2);
    final List<Integer> positions = new ArrayList<>(2);
    int successes;
  }

  /** How many sink attempts recorded {@code id} written. */
  int successesOf(long id) {
    ItemLog log = items.get(id);
    if (log == null) {
      return 0;
    }
    synchronized (log) {
      return log.successes;
    }
  }

  /** Invariants 3 and 4, at the start of every sink call. */
  Attempt beginAttempt(long[] ids, boolean late) {
    Attempt a = new Attempt(ids);
    if (late) {
      boolean unknown = false;
      for (long id : ids) {
        Submission s = byId.get(id);
        unknown |= s != null && s.future != null && s.future.isDone() && isUnknown(failureOf(s.future));
      }
      violation(unknown ? "sink-started-after-close-returned (item told outcome unknown)"
          : "sink-called-after-close-returned", mode + ": a batch of " + ids.length + " (first id " + ids[0] + ") "
          + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - closeReturnedNanos) + " ms after close returned");
    }
    Map<String, List<Long>> again = new java.util.TreeMap<>();
    for (int i = 0; i < ids.length; i++) {
      ItemLog log = items.computeIfAbsent(ids[i], k -> new ItemLog());
      synchronized (log) {
        for (int k = 0; k < log.attempts.size(); k++) {
          Attempt prev = log.attempts.get(k);
          byte end = prev.end;
          byte o = prev.get(log.positions.get(k));
          if (end == THREW && (o == NONE || o == SUCCESS)) {
            continue; // the failed attempt recorded nothing for it, or a success the throw voided (Batch's contract)
          }
          String kind = end == OPEN ? "handed-twice (earlier attempt still open)"
              : end == RETURNED ? "handed-twice (earlier attempt succeeded)"
              : o == UNKNOWN ? "retry-rewrote-item (earlier attempt recorded OutcomeUnknownException, then threw)"
              : "retry-rewrote-item (earlier attempt recorded " + (o == SUCCESS ? "success" : "a failure") + ", then threw)";
          again.computeIfAbsent(kind, x -> new ArrayList<>()).add(ids[i]);
        }
        log.attempts.add(a);
        log.positions.add(i);
      }
    }
    again.forEach((kind, which) -> violation(kind, mode + ": ids " + which + " of a batch of " + ids.length));
    return a;
  }

  void ended(Attempt a, byte end) {
    a.end = end;
    if (end == RETURNED) {
      for (int i = 0; i < a.ids.length; i++) {
        if (a.get(i) == SUCCESS) {
          ItemLog log = items.get(a.ids[i]);
          synchronized (log) {
            log.successes++;
          }
        }
      }
    }
  }

  /** A batch a sink kept; a sync one is "matured" once its consumer entered the sink again (its write returned). */
  private static final class Kept {
    final Batch<Long, Long> batch;
    final long[] ids;
    final boolean sync;
    volatile boolean matured;

    Kept(Batch<Long, Long> batch, long[] ids, boolean sync) {
      this.batch = batch;
      this.ids = ids;
      this.sync = sync;
    }
  }

  private static final ThreadLocal<Kept> KEPT_HERE = new ThreadLocal<>();

  void keep(Batch<Long, Long> batch, long[] ids, boolean sync) {
    if (ThreadLocalRandom.current().nextDouble() < pKeep) {
      Kept k = new Kept(batch, ids, sync);
      kept.addFirst(k);
      while (kept.size() > 6) {
        kept.pollLast();
      }
      if (sync) {
        KEPT_HERE.set(k);
      }
    }
  }

  /** A sync sink was entered: the batch this thread kept before has certainly returned from its write. */
  void sinkEntered() {
    Kept k = KEPT_HERE.get();
    if (k != null) {
      k.matured = true;
      KEPT_HERE.remove();
    }
  }

  /** Invariant 5: a kept batch read later throws IllegalStateException or gives the same id. */
  void checkKept(String where) {
    ThreadLocalRandom r = ThreadLocalRandom.current();
    Kept k = r.nextBoolean() ? kept.peekFirst() : kept.peekLast();
    if (k == null) {
      return;
    }
    int i = r.nextInt(k.ids.length);
    Long got;
    try {
      got = r.nextBoolean() ? k.batch.item(i) : k.batch.items().get(i);
    } catch (IllegalStateException expected) {
      return;
    } catch (Throwable t) {
      violation("kept-batch-read-threw", where + ": " + t);
      return;
    }
    if (got == null || got != k.ids[i]) {
      kept.remove(k); // each kept batch is reported once
    }
    if (got == null) {
      violation("kept-batch-read-null", where + ": item(" + i + ") of a kept " + (k.sync ? "sync" : "async")
          + " batch, id " + k.ids[i] + " during its write, now null");
    } else if (got != k.ids[i]) {
      violation("kept-batch-read-another-callers-id", where + ": item(" + i + ") of a kept "
          + (k.sync ? "sync" : "async") + " batch was id " + k.ids[i] + " during its write, now id " + got);
    }
    if (k.matured && r.nextInt(16) == 0) {
      try {
        k.batch.complete(i, REMAINING);
        violation("kept-batch-accepted-an-outcome", where + ": complete(" + i + ") returned normally");
      } catch (IllegalStateException expected) {
        // recording after the write is refused
      }
    }
  }

  // ---------------------------------------------------------------- invariant checks

  void observe(String origin) {
    Batcher<Long, Long> b = batcher;
    if (b != null) {
      checkStats(b.stats(), origin);
    }
  }

  /** Invariant 1 for a live snapshot: counts within accepted, accepted monotonic per thread. */
  void checkStats(BatcherStats s, String origin) {
    if (s.written() + s.failed() + s.abandoned() > s.accepted()) {
      violation("stats-snapshot-written+failed+abandoned>accepted", origin + ": " + s);
    }
    Long prev = lastAccepted.put(Thread.currentThread(), s.accepted());
    if (prev != null && s.accepted() < prev) {
      violation("stats-accepted-decreased", origin + ": accepted " + prev + ", then " + s.accepted());
    }
  }

  void checkReport(CloseReport report, String kind, String origin) {
    if (report == null) {
      violation(kind + "-null", origin);
      return;
    }
    BatcherStats s = report.stats();
    long outcomes = s.written() + s.failed() + s.abandoned();
    // A provisional report (a second close while the first is still under way) is a snapshot: items may be
    // pending. The final report accounts for every accepted item.
    if (kind.startsWith("provisional") ? outcomes > s.accepted() : outcomes != s.accepted()) {
      violation(kind + "-unbalanced" + (kind.startsWith("provisional") ? "" : " [" + mode + "]"
          + (orphanLogged ? " (after a consumer was orphaned)" : "")), origin + ": " + report + " " + s);
    }
  }

  /** Invariant 2 (bounded by {@code deadline}) and 6, once the round has settled. */
  void checkOutcomes(long deadline) {
    for (Submission s : byId.values()) {
      ItemLog log = items.get(s.id);
      int handed;
      int successes;
      if (log == null) {
        handed = 0;
        successes = 0;
      } else {
        synchronized (log) {
          handed = log.attempts.size();
          successes = log.successes;
        }
      }
      if (successes > 1) {
        violation("written-twice", "id " + s.id + " recorded written by " + successes + " attempts");
      }
      if (!s.accepted) {
        if (handed > 0) {
          violation("refused-item-handed-to-sink", "id " + s.id + " (" + s.origin + ")");
        }
        continue;
      }
      if (s.future == null) {
        continue;
      }
      try {
        s.future.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      } catch (TimeoutException e) {
        violation("lost-future", "id " + s.id + " (" + s.origin + ") not done 10 s after close returned; handed to the"
            + " sink " + handed + " time(s), recorded written " + successes);
        continue;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      } catch (ExecutionException | CancellationException failed) {
        // checked below
      }
      Throwable cause = failureOf(s.future);
      if (cause == null) {
        Long v = s.future.getNow(null);
        if (successes == 0) {
          violation("told-written-but-sink-recorded-no-success", "id " + s.id + " (" + s.origin + "), handed " + handed);
        }
        if (v == null || v != s.id && v != REMAINING) {
          violation("wrong-result", "id " + s.id + " completed with " + v);
        }
      } else if (isRejection(cause)) {
        if (handed > 0) {
          violation("told-rejected-but-handed-to-sink", "id " + s.id + ": " + cause);
        }
      } else if (!isUnknown(cause) && successes > 0) {
        violation(cause instanceof BatcherClosedException ? "told-abandoned-but-written"
            : String.valueOf(cause.getMessage()).contains("after completeRemaining")
            ? "told-failed-but-written (a fail() after completeRemaining flipped it)" : "told-failed-but-written",
            "id " + s.id + " (" + s.origin + ") failed with " + cause + ", the sink recorded it written");
      }
    }
  }

  void violation(String kind, String detail) {
    synchronized (kinds) {
      kinds.add(kind);
    }
    tally.record(seed, kind, "round " + index + " [" + description + "]: " + detail);
  }

  // ---------------------------------------------------------------- helpers

  static Throwable unwrap(Throwable e) {
    Throwable t = e;
    while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }

  static Throwable failureOf(CompletableFuture<?> f) {
    if (!f.isDone()) {
      return null;
    }
    try {
      f.getNow(null);
      return null;
    } catch (CancellationException e) {
      return e;
    } catch (CompletionException e) {
      return unwrap(e);
    }
  }

  static boolean isRejection(Throwable t) {
    return t instanceof BatcherFullException || t instanceof BatcherClosedException c && !c.isAbandoned();
  }

  static boolean isUnknown(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
      if (c instanceof BatcherClosedException b && b.isOutcomeUnknown() || c instanceof OutcomeUnknownException) {
        return true;
      }
    }
    return false;
  }

  private static String told(Throwable cause) {
    return cause == null ? "written" : isUnknown(cause) ? "outcome unknown"
        : cause instanceof BatcherClosedException ? "abandoned" : "failed";
  }
}
