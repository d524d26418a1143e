package dev.ringbatch;

import java.io.IOException;
import java.util.Random;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The fault every user hook of {@link HookChaosTest} runs on each call: behave, block (park or wait for the
 * close to return) for up to 400 ms, throw (a RuntimeException, an Error, a sneaky checked exception, a
 * CancellationException, an OutcomeUnknownException) or re-enter the batcher. Rates are drawn per round and
 * per hook; one to three "hot" hooks get high rates. A hook called back from inside another hook on the same
 * thread (a re-entrant submit whose weigher runs, say) behaves, so re-entry cannot recurse. Blocking is
 * bounded per thread and round, so a round always ends.
 */
final class HookFault {

  /** FACTORY: the thread factory; INTERRUPT: its thread's {@code interrupt()}, overridden. */
  enum Hook { SINK, STAGE, WEIGHER, TICKER, RETRY_ON, RECORDER, LOG, FACTORY, DEPENDENT, FLUSH_DEPENDENT, INTERRUPT }

  static final long MAX_BLOCK_NANOS = TimeUnit.MILLISECONDS.toNanos(400);
  /** A thread parks in hooks at most this long more than half of the round's time so far. */
  private static final long THREAD_ALLOWANCE_NANOS = TimeUnit.MILLISECONDS.toNanos(400);
  /** A thread parks in hooks at most this long in all after the round's close returned. */
  private static final long AFTER_CLOSE_ALLOWANCE_NANOS = TimeUnit.SECONDS.toNanos(3);

  /** Per thread: the round whose budget it spends, what it parked there, and totals for close timing. */
  static final class ThreadState {
    HookRound round;
    long parkedInRound;
    /** Parked since the round's close returned, in that round. */
    long parkedAfterClose;
    long parkedTotal;
    int flushTimeoutsTotal;
    int depth;
  }

  private static final ThreadLocal<ThreadState> STATE = ThreadLocal.withInitial(ThreadState::new);
  /** Calls per hook over the whole run, so that the summary shows every hook was exercised. */
  static final java.util.concurrent.atomic.AtomicLongArray CALLS = new java.util.concurrent.atomic.AtomicLongArray(
      Hook.values().length);

  private final HookRound round;
  private final double[] block = new double[Hook.values().length];
  private final double[] reenter = new double[Hook.values().length];
  private final double[] toss = new double[Hook.values().length];
  final String hot;

  HookFault(HookRound round, Random rnd) {
    this.round = round;
    for (Hook h : Hook.values()) {
      block[h.ordinal()] = rnd.nextDouble() * 0.03;
      reenter[h.ordinal()] = rnd.nextDouble() * 0.03;
      toss[h.ordinal()] = rnd.nextDouble() * 0.03;
    }
    StringBuilder names = new StringBuilder();
    int x = rnd.nextInt(8); // a quarter of the rounds stall in the ticker; some in the log handler or a flush action
    Hook forced = x < 2 ? Hook.TICKER : x == 2 ? Hook.LOG : x == 3 ? Hook.FLUSH_DEPENDENT : null;
    for (int k = 1 + rnd.nextInt(3); k > 0; k--) {
      Hook h = k == 1 && forced != null ? forced : Hook.values()[rnd.nextInt(Hook.values().length)];
      block[h.ordinal()] = 0.05 + rnd.nextDouble() * 0.4;
      reenter[h.ordinal()] = rnd.nextDouble() * 0.3;
      toss[h.ordinal()] = rnd.nextDouble() * 0.25;
      names.append(names.length() == 0 ? "" : ",").append(h);
    }
    // A dependent action's flush().get() on a closing thread needs some re-entry in every round.
    int d = Hook.DEPENDENT.ordinal();
    reenter[d] = Math.max(reenter[d], rnd.nextDouble() * 0.1);
    // The ticker is read hundreds of times per lingering batch, and one that throws is replaced for good.
    int t = Hook.TICKER.ordinal();
    double scale = round.lingers ? 0.05 : 0.6;
    block[t] *= scale;
    reenter[t] *= scale;
    toss[t] = rnd.nextInt(4) == 0 ? 0.0005 : 0;
    toss[Hook.FACTORY.ordinal()] = Math.min(toss[Hook.FACTORY.ordinal()], 0.08); // a creation failure ends the round
    hot = names.toString();
  }

  static ThreadState state(HookRound round) {
    ThreadState s = STATE.get();
    if (s.round != round) {
      s.round = round;
      s.parkedInRound = 0;
      s.parkedAfterClose = 0;
    }
    return s;
  }

  /** Runs one call's fault for {@code hook}; may throw anything. */
  void strike(Hook hook) {
    ThreadState s = state(round);
    if (s.depth > 0 || round.done) {
      return;
    }
    s.depth++;
    CALLS.incrementAndGet(hook.ordinal());
    round.inHooks.incrementAndGet();
    try {
      round.observe(hook.name());
      ThreadLocalRandom r = ThreadLocalRandom.current();
      double x = r.nextDouble();
      int h = hook.ordinal();
      if (x < block[h]) {
        block(s, r);
      } else if (x < block[h] + reenter[h]) {
        reenter(hook, r);
      } else if (x < block[h] + reenter[h] + toss[h]) {
        throw sneaky(throwable(r));
      }
    } finally {
      round.inHooks.decrementAndGet();
      s.depth--;
    }
  }

  /**
   * Parks up to 400 ms (half the time 250-400 ms, past close timeouts of 0-150 ms and the close's 200 ms grace):
   * either ignoring interrupts (restored after), or waiting for the close to return. A thread parks at most half
   * of the round's time (plus 400 ms), so it keeps going.
   */
  private void block(ThreadState s, ThreadLocalRandom r) {
    long want = r.nextBoolean() ? r.nextLong(MAX_BLOCK_NANOS) : MAX_BLOCK_NANOS - r.nextLong(MAX_BLOCK_NANOS * 3 / 8);
    long allowance = (System.nanoTime() - round.startNanos) / 2 + THREAD_ALLOWANCE_NANOS - s.parkedInRound;
    if (round.closeReturned) {
      // The checks give every future 10 s after close returned: a thread that keeps parking, one callback after
      // another (the close's thread running hundreds of flush dependents), would outlast any such deadline.
      allowance = Math.min(allowance, AFTER_CLOSE_ALLOWANCE_NANOS - s.parkedAfterClose);
    }
    if (want > allowance) {
      return; // behaves this time: long blocks stay long, and rarer
    }
    long nanos = want;
    long start = System.nanoTime();
    if (r.nextBoolean()) {
      boolean interrupted = false;
      for (long left = nanos; left > 0; left = start + nanos - System.nanoTime()) {
        LockSupport.parkNanos(this, left);
        interrupted |= Thread.interrupted();
      }
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    } else {
      try {
        round.closeLatch.await(nanos, TimeUnit.NANOSECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    long took = System.nanoTime() - start;
    if (round.role().equals("closing thread")) {
      round.closingThreadParkNanos.addAndGet(took);
    }
    s.parkedInRound += took;
    if (round.closeReturned) {
      s.parkedAfterClose += took;
    }
    s.parkedTotal += took;
  }

  private void reenter(Hook hook, ThreadLocalRandom r) {
    int x = r.nextInt(100);
    if (hook == Hook.DEPENDENT && x < 40 || hook == Hook.FLUSH_DEPENDENT && x < 20) {
      round.flushAndWait(hook.name());
    } else if (x < 55) {
      round.submit("reentry:" + hook, false);
    } else if (x < 65) {
      round.offer("reentry:" + hook);
    } else if (x < 72) {
      round.submitAndWait("reentry:" + hook);
    } else if (x < 80) {
      round.flushAndWait(hook.name());
    } else if (x < 84) {
      if (round.hookCloses) {
        round.timedClose(java.time.Duration.ofMillis(r.nextInt(101)), "reentry:" + hook);
      }
    } else if (x < 92) {
      round.setRandomLimits("reentry:" + hook);
    } else {
      round.observe("reentry:" + hook);
    }
  }

  static Throwable throwable(Random r) {
    switch (r.nextInt(10)) {
      case 0, 1, 2:
        return new IllegalStateException("hookchaos: runtime [retry]");
      case 3:
        return new AssertionError("hookchaos: error");
      case 4:
        return new StackOverflowError("hookchaos: overflow");
      case 5, 6:
        return new IOException("hookchaos: checked [retry]");
      case 7:
        return new CancellationException("hookchaos: cancelled");
      case 8:
        return new OutcomeUnknownException("hookchaos: outcome unknown", null);
      default:
        return new UnsupportedOperationException("hookchaos: runtime");
    }
  }

  /** Throws any throwable, checked ones included, without declaring it. */
  @SuppressWarnings("unchecked")
  static <E extends Throwable> RuntimeException sneaky(Throwable t) throws E {
    throw (E) t;
  }
}
