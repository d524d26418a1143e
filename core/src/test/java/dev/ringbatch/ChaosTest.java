package dev.ringbatch;

import static org.junit.jupiter.api.Assertions.fail;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Randomized chaos against the public API only. Each round builds a batcher with random limits (items,
 * bytes with random weights, linger, or no linger set: the default, limits that tune themselves), overflow policy
 * and retry policy (some with a retryOn predicate that throws), and a sync or async sink that delays, throws (exceptions and errors), fails single items and
 * completes the rest. Producers (platform threads, and virtual threads on JDK 21+) submit and offer unique
 * ids; some futures get slow or throwing dependent actions, or ones that submit again (or submitAndWait).
 * An agitator interrupts producers (and sometimes the consumer), flushes and changes the limits. At a random
 * moment one or two closers close with a short timeout, sometimes already interrupted; in a fifth of the
 * rounds the close instead waits for the producers and gives the drain 3 s.
 *
 * <p>After each round every promise is checked against what the sink actually wrote: every future completed
 * once; told written means written once; told failed, abandoned or rejected means not written (unless the
 * failure says the outcome is unknown); nothing written twice; the stats add up; the consumer thread is gone
 * and no producer is left blocked; a close that waited for the producers did not stall (not drained while
 * the sink sat idle). Violations are counted by kind with the seeds of the rounds that showed them, and the
 * test fails at the end with a summary. The short run is part of every build.
 * <ul>
 *   <li>{@code -Dringbatch.chaos.rounds=1000} runs a long one (default 100);</li>
 *   <li>{@code -Dringbatch.chaos.seed=N} makes round 0 use seed {@code N} (the seeds of failing rounds are
 *       printed): with {@code -Dringbatch.chaos.rounds=1} it replays that round's configuration (timing
 *       still varies, so a race may need a few runs);</li>
 *   <li>{@code -Dringbatch.chaos.settleMillis=N} bounds the wait for a round to settle (default 10 000).</li>
 * </ul>
 */
@Tag("chaos")
class ChaosTest {
  private static final int ROUNDS = Integer.getInteger("ringbatch.chaos.rounds", 100);
  private static final Long SEED = Long.getLong("ringbatch.chaos.seed");
  private static final long SETTLE_NANOS =
      TimeUnit.MILLISECONDS.toNanos(Long.getLong("ringbatch.chaos.settleMillis", 10_000));
  /** A close must return within its timeout plus this (the documented "short grace", generously). */
  private static final long CLOSE_GRACE_NANOS = TimeUnit.SECONDS.toNanos(5);
  private static final String UNKNOWN_MESSAGE = "may or may not have been written";
  private static final int EXAMPLES_PER_KIND = 3;
  /** A graceful close (after the producers are done) waits this long for the drain. */
  private static final Duration GRACEFUL_CLOSE = Duration.ofSeconds(3);
  /** A graceful close that did not drain, after the sink was idle this long, found the batcher stalled. */
  private static final long STALL_NANOS = TimeUnit.MILLISECONDS.toNanos(500);
  private static final int LISTED_ROUNDS = 40;
  private static final Method NEW_VIRTUAL_EXECUTOR = virtualExecutorFactory();

  /** Holds the library's logger while the test runs (JUL keeps loggers weakly), and counts its records. */
  private static Logger libraryLogger;
  private static final LogCounter LOG_COUNTER = new LogCounter();
  private static boolean previousUseParent;

  // ---------------------------------------------------------------- totals over all rounds

  private final Map<String, LongAdder> violations = new ConcurrentHashMap<>();
  private final Map<String, Set<Long>> violationSeeds = new ConcurrentHashMap<>();
  private final Map<String, List<String>> examples = new ConcurrentHashMap<>();
  /** Per violation kind, per round feature (sink mode, interrupted close, ...): the rounds that showed it. */
  private final Map<String, Map<String, Set<Long>>> violationTags = new ConcurrentHashMap<>();
  /** Per round feature, how many rounds had it. */
  private final Map<String, LongAdder> roundTags = new ConcurrentHashMap<>();
  /** The rounds that showed a violation: seed, description, kinds. */
  private final Map<Long, String> violatingRounds = new ConcurrentHashMap<>();
  private final Map<Long, Set<String>> violatingRoundKinds = new ConcurrentHashMap<>();
  private long totalAttempts;
  private long totalAccepted;
  private long totalWritten;
  private long totalFailed;
  private long totalAbandoned;
  private long totalUnknown;
  private long totalRejected;
  private int virtualRounds;
  private long cleanRoundNanos;
  private int cleanRounds;

  @BeforeAll
  static void quietLibraryLog() {
    // Retries and abandoning closes log a WARNING each; over hundreds of rounds that buries the summary.
    libraryLogger = Logger.getLogger("dev.ringbatch");
    previousUseParent = libraryLogger.getUseParentHandlers();
    libraryLogger.setUseParentHandlers(false);
    libraryLogger.addHandler(LOG_COUNTER);
  }

  @AfterAll
  static void restoreLibraryLog() {
    libraryLogger.removeHandler(LOG_COUNTER);
    libraryLogger.setUseParentHandlers(previousUseParent);
  }

  @Test
  void randomRounds_everyPromiseMatchesWhatTheSinkWrote() {
    long base = SEED != null ? SEED : System.nanoTime() ^ ThreadLocalRandom.current().nextLong();
    long started = System.nanoTime();
    for (int round = 0; round < ROUNDS; round++) {
      long seed = round == 0 ? base : mix(base + round * 0x9E3779B97F4A7C15L);
      Round r = null;
      long roundStart = System.nanoTime();
      try {
        r = new Round(round, seed);
        r.run();
        if (!violatingRounds.containsKey(seed)) {
          cleanRoundNanos += System.nanoTime() - roundStart;
          cleanRounds++;
        }
      } catch (Throwable t) {
        if (r != null) {
          r.violation("round-crashed", t.toString());
        } else {
          record(seed, List.of(), "round-crashed", "round " + round + ": " + t);
        }
      }
    }
    long elapsedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
    long total = violations.values().stream().mapToLong(LongAdder::sum).sum();
    System.out.printf("chaos: %d rounds, %d accepted, %d written, %d failed, %d abandoned, %d unknown,"
            + " violations=%d (%d submissions, %d rejected, %d rounds with virtual producers, %d ms, %d ms per round"
            + " without violations, base seed %d, library log: %s)%n",
        ROUNDS, totalAccepted, totalWritten, totalFailed, totalAbandoned, totalUnknown, total, totalAttempts,
        totalRejected, virtualRounds, elapsedMillis,
        cleanRounds == 0 ? 0 : TimeUnit.NANOSECONDS.toMillis(cleanRoundNanos / cleanRounds), base, LOG_COUNTER);
    if (total > 0) {
      fail(summary(base, total));
    }
  }

  private String summary(long base, long total) {
    StringBuilder s = new StringBuilder();
    s.append("chaos found ").append(total).append(" violation(s) in ").append(ROUNDS).append(" rounds (")
        .append(totalAttempts).append(" submissions, ").append(totalAccepted).append(" accepted); base seed ")
        .append(base).append('\n');
    for (Map.Entry<String, LongAdder> e : new TreeMap<>(violations).entrySet()) {
      Set<Long> seeds = violationSeeds.get(e.getKey());
      s.append("  ").append(e.getKey()).append(": ").append(e.getValue().sum()).append(" in ")
          .append(seeds.size()).append(" round(s), seeds ").append(seeds).append('\n');
      Map<String, Set<Long>> tags = violationTags.getOrDefault(e.getKey(), Map.of());
      s.append("      rounds by feature (of all rounds with it):");
      for (Map.Entry<String, Set<Long>> t : new TreeMap<>(tags).entrySet()) {
        s.append(' ').append(t.getKey()).append('=').append(t.getValue().size()).append('/')
            .append(roundTags.get(t.getKey()).sum());
      }
      s.append('\n');
      for (String example : examples.getOrDefault(e.getKey(), List.of())) {
        s.append("      e.g. ").append(example).append('\n');
      }
    }
    s.append(violatingRounds.size()).append(" violating round(s)")
        .append(violatingRounds.size() > LISTED_ROUNDS ? ", the first " + LISTED_ROUNDS + " by seed" : "")
        .append(":\n");
    violatingRounds.entrySet().stream().sorted(Map.Entry.comparingByKey()).limit(LISTED_ROUNDS)
        .forEach(e -> s.append("  seed ").append(e.getKey()).append(' ')
            .append(violatingRoundKinds.get(e.getKey())).append(' ').append(e.getValue()).append('\n'));
    s.append("replay a round: -Dringbatch.chaos.seed=<seed> -Dringbatch.chaos.rounds=1");
    return s.toString();
  }

  private void record(long seed, List<String> tags, String kind, String example) {
    violations.computeIfAbsent(kind, k -> new LongAdder()).increment();
    violationSeeds.computeIfAbsent(kind, k -> new ConcurrentSkipListSet<>()).add(seed);
    Map<String, Set<Long>> byTag = violationTags.computeIfAbsent(kind, k -> new ConcurrentHashMap<>());
    for (String tag : tags) {
      byTag.computeIfAbsent(tag, k -> new ConcurrentSkipListSet<>()).add(seed);
    }
    List<String> list = examples.computeIfAbsent(kind, k -> new CopyOnWriteArrayList<>());
    if (list.size() < EXAMPLES_PER_KIND) {
      list.add("seed " + seed + ": " + example);
    }
  }

  // ---------------------------------------------------------------- one round

  private enum SinkMode { SYNC, SYNC_WEIGHED, ASYNC }

  /** What a producer did with one id. */
  private static final class Submission {
    final long id;
    final boolean offer;
    final boolean offerAccepted;
    final CompletableFuture<Long> future;
    final CompletableFuture<Long> counted;
    final AtomicInteger completions;

    Submission(long id, boolean offerAccepted) {
      this.id = id;
      this.offer = true;
      this.offerAccepted = offerAccepted;
      this.future = null;
      this.counted = null;
      this.completions = null;
    }

    Submission(long id, CompletableFuture<Long> future) {
      this.id = id;
      this.offer = false;
      this.offerAccepted = false;
      this.future = future;
      this.completions = new AtomicInteger();
      this.counted = future.whenComplete((v, e) -> completions.incrementAndGet());
    }
  }

  private final class Round {
    final int index;
    final long seed;
    final Random rnd;
    WaitCheck waits; // null unless the round measures item waits
    final StringBuilder description = new StringBuilder();
    final List<String> tags = new CopyOnWriteArrayList<>();

    // configuration
    final SinkMode mode;
    final int ringSize;
    final boolean retrying;
    final boolean throwingRetryOn;
    final double pDelay;
    final double pThrow;
    final double pError;
    final double pFailItem;
    final double pCce;
    final long weightSalt;
    final int maxWeight;
    final boolean interruptConsumer;
    final boolean flushes;
    final boolean relimits;
    final boolean nestedSubmits;
    final boolean graceful;
    final AtomicLong lastSinkActivity = new AtomicLong(System.nanoTime());

    // state
    final Map<Long, AtomicInteger> writtenCount = new ConcurrentHashMap<>();
    final AtomicLong batchCounter = new AtomicLong();
    final AtomicLong nextId = new AtomicLong();
    final AtomicLong attempts = new AtomicLong();
    final ConcurrentLinkedQueue<Submission> submissions = new ConcurrentLinkedQueue<>();
    final ConcurrentLinkedQueue<CompletableFuture<Void>> flushFutures = new ConcurrentLinkedQueue<>();
    final List<Thread> producerThreads = new CopyOnWriteArrayList<>();
    final AtomicReference<Thread> consumerThread = new AtomicReference<>();
    volatile boolean stopAgitator;
    ExecutorService asyncExecutor;

    Round(int index, long seed) {
      this.index = index;
      this.seed = seed;
      this.rnd = new Random(seed);
      int m = rnd.nextInt(3);
      mode = m == 0 ? SinkMode.SYNC : m == 1 ? SinkMode.SYNC_WEIGHED : SinkMode.ASYNC;
      ringSize = 1 << (4 + rnd.nextInt(5)); // 16..256
      retrying = rnd.nextInt(3) == 0;
      throwingRetryOn = retrying && rnd.nextBoolean();
      pDelay = rnd.nextDouble() * 0.6;
      pThrow = rnd.nextDouble() * 0.15;
      pError = rnd.nextDouble() * 0.05;
      pFailItem = rnd.nextDouble() * 0.1;
      pCce = throwingRetryOn ? 0.2 + rnd.nextDouble() * 0.5 : 0;
      weightSalt = rnd.nextLong();
      maxWeight = 1 + rnd.nextInt(1000);
      interruptConsumer = rnd.nextInt(5) == 0;
      flushes = rnd.nextInt(3) == 0;
      relimits = rnd.nextInt(4) == 0;
      nestedSubmits = rnd.nextInt(3) == 0;
      graceful = rnd.nextInt(5) == 0;
    }

    void tag(String tag) {
      tags.add(tag);
      roundTags.computeIfAbsent(tag, k -> new LongAdder()).increment();
    }

    void violation(String kind, String detail) {
      record(seed, tags, kind, "round " + index + " [" + description + "]: " + detail);
      violatingRounds.putIfAbsent(seed, "round " + index + " [" + description + "]");
      violatingRoundKinds.computeIfAbsent(seed, k -> new ConcurrentSkipListSet<>()).add(kind);
    }

    long weigh(Long id) {
      long h = mix(id ^ weightSalt);
      return (h >>> 1) % (maxWeight + 1);
    }

    void run() throws Exception {
      int maxBatchSize = 1 + rnd.nextInt(rnd.nextBoolean() ? ringSize : Math.min(ringSize, 8));
      Duration linger = rnd.nextBoolean() ? Duration.ZERO : Duration.ofNanos(rnd.nextInt(3_000_001));
      boolean tuned = linger.isZero() && rnd.nextBoolean(); // no linger set: the default, limits that tune themselves
      boolean block = rnd.nextBoolean();
      BatcherConfig.Builder b = BatcherConfig.builder()
          .ringSize(ringSize)
          .maxBatchSize(maxBatchSize)
          .overflowPolicy(block ? OverflowPolicy.BLOCK : OverflowPolicy.DROP)
          .submitTimeout(Duration.ofMillis(5 + rnd.nextInt(46)))
          .closeTimeout(Duration.ofMillis(rnd.nextInt(21)))
          .threadFactory(consumerFactory());
      if (!tuned) {
        b.linger(linger);
      }
      long maxBatchBytes = BatchLimits.NO_BYTE_LIMIT;
      if (mode == SinkMode.SYNC_WEIGHED && rnd.nextInt(4) != 0) {
        maxBatchBytes = 1 + rnd.nextInt(maxWeight * 8);
        b.maxBatchBytes(maxBatchBytes);
      }
      int inFlight = 1 + rnd.nextInt(4);
      if (mode == SinkMode.ASYNC) {
        b.maxInFlightBatches(inFlight);
      }
      if (retrying) {
        b.retryPolicy(retryPolicy());
      }
      BatcherConfig config = b.build();
      description.append(mode).append(" ring=").append(ringSize).append(" maxBatch=").append(maxBatchSize)
          .append(maxBatchBytes == BatchLimits.NO_BYTE_LIMIT ? "" : " maxBytes=" + maxBatchBytes)
          .append(tuned ? " tuned " : " linger=" + linger.toNanos() / 1000 + "us ")
          .append(block ? "BLOCK/" + config.submitTimeout().toMillis() + "ms" : "DROP")
          .append(mode == SinkMode.ASYNC ? " inFlight=" + inFlight : "")
          .append(retrying ? (throwingRetryOn ? " retry(throwing retryOn)" : " retry") : "")
          .append(interruptConsumer ? " consumer-interrupts" : "")
          .append(flushes ? " flushes" : "")
          .append(relimits ? " setLimits" : "")
          .append(nestedSubmits ? " nested-submits" : "")
          .append(String.format(" p(delay=%.2f throw=%.2f error=%.2f fail=%.2f)", pDelay, pThrow, pError,
              pFailItem));

      tag(mode.toString());
      tag(maxBatchBytes == BatchLimits.NO_BYTE_LIMIT ? "no-byte-limit" : "byte-limit");
      tag(block ? "BLOCK" : "DROP");
      tag(tuned ? "tuned" : linger.isZero() ? "no-linger" : "linger");
      tag(!retrying ? "no-retry" : throwingRetryOn ? "retry-throwing-retryOn" : "retry");
      if (interruptConsumer) {
        tag("consumer-interrupts");
      }
      if (relimits) {
        tag("setLimits");
      }
      if (nestedSubmits) {
        tag("nested-submits");
      }
      if (flushes) {
        tag("flushes");
      }
      tag(graceful ? "graceful-close" : "racing-close");
      Batcher<Long, Long> batcher;
      if (mode == SinkMode.ASYNC) {
        // A dependent action that waits (nested submitAndWait) may hold an executor thread: then a cached pool,
        // so that a stage never waits for a thread the test itself has blocked (that stall would be the test's).
        asyncExecutor = nestedSubmits ? Executors.newCachedThreadPool(daemon("chaos-async-" + index))
            : Executors.newFixedThreadPool(1 + rnd.nextInt(2), daemon("chaos-async-" + index));
        batcher = Batcher.ofAsync("chaos-" + index, config, asyncSink());
      } else if (mode == SinkMode.SYNC_WEIGHED) {
        batcher = Batcher.of("chaos-" + index, config, this::weigh, syncSink());
      } else {
        batcher = Batcher.of("chaos-" + index, config, syncSink());
      }
      if (rnd.nextBoolean()) {
        tag("item-waits");
        waits = new WaitCheck();
        batcher.addStatsRecorder(waits);
      }

      // producers
      int platform = 2 + rnd.nextInt(3);
      int offerers = rnd.nextInt(platform); // the first `offerers` producers mix offer() into submit()
      int virtual = NEW_VIRTUAL_EXECUTOR == null ? 0 : rnd.nextInt(4);
      if (virtual > 0) {
        virtualRounds++;
      }
      description.append(" producers=").append(platform).append(virtual > 0 ? "+" + virtual + "v" : "");
      List<Thread> platformThreads = new ArrayList<>();
      for (int p = 0; p < platform; p++) {
        Thread t = new Thread(producer(batcher, p, p < offerers), "chaos-producer-" + index + "-" + p);
        t.setDaemon(true);
        platformThreads.add(t);
        producerThreads.add(t);
      }
      ExecutorService virtualExecutor = virtual == 0 ? null : (ExecutorService) NEW_VIRTUAL_EXECUTOR.invoke(null);

      // closers: one or two, at a random moment, with a short timeout, sometimes already interrupted
      int closers = rnd.nextInt(4) == 0 ? 2 : 1;
      List<Future<?>> virtualProducers = new ArrayList<>();
      tag(closers == 2 ? "two-closers" : "one-closer");
      boolean anyInterruptedCloser = false;
      long closeDelayNanos = rnd.nextInt(4) == 0 ? 0 : rnd.nextInt(30_000_000);
      List<Thread> closerThreads = new ArrayList<>();
      for (int c = 0; c < closers; c++) {
        boolean interrupted = !graceful && rnd.nextInt(3) == 0;
        anyInterruptedCloser |= interrupted;
        boolean configured = !graceful && rnd.nextInt(4) == 0;
        Duration timeout = graceful ? GRACEFUL_CLOSE
            : configured ? config.closeTimeout() : Duration.ofMillis(rnd.nextInt(21));
        long delay = closeDelayNanos + (c == 0 ? 0 : rnd.nextInt(2_000_000));
        description.append(" close").append(c).append("(").append(timeout.toMillis()).append("ms")
            .append(interrupted ? ",interrupted" : "")
            .append(graceful ? " when producers are done" : " after " + delay / 1_000_000 + "ms").append(")");
        Runnable close = closer(batcher, delay, interrupted, configured, timeout);
        Runnable closeWhenDone = () -> {
          awaitProducers(platformThreads, virtualProducers);
          close.run();
        };
        Thread t = new Thread(graceful ? closeWhenDone : close, "chaos-closer-" + index + "-" + c);
        t.setDaemon(true);
        closerThreads.add(t);
      }
      tag(anyInterruptedCloser ? "interrupted-closer" : "no-interrupted-closer");
      if (virtual > 0) {
        tag("virtual-producers");
      }
      Thread agitator = new Thread(agitator(batcher, new SplittableRandom(seed ^ 0x5DEECE66DL)),
          "chaos-agitator-" + index);
      agitator.setDaemon(true);

      platformThreads.forEach(Thread::start);
      for (int v = 0; v < virtual; v++) {
        virtualProducers.add(virtualExecutor.submit(producer(batcher, platform + v, rnd.nextBoolean())));
      }
      agitator.start();
      closerThreads.forEach(Thread::start);

      // ---- settle: everything below shares one bounded deadline, so a stuck round fails, never hangs
      long deadline = System.nanoTime() + SETTLE_NANOS
          + (graceful ? TimeUnit.SECONDS.toNanos(10) + GRACEFUL_CLOSE.toNanos() : 0);
      for (Thread closer : closerThreads) {
        closer.join(remainingMillis(deadline));
        if (closer.isAlive()) {
          violation("close-hung", closer.getName() + " still in close(): " + top(closer));
        }
      }
      stopAgitator = true;
      agitator.join(remainingMillis(deadline));
      for (Thread t : platformThreads) {
        t.join(remainingMillis(deadline));
        if (t.isAlive()) {
          violation("producer-stuck", t.getName() + " still blocked after close: " + top(t));
        }
      }
      for (Future<?> f : virtualProducers) {
        try {
          f.get(remainingMillis(deadline), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
          violation("producer-stuck", "a virtual producer still blocked after close");
        } catch (ExecutionException e) {
          violation("producer-crashed", String.valueOf(e.getCause()));
        }
      }
      Thread consumer = consumerThread.get();
      boolean consumerGone = true;
      try {
        Awaitility.await().atMost(Duration.ofMillis(Math.min(10_000, remainingMillis(deadline))))
            .pollInterval(Duration.ofMillis(1)).until(() -> !consumer.isAlive());
      } catch (ConditionTimeoutException e) {
        consumerGone = false;
        violation("consumer-thread-alive", "the consumer thread outlived close(): " + top(consumer));
      }
      boolean executorGone = true;
      if (asyncExecutor != null) {
        asyncExecutor.shutdown();
        if (!asyncExecutor.awaitTermination(remainingMillis(deadline), TimeUnit.MILLISECONDS)) {
          executorGone = false;
          violation("async-executor-stuck", "the async sink's executor did not finish");
        }
      }
      // Once closers, producers, the consumer and the async executor are all gone, only a close's helper threads
      // (callers' and flushes' callbacks, normally done when it returns; later after a stall of the machine) may
      // still complete a future: a bounded grace then, instead of the rest of the deadline, keeps a lost future
      // cheap.
      boolean actorsGone = consumerGone && executorGone && closerThreads.stream().noneMatch(Thread::isAlive)
          && platformThreads.stream().noneMatch(Thread::isAlive) && !agitator.isAlive()
          && virtualProducers.stream().allMatch(Future::isDone);
      long futureDeadline = actorsGone ? Math.min(deadline, System.nanoTime() + TimeUnit.SECONDS.toNanos(10))
          : deadline;
      for (Submission s : submissions) {
        if (!s.offer) {
          try {
            s.counted.get(remainingMillis(futureDeadline), TimeUnit.MILLISECONDS);
          } catch (TimeoutException e) {
            // reported below as a future that never completed
          } catch (ExecutionException expected) {
            // a failed future: checked below
          }
        }
      }
      for (CompletableFuture<Void> flush : flushFutures) {
        try {
          flush.get(remainingMillis(futureDeadline), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
          violation("flush-never-completed", "a flush() future did not complete after close");
        } catch (ExecutionException e) {
          if (!(e.getCause() instanceof BatcherClosedException)) {
            violation("flush-failed-oddly", String.valueOf(e.getCause()));
          }
        }
      }
      check(batcher);
      if (violatingRounds.containsKey(seed)) {
        System.out.println("chaos: violating round " + index + " seed " + seed + " " + violatingRoundKinds.get(seed)
            + " tags " + tags + " [" + description + "]");
      }

      // cleanup whatever a defect left behind
      for (Thread t : producerThreads) {
        t.interrupt();
      }
      if (virtualExecutor != null) {
        virtualExecutor.shutdownNow();
      }
      if (asyncExecutor != null) {
        asyncExecutor.shutdownNow();
      }
    }

    /** Measures item waits from the start, checking each report; every recorded batch's items are measured. */
    final class WaitCheck implements dev.ringbatch.stats.StatsRecorder {
      final LongAdder measured = new LongAdder();
      final LongAdder inBatches = new LongAdder();

      @Override
      public boolean recordsItemWaits() {
        return true;
      }

      @Override
      public void recordItemWaits(int items, long totalWaitNanos, long maxWaitNanos) {
        if (items <= 0 || totalWaitNanos < 0 || maxWaitNanos < 0 || totalWaitNanos > (long) items * maxWaitNanos) {
          violation("item-waits-inconsistent", items + " items, total " + totalWaitNanos + ", max " + maxWaitNanos);
        }
        measured.add(items);
      }

      @Override
      public void recordBatch(int size, long weight, long writeNanos, int failed) {
        inBatches.add(size);
      }
    }

    private void checkWaits() {
      if (waits != null && waits.measured.sum() != waits.inBatches.sum()) {
        violation("item-waits-not-every-item", "measured " + waits.measured.sum() + " of "
            + waits.inBatches.sum() + " items in recorded batches");
      }
    }

    private void check(Batcher<Long, Long> batcher) {
      checkWaits();
      BatcherStats stats = batcher.stats();
      long told = 0;
      long rejected = 0;
      long unknown = 0;
      for (Submission s : submissions) {
        AtomicInteger w = writtenCount.get(s.id);
        int written = w == null ? 0 : w.get();
        if (written > 1) {
          violation("written-twice", "id " + s.id + " written " + written + " times");
        }
        if (s.offer) {
          if (!s.offerAccepted) {
            rejected++;
            if (written != 0) {
              violation("rejected-offer-written", "id " + s.id + ": offer() returned false, the sink wrote it");
            }
          }
          continue;
        }
        if (!s.future.isDone()) {
          violation("future-never-completed", "id " + s.id + " (sink wrote it " + written + " times)");
          continue;
        }
        if (!s.counted.isDone() || s.completions.get() != 1) {
          violation("future-completions-not-1", "id " + s.id + " completions " + s.completions.get());
        }
        Throwable failure = failureOf(s.future);
        if (failure == null) {
          told++;
          if (written != 1) {
            violation("told-written-but-not-written", "id " + s.id + " succeeded, the sink wrote it " + written
                + " times");
          }
          Long value = s.future.getNow(null);
          if (value == null || value != s.id) {
            violation("wrong-result", "id " + s.id + " completed with " + value);
          }
        } else if (failure instanceof BatcherFullException
            || failure instanceof BatcherClosedException && !((BatcherClosedException) failure).isAbandoned()) {
          rejected++;
          if (written != 0) {
            violation("rejected-but-written", "id " + s.id + " rejected with " + failure + ", the sink wrote it");
          }
        } else if (outcomeUnknown(failure)) {
          unknown++;
        } else if (written != 0) {
          boolean abandoned = failure instanceof BatcherClosedException;
          violation(abandoned ? "told-abandoned-but-written" : "told-failed-but-written",
              "id " + s.id + " failed with " + failure + ", the sink wrote it " + written + " time(s)");
        }
      }
      long accounted = stats.written() + stats.failed() + stats.abandoned();
      if (stats.accepted() != accounted) {
        violation("stats-accepted-not-accounted", "accepted " + stats.accepted() + " != written " + stats.written()
            + " + failed " + stats.failed() + " + abandoned " + stats.abandoned() + " (" + stats + ")");
      }
      if (stats.submitted() != attempts.get()) {
        violation("stats-submitted", "stats submitted " + stats.submitted() + ", producers tried " + attempts.get());
      }
      if (stats.rejected() != rejected) {
        violation("stats-rejected", "stats rejected " + stats.rejected() + ", callers told " + rejected);
      }
      long sinkWrites = writtenCount.values().stream().mapToLong(AtomicInteger::get).sum();
      if (stats.written() > sinkWrites) {
        violation("stats-written-exceeds-sink", "stats written " + stats.written() + ", sink wrote " + sinkWrites);
      }
      if (told > stats.written()) {
        violation("told-written-exceeds-stats", "futures succeeded " + told + ", stats written " + stats.written());
      }
      synchronized (ChaosTest.this) {
        totalAttempts += attempts.get();
        totalAccepted += stats.accepted();
        totalWritten += stats.written();
        totalFailed += stats.failed();
        totalAbandoned += stats.abandoned();
        totalUnknown += unknown;
        totalRejected += rejected;
      }
    }

    // ---------------------------------------------------------------- actors

    private ThreadFactory consumerFactory() {
      return runnable -> {
        boolean consumer = runnable.getClass().getSimpleName().equals("CoalescingConsumer"); // not the close helper
        Thread t = new Thread(runnable, "chaos-" + (consumer ? "consumer-" : "close-") + index);
        t.setDaemon(true);
        if (consumer) {
          consumerThread.set(t);
        }
        return t;
      };
    }

    private RetryPolicy retryPolicy() {
      long initial = rnd.nextInt(1_000_001); // 0-1 ms
      RetryPolicy.Builder r = RetryPolicy.builder()
          .maxAttempts(2 + rnd.nextInt(3))
          .initialBackoff(Duration.ofNanos(initial))
          .maxBackoff(Duration.ofNanos(initial + rnd.nextInt(2_000_001)))
          .jitter(rnd.nextDouble() * 0.5)
          .maxElapsed(Duration.ofMillis(1 + rnd.nextInt(50)));
      if (throwingRetryOn) {
        r.retryOn(e -> {
          String message = String.valueOf(e.getMessage());
          if (message.contains("[cce]")) {
            throw new ClassCastException("chaos: retryOn predicate threw for " + e);
          }
          return !message.contains("[final]");
        });
      }
      return r.build();
    }

    /** The failure a sink call throws, or null: a RuntimeException (some flagged for the retry predicate) or an Error. */
    private Throwable drawFailure(SplittableRandom r) {
      double x = r.nextDouble();
      if (x < pThrow) {
        String tag = r.nextDouble() < pCce ? " [cce]" : r.nextInt(4) == 0 ? " [final]" : "";
        return new IllegalStateException("chaos: batch failure" + tag);
      }
      if (x < pThrow + pError) {
        return new AssertionError("chaos: sink error");
      }
      return null;
    }

    private BatchSink<Long, Long> syncSink() {
      return batch -> {
        lastSinkActivity.set(System.nanoTime());
        SplittableRandom r = new SplittableRandom(seed ^ mix(batchCounter.incrementAndGet()));
        int n = batch.size();
        long[] ids = new long[n];
        for (int i = 0; i < n; i++) {
          ids[i] = batch.item(i);
        }
        if (r.nextDouble() < pDelay) {
          LockSupport.parkNanos(r.nextLong(2_000_001)); // simulated work
        }
        Throwable failure = drawFailure(r);
        boolean failLate = r.nextBoolean(); // after recording outcomes: they must all be discarded
        if (failure != null && !failLate) {
          throw sneaky(failure);
        }
        boolean[] completed = new boolean[n];
        for (int i = 0; i < n; i++) {
          if (r.nextDouble() < pFailItem) {
            batch.fail(i, new IllegalArgumentException("chaos: item failure"));
          } else {
            batch.complete(i, ids[i]);
            completed[i] = true;
          }
        }
        if (failure != null) {
          throw sneaky(failure);
        }
        // this attempt returns normally: only now are its completed items written
        for (int i = 0; i < n; i++) {
          if (completed[i]) {
            writtenCount.computeIfAbsent(ids[i], k -> new AtomicInteger()).incrementAndGet();
          }
        }
      };
    }

    private AsyncBatchSink<Long, Long> asyncSink() {
      return batch -> {
        lastSinkActivity.set(System.nanoTime());
        SplittableRandom r = new SplittableRandom(seed ^ mix(batchCounter.incrementAndGet()));
        int n = batch.size();
        long[] ids = new long[n];
        for (int i = 0; i < n; i++) {
          ids[i] = batch.item(i);
        }
        if (r.nextDouble() < pThrow / 3) {
          throw new IllegalStateException("chaos: async write threw");
        }
        CompletableFuture<Void> stage = new CompletableFuture<>();
        boolean delay = r.nextDouble() < pDelay;
        long delayNanos = r.nextLong(2_000_001);
        Throwable failure = drawFailure(r);
        double pFail = pFailItem;
        long itemSeed = r.nextLong();
        Runnable work = () -> {
          try {
            if (delay) {
              LockSupport.parkNanos(delayNanos); // simulated work
            }
            lastSinkActivity.set(System.nanoTime());
            SplittableRandom items = new SplittableRandom(itemSeed);
            boolean[] completed = new boolean[n];
            for (int i = 0; i < n; i++) {
              if (items.nextDouble() < pFail) {
                batch.fail(i, new IllegalArgumentException("chaos: item failure"));
              } else {
                batch.complete(i, ids[i]);
                completed[i] = true;
              }
            }
            if (failure != null) {
              stage.completeExceptionally(failure);
              return;
            }
            // the stage completes normally: only now are its completed items written
            for (int i = 0; i < n; i++) {
              if (completed[i]) {
                writtenCount.computeIfAbsent(ids[i], k -> new AtomicInteger()).incrementAndGet();
              }
            }
            stage.complete(null);
          } catch (Throwable t) { // e.g. the batch was taken over by an abandoning close
            stage.completeExceptionally(t);
          }
        };
        if (r.nextInt(8) == 0) {
          work.run(); // completed before write returns
        } else {
          try {
            asyncExecutor.execute(work);
          } catch (RejectedExecutionException e) {
            stage.completeExceptionally(e);
          }
        }
        return stage;
      };
    }

    private Runnable producer(Batcher<Long, Long> batcher, int p, boolean offers) {
      return () -> {
        producerThreads.add(Thread.currentThread()); // virtual threads register here; duplicates are harmless
        SplittableRandom r = new SplittableRandom(seed * 31 + p);
        int items = 20 + r.nextInt(p < 4 ? 600 : 200);
        boolean stopWhenClosed = r.nextBoolean();
        for (int s = 0; s < items; s++) {
          long id = nextId.getAndIncrement();
          attempts.incrementAndGet();
          if (offers && r.nextInt(3) == 0) {
            try {
              submissions.add(new Submission(id, batcher.offer(id)));
            } catch (Throwable t) {
              violation("offer-threw", "id " + id + ": " + t);
            }
          } else {
            CompletableFuture<Long> f;
            try {
              f = batcher.submit(id);
            } catch (Throwable t) {
              violation("submit-threw", "id " + id + ": " + t);
              continue;
            }
            submissions.add(new Submission(id, f));
            int d = r.nextInt(25);
            if (d == 0) {
              f.thenRun(() -> LockSupport.parkNanos(20_000 + ThreadLocalRandom.current().nextInt(200_000)));
            } else if (d == 1) {
              f.thenRun(() -> {
                throw new IllegalStateException("chaos: dependent action threw");
              });
            } else if (d == 2) {
              f.whenComplete((v, e) -> {
                throw new AssertionError("chaos: dependent action error");
              });
            } else if (d == 3 && nestedSubmits) {
              // a dependent action submits again, on whichever thread completed f (the consumer, the async
              // sink's executor, a closer or this producer): accepted while there is room, else refused
              if (r.nextBoolean()) {
                f.whenComplete((v, e) -> nestedSubmit(batcher));
              } else {
                f.whenComplete((v, e) -> nestedSubmitAndWait(batcher));
              }
            }
            Throwable rejection = f.isDone() ? failureOf(f) : null;
            if (rejection instanceof BatcherFullException full && full.reason() == RejectionReason.INTERRUPTED) {
              Thread.interrupted(); // told; carry on as a caller that handled it would
            }
            if (stopWhenClosed && rejection instanceof BatcherClosedException) {
              break;
            }
          }
          if (r.nextInt(8) == 0) {
            Thread.interrupted(); // a stray interrupt is sometimes cleared, sometimes left for the next submit
          }
          if (r.nextInt(32) == 0) {
            LockSupport.parkNanos(r.nextInt(300_000));
          }
        }
        Thread.interrupted();
      };
    }

    /** The graceful closer waits for the producers (bounded; a stuck one is reported by the round). */
    private void awaitProducers(List<Thread> platformThreads, List<Future<?>> virtualProducers) {
      long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      try {
        for (Thread t : platformThreads) {
          t.join(remainingMillis(until));
        }
        for (Future<?> f : virtualProducers) {
          try {
            f.get(remainingMillis(until), TimeUnit.MILLISECONDS);
          } catch (ExecutionException | TimeoutException e) {
            // reported by the round
          }
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    /**
     * A dependent action waits for a new item of its own: on the async sink's executor, on a closer or on a
     * producer (never on the consumer thread, where submitAndWait is documented to throw).
     */
    private void nestedSubmitAndWait(Batcher<Long, Long> batcher) {
      if (Thread.currentThread() == consumerThread.get()) {
        return;
      }
      long id = nextId.getAndIncrement();
      attempts.incrementAndGet();
      CompletableFuture<Long> result = new CompletableFuture<>();
      submissions.add(new Submission(id, result));
      try {
        result.complete(batcher.submitAndWait(id));
      } catch (BatchWriteException e) {
        result.completeExceptionally(e.getCause());
      } catch (InterruptedException e) {
        if (e.getCause() instanceof BatcherFullException) {
          result.completeExceptionally(e.getCause()); // refused while waiting for room
        } else {
          result.completeExceptionally(new ChaosOutcomeUnknown("interrupted while waiting for the result", e));
        }
        Thread.currentThread().interrupt();
      } catch (Throwable t) {
        result.completeExceptionally(t);
      }
    }

    private void nestedSubmit(Batcher<Long, Long> batcher) {
      long id = nextId.getAndIncrement();
      attempts.incrementAndGet();
      try {
        submissions.add(new Submission(id, batcher.submit(id)));
      } catch (Throwable t) {
        violation("submit-threw", "nested id " + id + ": " + t);
      }
    }

    private Runnable closer(Batcher<Long, Long> batcher, long delayNanos, boolean interrupted, boolean configured,
        Duration timeout) {
      return () -> {
        if (delayNanos > 0) {
          LockSupport.parkNanos(delayNanos);
        }
        if (interrupted) {
          Thread.currentThread().interrupt();
        }
        long start = System.nanoTime();
        try {
          if (configured) {
            batcher.close();
          } else {
            CloseReport report = batcher.close(timeout);
            if (report == null) {
              violation("close-returned-null", "close(" + timeout + ")");
            } else if (graceful && !report.drained()) {
              long idle = System.nanoTime() - lastSinkActivity.get();
              if (idle > STALL_NANOS) {
                violation("close-stalled", "a close(" + timeout.toMillis() + " ms) after the producers were done"
                    + " did not drain, and the sink had not been called for " + TimeUnit.NANOSECONDS.toMillis(idle)
                    + " ms: " + report);
              }
            }
          }
        } catch (Throwable t) {
          violation("close-threw", t.toString());
        }
        long took = System.nanoTime() - start;
        if (took > timeout.toNanos() + CLOSE_GRACE_NANOS) {
          violation("close-overran", "close(" + timeout.toMillis() + " ms) took "
              + TimeUnit.NANOSECONDS.toMillis(took) + " ms");
        }
        if (!batcher.isClosed()) {
          violation("not-closed-after-close", "isClosed() false after close returned");
        }
        Thread.interrupted();
      };
    }

    private Runnable agitator(Batcher<Long, Long> batcher, SplittableRandom r) {
      return () -> {
        while (!stopAgitator) {
          LockSupport.parkNanos(300_000 + r.nextInt(3_000_000));
          int x = r.nextInt(10);
          if (x < 3 && !producerThreads.isEmpty()) {
            producerThreads.get(r.nextInt(producerThreads.size())).interrupt();
          } else if (x == 3 && interruptConsumer) {
            Thread consumer = consumerThread.get();
            if (consumer != null) {
              consumer.interrupt(); // stray: only close() may stop the consumer
            }
          } else if (x == 4 && flushes) {
            flushFutures.add(batcher.flush());
          } else if (x == 5 && relimits) {
            int size = 1 + r.nextInt(r.nextBoolean() ? ringSize : Math.min(ringSize, 8));
            long bytes = mode == SinkMode.SYNC_WEIGHED && r.nextBoolean()
                ? 1 + r.nextInt(maxWeight * 8) : BatchLimits.NO_BYTE_LIMIT;
            Duration linger = r.nextBoolean() ? Duration.ZERO : Duration.ofNanos(r.nextInt(3_000_001));
            try {
              batcher.setLimits(BatchLimits.of(size, bytes, linger));
            } catch (Throwable t) {
              violation("setLimits-threw", t.toString());
            }
          }
        }
      };
    }
  }

  // ---------------------------------------------------------------- helpers

  /** The test's own "we cannot know": a submitAndWait interrupted while it waited for an accepted item. */
  private static final class ChaosOutcomeUnknown extends RuntimeException {
    private static final long serialVersionUID = 1L;

    ChaosOutcomeUnknown(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /** Whether the failure says the item may or may not have been written (or, forward-compatibly, names it so). */
  static boolean outcomeUnknown(Throwable failure) {
    Throwable t = failure;
    for (int depth = 0; t != null && depth < 16; depth++) {
      if (t instanceof BatcherClosedException && t.getMessage() != null
          && t.getMessage().contains(UNKNOWN_MESSAGE)) {
        return true;
      }
      if (t.getClass().getSimpleName().contains("OutcomeUnknown")) {
        return true;
      }
      t = t.getCause() == t ? null : t.getCause();
    }
    return false;
  }

  /** The exception a completed future failed with, unwrapped; null if it succeeded or is not done. */
  static Throwable failureOf(CompletableFuture<?> future) {
    if (!future.isDone()) {
      return null;
    }
    try {
      future.getNow(null);
      return null;
    } catch (CompletionException e) {
      Throwable cause = e.getCause() == null ? e : e.getCause();
      while ((cause instanceof CompletionException || cause instanceof ExecutionException)
          && cause.getCause() != null) {
        cause = cause.getCause();
      }
      return cause;
    } catch (java.util.concurrent.CancellationException e) {
      return e;
    }
  }

  private static long remainingMillis(long deadline) {
    return Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
  }

  private static String top(Thread t) {
    StackTraceElement[] trace = t.getStackTrace();
    StringBuilder s = new StringBuilder(t.getState().toString());
    for (int i = 0; i < Math.min(6, trace.length); i++) {
      s.append(" <- ").append(trace[i]);
    }
    return s.toString();
  }

  private static ThreadFactory daemon(String name) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, name + "-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }

  private static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  @SuppressWarnings("unchecked")
  private static <E extends Throwable> RuntimeException sneaky(Throwable t) throws E {
    throw (E) t;
  }

  private static Method virtualExecutorFactory() {
    try {
      return Executors.class.getMethod("newVirtualThreadPerTaskExecutor"); // JDK 21+
    } catch (NoSuchMethodException onJdk17) {
      return null;
    }
  }

  /** Counts the library's log records by level and keeps the first few errors for the summary line. */
  private static final class LogCounter extends Handler {
    private final Map<String, LongAdder> byLevel = new ConcurrentHashMap<>();
    private final List<String> firstErrors = new CopyOnWriteArrayList<>();

    @Override
    public void publish(LogRecord record) {
      byLevel.computeIfAbsent(record.getLevel().getName(), k -> new LongAdder()).increment();
      if (record.getLevel().intValue() >= Level.SEVERE.intValue() && firstErrors.size() < 3) {
        firstErrors.add(record.getMessage() + (record.getThrown() == null ? "" : " (" + record.getThrown() + ")"));
      }
    }

    @Override
    public void flush() {}

    @Override
    public void close() {}

    @Override
    public String toString() {
      Map<String, Long> counts = new TreeMap<>();
      byLevel.forEach((k, v) -> counts.put(k, v.sum()));
      return counts + (firstErrors.isEmpty() ? "" : " first errors " + firstErrors);
    }
  }
}
