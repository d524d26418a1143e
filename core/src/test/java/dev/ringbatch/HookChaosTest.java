package dev.ringbatch;

import static org.junit.jupiter.api.Assertions.fail;

import dev.ringbatch.HookFault.Hook;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Randomized chaos in which every user hook misbehaves, against the public API only. Each round builds a sync,
 * weighed, async or sharded batcher (small ring, random limits, linger sometimes, BLOCK or DROP, retries
 * sometimes) whose hooks, at random per call, behave, block for up to 400 ms (past the close timeouts of
 * 0-150 ms), throw (RuntimeException, Error, a sneaky IOException, CancellationException,
 * OutcomeUnknownException) or re-enter the batcher (submit, offer, submitAndWait, flush().get(2 s), close,
 * setLimits, stats): the sinks ({@link HookSinks}), the async stage, the {@link Weigher}, the {@link Ticker},
 * the retry predicate, every {@code StatsRecorder} method, a JUL handler on logger {@code dev.ringbatch}, the
 * thread factory and its threads' {@code interrupt()}, and dependent actions of item and flush futures (see {@link HookFault}). Producers submit
 * and offer unique ids; an agitator interrupts producers and the consumer, flushes and changes limits; one or
 * two closers (sometimes interrupted) close at a random moment; in some rounds the batcher is closed once idle.
 *
 * <p>Invariants are checked wherever something is observed ({@link HookRound}): stats snapshots balance and
 * accepted never decreases on a thread; close reports balance; every future completes; the sink is never
 * called after close returned; no item is handed twice (a retry only of items the failed attempt recorded
 * nothing for); a kept Batch never shows another id; what callers were told matches what the sink recorded;
 * close returns within its timeout + 3 s; a future's own dependent action sees its item counted; once settled,
 * each stats category holds what its callers were told ({@link StatsAgainstCallers}); an idle
 * batcher's close drains; the consumer thread ends within 5 s. Violations are counted by kind with seeds, and
 * the test fails at the end with a summary.
 * <ul>
 *   <li>{@code -Dringbatch.hookchaos.rounds=N} (default 60);</li>
 *   <li>{@code -Dringbatch.hookchaos.seed=S}: round 0 uses seed S (violating rounds print theirs); with
 *       {@code rounds=1} it replays that round's configuration (timing still varies);</li>
 *   <li>{@code -Dringbatch.hookchaos.lostMillis=N}: how long after close returned a future may still be pending
 *       (default 10 000).</li>
 * </ul>
 */
@Tag("chaos")
class HookChaosTest {
  private static final int ROUNDS = Integer.getInteger("ringbatch.hookchaos.rounds", 60);
  private static final Long SEED = Long.getLong("ringbatch.hookchaos.seed");
  private static final long LOST_NANOS =
      TimeUnit.MILLISECONDS.toNanos(Long.getLong("ringbatch.hookchaos.lostMillis", 10_000));
  private static final long CONSUMER_GONE_NANOS = TimeUnit.SECONDS.toNanos(5);
  /** The close's grace for a consumer to hand over once its timeout passed (CloseProtocol's 200 ms). */
  private static final Duration IDLE_HAND_OVER_GRACE = Duration.ofMillis(200);

  /** The round whose hooks the log handler runs; null between rounds. */
  private static volatile HookRound current;
  private static Logger libraryLogger;
  private static Logger adaptiveLogger;
  private static java.util.logging.Level previousAdaptiveLevel;
  private static boolean previousUseParent;
  private static PrintStream previousErr;
  private static final LongAdder LOG_FAILURES = new LongAdder();
  private static final Handler HANDLER = new Handler() {
    @Override
    public void publish(LogRecord record) {
      HookRound r = current;
      if (r != null) {
        if (String.valueOf(record.getMessage()).contains("did not hand over")) {
          r.orphanLogged = true;
        }
        r.fault.strike(Hook.LOG);
      }
    }

    @Override
    public void flush() {}

    @Override
    public void close() {}
  };

  private final Tally tally = new Tally();
  private int creationFailures;
  private long submissions;

  @BeforeAll
  static void installHandler() {
    previousErr = System.err; // a throwing handler makes the library print each failed log line: count them
    System.setErr(new PrintStream(previousErr, true) {
      @Override
      public void println(String x) {
        if (x != null && x.startsWith("ringbatch: could not log")) {
          LOG_FAILURES.increment();
        } else {
          super.println(x);
        }
      }
    });
    libraryLogger = Logger.getLogger("dev.ringbatch"); // held: JUL keeps loggers weakly
    previousUseParent = libraryLogger.getUseParentHandlers();
    libraryLogger.setUseParentHandlers(false);
    libraryLogger.addHandler(HANDLER);
    adaptiveLogger = Logger.getLogger("dev.ringbatch.internal.pacing.AdaptiveLimits"); // its DEBUG lines: a hook too
    previousAdaptiveLevel = adaptiveLogger.getLevel();
    adaptiveLogger.setLevel(java.util.logging.Level.ALL);
    libraryLogger.setLevel(java.util.logging.Level.ALL);
  }

  @AfterAll
  static void removeHandler() {
    System.setErr(previousErr);
    libraryLogger.removeHandler(HANDLER);
    libraryLogger.setUseParentHandlers(previousUseParent);
    libraryLogger.setLevel(null);
    adaptiveLogger.setLevel(previousAdaptiveLevel);
  }

  @Test
  void everyHookMisbehaving_invariantsHoldAtEveryObservation() throws InterruptedException {
    long base = SEED != null ? SEED : System.nanoTime() ^ ThreadLocalRandom.current().nextLong();
    long started = System.nanoTime();
    for (int i = 0; i < ROUNDS; i++) {
      long seed = i == 0 ? base : mix(base + i * 0x9E3779B97F4A7C15L);
      HookRound round = new HookRound(i, seed, tally);
      try {
        run(round);
      } catch (Throwable t) {
        round.violation("round-crashed", t.toString());
      } finally {
        Batcher<Long, Long> b = round.batcher;
        if (b != null && b.closeReport() == null) { // a close that never finished: do not leak the consumer
          Thread cleanup = thread("hookchaos-cleanup-" + i, () -> b.close(Duration.ZERO));
          cleanup.start();
          cleanup.join(2_000);
        }
        round.done = true;
        current = null;
        round.waitingThreads.forEach(Thread::interrupt);
        round.stagePool.shutdownNow();
      }
      tally.rounds++;
      if (!round.kinds.isEmpty()) {
        System.out.println("hookchaos: round " + i + " seed " + seed + " " + round.kinds + " [" + round.description + "]");
      }
    }
    long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
    System.out.printf("hookchaos: %d rounds in %d ms, %d submissions, %d batchers not created (a throwing thread"
        + " factory), %d log records the handler failed, base seed %d%n", ROUNDS, millis, submissions,
        creationFailures, LOG_FAILURES.sum(), base);
    StringBuilder calls = new StringBuilder("hookchaos: hook calls");
    for (Hook hook : Hook.values()) {
      calls.append(' ').append(hook).append('=').append(HookFault.CALLS.get(hook.ordinal()));
    }
    System.out.println(calls);
    if (!tally.counts.isEmpty()) {
      fail(tally.summary(base));
    }
  }

  private void run(HookRound r) throws Exception {
    current = r;
    BatcherConfig config = r.config();
    Batcher<Long, Long> batcher;
    try {
      batcher = r.create(config);
    } catch (Throwable creationFailed) {
      creationFailures++;
      r.description.append(" creation failed with ").append(creationFailed);
      awaitConsumersGone(r, System.nanoTime(), "consumer-thread-alive-5s-after-failed-creation");
      return;
    }
    r.batcher = batcher;
    if (!r.useFactory) {
      r.findConsumerThreads();
    }
    if (r.rnd.nextInt(5) != 0) {
      batcher.addStatsRecorder(r.recorder(r.rnd.nextBoolean()));
    }

    int producers = 2 + r.rnd.nextInt(3);
    int perProducer = 20 + r.rnd.nextInt(200);
    boolean idleClose = r.rnd.nextInt(7) == 0;
    // a third of the closes come once the producers are done, when the consumer is idle
    int trigger = r.rnd.nextInt(3) == 0 ? producers * perProducer : r.rnd.nextInt(producers * perProducer * 2 / 3 + 1);
    List<CountDownLatch> triggers = List.of(new CountDownLatch(trigger), new CountDownLatch(trigger + r.rnd.nextInt(40)));
    AtomicInteger running = new AtomicInteger(producers);
    List<Thread> producerThreads = new ArrayList<>();
    for (int p = 0; p < producers; p++) {
      producerThreads.add(thread("hookchaos-producer-" + r.index + "-" + p,
          producer(r, batcher, p, perProducer, p % 2 == 1, triggers, running)));
    }
    Thread agitator = thread("hookchaos-agitator-" + r.index, agitator(r, batcher, producerThreads));
    boolean spin = r.rnd.nextBoolean(); // a busy observer catches snapshots torn by a thread switch
    Thread observer = thread("hookchaos-observer-" + r.index, () -> {
      for (int n = 0; !r.stopActors; n++) {
        r.observe("observer");
        if (!spin || (n & 63) == 0) {
          r.checkKept("observer");
        }
        if (spin) {
          Thread.onSpinWait();
        } else {
          LockSupport.parkNanos(20_000 + ThreadLocalRandom.current().nextInt(200_000));
        }
      }
    });
    List<Thread> closers = new ArrayList<>();
    if (idleClose) {
      r.description.append(" idle-close");
    } else {
      int count = r.rnd.nextInt(4) == 0 ? 2 : 1;
      for (int c = 0; c < count; c++) {
        Duration timeout = Duration.ofMillis(r.rnd.nextInt(5) < 2 ? r.rnd.nextInt(11) : r.rnd.nextInt(151));
        boolean interrupted = r.rnd.nextInt(3) == 0;
        r.description.append(" close").append(c).append('(').append(timeout.toMillis()).append("ms")
            .append(interrupted ? ",interrupted" : "").append(" after ").append(triggers.get(c).getCount()).append(')');
        closers.add(thread("hookchaos-closer-" + r.index + "-" + c, closer(r, triggers.get(c), timeout, interrupted)));
      }
    }
    r.description.append(" producers=").append(producers).append('x').append(perProducer)
        .append(spin ? " busy-observer" : "");
    r.startHolding(); // not before: the setup above waits on this thread, and no close would release a stage
    producerThreads.forEach(Thread::start);
    agitator.start();
    observer.start();
    closers.forEach(Thread::start);

    if (idleClose) {
      join(producerThreads, System.nanoTime() + TimeUnit.SECONDS.toNanos(10));
      r.stopActors = true;
      agitator.join(2_000);
      closeIdle(r, batcher);
    } else {
      long bound = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      for (Thread closer : closers) {
        closer.join(remainingMillis(bound));
        if (closer.isAlive()) {
          r.violation("close-never-returned", closer.getName() + ": " + top(closer));
        }
      }
    }
    r.stopActors = true;
    r.stopHolding();
    long base = r.closeReturned ? r.closeReturnedNanos : System.nanoTime();
    agitator.join(2_000);
    join(producerThreads, base + LOST_NANOS);
    for (Thread t : producerThreads) {
      if (t.isAlive()) {
        r.violation(r.waitingThreads.contains(t) ? "submitAndWait-in-hook-never-returned" : "producer-stuck", top(t));
        t.interrupt();
      }
    }
    awaitConsumersGone(r, base, "consumer-thread-alive-5s-after-close");
    r.checkOutcomes(base + LOST_NANOS); // waits for each future up to the deadline
    for (CompletableFuture<Void> flush : r.flushes) {
      try {
        flush.get(remainingMillis(base + LOST_NANOS), TimeUnit.MILLISECONDS);
      } catch (TimeoutException e) {
        r.violation("flush-never-completed", "a flush() future not done 10 s after close returned");
      } catch (ExecutionException e) {
        if (!(e.getCause() instanceof BatcherClosedException)) {
          r.violation("flush-failed-oddly", String.valueOf(e.getCause()));
        }
      }
    }
    observer.join(2_000);
    BatcherStats end = batcher.stats();
    if (end.accepted() != end.written() + end.failed() + end.abandoned()) {
      r.violation("final-stats-unbalanced", "after the round settled: " + end);
    }
    if (r.byId.values().stream().allMatch(s -> s.future == null || s.future.isDone())) {
      StatsAgainstCallers.check(r, end);
    }
    submissions += r.nextId.get();
  }

  /** Closes a batcher whose producers are done and whose futures all completed: the close must drain. */
  private void closeIdle(HookRound r, Batcher<Long, Long> batcher) {
    r.stopHolding();
    try {
      batcher.flush().get(5, TimeUnit.SECONDS);
    } catch (Exception e) {
      // a flush that never completes shows up as a pending future or flush below
    }
    boolean idle;
    try {
      Awaitility.await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(1)).until(() -> {
        BatcherStats s = batcher.stats();
        return r.inHooks.get() == 0 && s.accepted() == s.written() + s.failed() + s.abandoned()
            && r.byId.values().stream().allMatch(x -> x.future == null || x.future.isDone());
      });
      idle = true;
    } catch (ConditionTimeoutException e) {
      idle = false;
    }
    Duration timeout = r.rnd.nextInt(5) < 3 ? Duration.ZERO : Duration.ofMillis(100 + r.rnd.nextInt(51));
    idle &= !batcher.isClosed(); // a hook may have closed it already
    CloseReport report = r.timedClose(timeout, "idle closer");
    // An idle consumer hands over within the close's 200 ms grace past its timeout; only a close that took that
    // long (a consumer stalled by the machine) may report not drained.
    if (idle && report != null && !report.drained()
        && report.elapsed().compareTo(timeout.plus(IDLE_HAND_OVER_GRACE)) < 0) {
      r.violation(timeout.isZero() ? "idle-close(0)-not-drained" : "idle-close(100-150ms)-not-drained",
          "close(" + timeout.toMillis() + " ms) of an idle batcher with every item settled: " + report);
    }
  }

  private static Runnable producer(HookRound r, Batcher<Long, Long> batcher, int p, int count, boolean offers,
      List<CountDownLatch> triggers, AtomicInteger running) {
    return () -> {
      SplittableRandom q = new SplittableRandom(r.seed * 31 + p);
      int afterClose = 0;
      for (int s = 0; s < count && !r.done; s++) {
        if (offers && q.nextInt(3) == 0) {
          r.offer("producer");
        } else {
          CompletableFuture<Long> f = r.submit("producer", true);
          if (f != null && HookRound.failureOf(f) instanceof BatcherFullException full
              && full.reason() == RejectionReason.INTERRUPTED) {
            Thread.interrupted(); // told; carry on
          }
        }
        triggers.forEach(CountDownLatch::countDown);
        if (batcher.isClosed() && ++afterClose > 10) {
          break;
        }
        if (q.nextInt(8) == 0) {
          Thread.interrupted();
        }
      }
      if (running.decrementAndGet() == 0) { // nothing more will count down: let the closers go
        triggers.forEach(t -> {
          while (t.getCount() > 0) {
            t.countDown();
          }
        });
      }
      Thread.interrupted();
    };
  }

  private static Runnable agitator(HookRound r, Batcher<Long, Long> batcher, List<Thread> producers) {
    return () -> {
      SplittableRandom q = new SplittableRandom(r.seed ^ 0x5DEECE66DL);
      while (!r.stopActors) {
        LockSupport.parkNanos(200_000 + q.nextInt(2_000_000)); // pacing, not synchronisation
        int x = q.nextInt(20);
        if (x < 5) {
          producers.get(q.nextInt(producers.size())).interrupt();
        } else if (x < 8 && r.interruptConsumer) {
          r.consumerThreads.forEach(Thread::interrupt);
        } else if (x < 10) {
          CompletableFuture<Void> f = batcher.flush();
          r.flushes.add(f);
          f.whenComplete((v, e) -> r.fault.strike(Hook.FLUSH_DEPENDENT));
        } else if (x < 11) {
          r.setRandomLimits("agitator");
        } else if (x < 13) {
          r.checkKept("agitator");
        }
      }
    };
  }

  private static Runnable closer(HookRound r, CountDownLatch trigger, Duration timeout, boolean interrupted) {
    return () -> {
      try {
        trigger.await(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        // close anyway
      }
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
      r.timedClose(timeout, Thread.currentThread().getName() + (interrupted ? " (interrupted)" : ""));
      Thread.interrupted();
    };
  }

  /** Invariant 9: every consumer thread has ended within 5 s of the close returning. */
  private static void awaitConsumersGone(HookRound r, long closeReturned, String kind) throws InterruptedException {
    for (Thread t : r.consumerThreads) {
      t.join(remainingMillis(closeReturned + CONSUMER_GONE_NANOS));
      if (t.isAlive()) {
        r.violation(kind, t.getName() + ": " + top(t));
      }
    }
  }

  private static void join(List<Thread> threads, long deadline) throws InterruptedException {
    for (Thread t : threads) {
      t.join(remainingMillis(deadline));
    }
  }

  private static Thread thread(String name, Runnable body) {
    Thread t = new Thread(body, name);
    t.setDaemon(true);
    return t;
  }

  private static long remainingMillis(long deadline) {
    return Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
  }

  private static String top(Thread t) {
    StringBuilder s = new StringBuilder(t.getState().toString());
    StackTraceElement[] trace = t.getStackTrace();
    for (int i = 0; i < Math.min(8, trace.length); i++) {
      s.append(" <- ").append(trace[i]);
    }
    return s.toString();
  }

  private static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  /** Violations over all rounds: count, seeds and a few examples per kind. */
  static final class Tally {
    private static final int EXAMPLES = 3;
    final Map<String, LongAdder> counts = new ConcurrentHashMap<>();
    private final Map<String, Set<Long>> seeds = new ConcurrentHashMap<>();
    private final Map<String, List<String>> examples = new ConcurrentHashMap<>();
    int rounds;

    void record(long seed, String kind, String detail) {
      counts.computeIfAbsent(kind, k -> new LongAdder()).increment();
      seeds.computeIfAbsent(kind, k -> new ConcurrentSkipListSet<>()).add(seed);
      List<String> list = examples.computeIfAbsent(kind, k -> new CopyOnWriteArrayList<>());
      if (list.size() < EXAMPLES && list.stream().noneMatch(e -> e.startsWith("seed " + seed + ":"))) {
        list.add("seed " + seed + ": " + detail);
      }
    }

    String summary(long base) {
      StringBuilder s = new StringBuilder("hook chaos found ").append(counts.size()).append(" kind(s) of violation in ")
          .append(rounds).append(" rounds (base seed ").append(base).append("):\n");
      for (Map.Entry<String, LongAdder> e : new TreeMap<>(counts).entrySet()) {
        Set<Long> in = seeds.get(e.getKey());
        s.append("  ").append(e.getKey()).append(": ").append(e.getValue().sum()).append(" in ").append(in.size())
            .append('/').append(rounds).append(" rounds, seeds ")
            .append(in.stream().limit(5).map(String::valueOf).reduce((a, b) -> a + ", " + b).orElse(""))
            .append(in.size() > 5 ? ", ..." : "").append('\n');
        for (String example : examples.get(e.getKey())) {
          s.append("      e.g. ").append(example).append('\n');
        }
      }
      return s.append("replay a round: -Dringbatch.hookchaos.seed=<seed> -Dringbatch.hookchaos.rounds=1").toString();
    }
  }
}
