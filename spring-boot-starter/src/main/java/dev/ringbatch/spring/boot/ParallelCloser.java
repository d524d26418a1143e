package dev.ringbatch.spring.boot;

import dev.ringbatch.Batcher;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

/**
 * Closes batchers in parallel against one shutdown budget, so that a hung batcher uses up only its own time:
 * each gets its own thread and {@code min(its close-timeout, what is left of the budget)}. The closes begin
 * newest first (a batcher whose sink feeds another was created after it), but none waits for another.
 * Called on the thread that stops the context; returns once every close has returned, or the budget and
 * {@link #GRACE} have passed.
 */
final class ParallelCloser {
  /** Beyond the budget: a core close returns within its timeout plus a short hand-over grace (of shards too). */
  static final Duration GRACE = Duration.ofSeconds(1);

  private static final Log LOG = LogFactory.getLog(ParallelCloser.class);

  /** Closes one batcher within {@code timeout} and logs its report. */
  @FunctionalInterface
  interface Close {
    void close(Batcher<?, ?> batcher, Duration timeout);
  }

  private ParallelCloser() {}

  static void closeAll(List<? extends Batcher<?, ?>> newestFirst, Duration budget, Close close) {
    long deadline = System.nanoTime() + budget.toNanos();
    List<Thread> closers = new ArrayList<>(newestFirst.size());
    for (Batcher<?, ?> batcher : newestFirst) {
      Thread closer = new Thread(() -> {
        Duration left = Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
        Duration own = batcher.config().closeTimeout();
        try {
          close.close(batcher, own.compareTo(left) < 0 ? own : left);
        } catch (RuntimeException | Error e) {
          LOG.warn("closing ringbatch batcher '" + batcher.name() + "' failed", e);
        }
      }, "ringbatch-" + batcher.name() + "-shutdown");
      closer.setDaemon(true); // a close that never returns must not keep the JVM alive
      closers.add(closer);
      closer.start();
    }
    boolean interrupted = false;
    long giveUp = deadline + GRACE.toNanos();
    for (int i = 0; i < closers.size(); i++) {
      Thread closer = closers.get(i);
      while (closer.isAlive()) {
        long left = giveUp - System.nanoTime();
        if (left <= 0) {
          LOG.warn("ringbatch batcher '" + newestFirst.get(i).name() + "' did not finish closing within the"
              + " shutdown budget of " + budget + " plus " + GRACE + "; the shutdown goes on without it");
          break;
        }
        try {
          TimeUnit.NANOSECONDS.timedJoin(closer, left);
        } catch (InterruptedException e) {
          interrupted = true; // as a core close: an interrupt does not cut the drain short; set again below
        }
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }
}
