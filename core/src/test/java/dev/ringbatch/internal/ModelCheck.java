package dev.ringbatch.internal;

import java.util.logging.Level;
import java.util.logging.Logger;
import org.jetbrains.lincheck.Lincheck;
import org.jetbrains.lincheck.LincheckSettings;

/**
 * Runs a scenario under Lincheck's model checker ({@code Lincheck.runConcurrentTest}): the block and every
 * thread it starts run under Lincheck's scheduler, which switches threads at each shared-memory access, lock,
 * park/unpark, thread start/join, and explores a different interleaving per invocation; the first exception
 * fails the test with the interleaving that led to it.
 *
 * <p>What the model checker assumes, and every scenario here relies on:
 * <ul>
 *   <li>Sequential consistency: it explores interleavings, not the reorderings the Java memory model allows.
 *       The jcstress module covers those for the same races.</li>
 *   <li>{@code System.nanoTime()} returns a constant, so no deadline ever passes while a scenario runs: a
 *       close with a positive timeout waits for the drain as long as it takes, and a close with
 *       {@link java.time.Duration#ZERO} abandons at once but then waits for the consumer's hand-over without
 *       ever giving up on it ({@code ORPHANED} is out of reach: {@code ModelCheckHandOverTest} covers it).</li>
 *   <li>Every park may wake spuriously, so a timed park is modelled too.</li>
 *   <li>An object reachable only through a lambda's captured variables counts as thread-local (no thread
 *       switches at its accesses). Scenarios therefore keep everything their threads share in fields of the
 *       scenario object, which is shared, and reset those fields at the start of every invocation (Lincheck
 *       runs the same scenario object again and again).</li>
 * </ul>
 *
 * <p>{@code -Dringbatch.modelcheck.factor=N} multiplies every scenario's invocations, for a longer search.
 */
public final class ModelCheck {
  /** Strong reference: JUL keeps loggers weakly, and a collected logger forgets its level. */
  private static final Logger RINGBATCH = Logger.getLogger("dev.ringbatch");
  private static final int FACTOR = Math.max(1, Integer.getInteger("ringbatch.modelcheck.factor", 1));

  private ModelCheck() {}

  /**
   * Loop iterations after which Lincheck takes a loop for a hang, when a scenario runs the real consumer: its
   * bounded spins ({@code CoalescingConsumer.PAUSE_SPINS}; the wait strategy's 256 spins and 8 yields before
   * it parks) touch no shared memory or re-read the same cursor, which the model checker cannot tell from a
   * spin lock, and its default bound of 50 reports them as hangs. A real spin lock still shows up, after this
   * many iterations.
   */
  static final int CONSUMER_LOOP_BOUND = 300;

  /**
   * Explores {@code invocations} interleavings of {@code scenario} (times the factor), with Lincheck's default
   * settings. The batcher's logging is off meanwhile: a log record reads the wall clock and formats through
   * JUL, which the model checker would have to interleave too, and the warnings an abandoning close logs are
   * expected here.
   */
  public static void explore(int invocations, Runnable scenario) {
    Level before = RINGBATCH.getLevel();
    RINGBATCH.setLevel(Level.OFF);
    try {
      Lincheck.runConcurrentTest(invocations * FACTOR, scenario);
    } finally {
      RINGBATCH.setLevel(before);
    }
  }

  /**
   * As {@link #explore}, for scenarios that run the real consumer: loops may run {@link #CONSUMER_LOOP_BOUND}
   * iterations. Lincheck 3.7 takes settings only through this entry point, which Kotlin marks internal (hence
   * the mangled name): it is the one {@code runConcurrentTest} calls, with the defaults but the loop bound.
   */
  public static void exploreWithConsumer(int invocations, Runnable scenario) {
    Level before = RINGBATCH.getLevel();
    RINGBATCH.setLevel(Level.OFF);
    try {
      LincheckSettings settings = new LincheckSettings(true, 10, CONSUMER_LOOP_BOUND, 20);
      Lincheck.runConcurrentTestInternal$lincheck(invocations * FACTOR, settings, scenario);
    } finally {
      RINGBATCH.setLevel(before);
    }
  }

  /** Starts a thread, named for the interleavings Lincheck prints. */
  public static Thread start(String name, Runnable body) {
    Thread thread = new Thread(body, name);
    thread.start();
    return thread;
  }

  /** Joins threads; an interrupt here would be a bug of the scenario itself. */
  public static void join(Thread... threads) {
    for (Thread thread : threads) {
      try {
        thread.join();
      } catch (InterruptedException e) {
        throw new AssertionError("interrupted while joining " + thread.getName(), e);
      }
    }
  }

  /** Fails the invocation (and so the test, with the interleaving) unless {@code ok}. */
  public static void check(boolean ok, String violation) {
    if (!ok) {
      throw new AssertionError(violation);
    }
  }
}
