package dev.ringbatch.spring.boot;

import dev.ringbatch.Batcher;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

/**
 * Closes batchers against one shutdown budget so that a hung batcher uses up only its own time, while a
 * batcher whose sink feeds another still drains into it before that one closes. Each batcher gets its own
 * thread and a close of {@code own = min(its close-timeout, the budget)}. It begins that close when every
 * newer batcher's close has returned (a batcher whose sink feeds another was created after it), or when only
 * {@code own} (at most half the budget) is left of the budget, whichever comes first: a hung newer batcher delays
 * it, but leaves it its close-timeout, or half the budget when the close-timeout is longer. Called on the thread that stops the context; returns once every close has returned,
 * or the budget and {@link #GRACE} have passed.
 */
final class ParallelCloser {
  /** Beyond the budget: a core close returns within its timeout plus a short hand-over grace (of shards too). */
  static final Duration GRACE = Duration.ofSeconds(1);
  /** The longest budget taken as given (about 73 years): a deadline in nanoTime must not overflow. */
  static final Duration LONGEST = Duration.ofNanos(Long.MAX_VALUE / 4);

  private static final Log LOG = LogFactory.getLog(ParallelCloser.class);

  /** Closes one batcher within {@code timeout} and logs its report. */
  @FunctionalInterface
  interface Close {
    void close(Batcher<?, ?> batcher, Duration timeout);
  }

  private ParallelCloser() {}

  static void closeAll(List<? extends Batcher<?, ?>> newestFirst, Duration anyBudget, Close close) {
    Duration budget = min(anyBudget, LONGEST); // a longer one would overflow the deadline: it waits as long
    long deadline = System.nanoTime() + budget.toNanos();
    List<Thread> closers = new ArrayList<>(newestFirst.size());
    List<CompletableFuture<Void>> closed = new ArrayList<>(newestFirst.size());
    for (Batcher<?, ?> batcher : newestFirst) {
      List<CompletableFuture<Void>> newer = List.copyOf(closed);
      CompletableFuture<Void> done = new CompletableFuture<>();
      closed.add(done);
      Thread closer = new Thread(() -> {
        try {
          Duration own = min(batcher.config().closeTimeout(), budget);
          // Newer closes are awaited until only its own close is left of the budget, and for at least half of
          // the budget: a close-timeout as long as the budget must not cancel the feeding order.
          awaitAll(newer, deadline - Math.min(own.toNanos(), budget.toNanos() / 2));
          close.close(batcher, min(own, Duration.ofNanos(Math.max(0, deadline - System.nanoTime()))));
        } catch (RuntimeException | Error e) {
          LOG.warn("closing ringbatch batcher '" + batcher.name() + "' failed", e);
        } finally {
          done.complete(null);
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

  /** Waits until every close in {@code closes} has returned, or until {@code byNanos}; never throws. */
  private static void awaitAll(List<CompletableFuture<Void>> closes, long byNanos) {
    boolean interrupted = false;
    for (CompletableFuture<Void> close : closes) {
      while (!close.isDone()) {
        long left = byNanos - System.nanoTime();
        if (left <= 0) {
          break;
        }
        try {
          close.get(left, TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
          interrupted = true; // this close goes on all the same; the flag is set again below
        } catch (ExecutionException | TimeoutException e) {
          break; // the newer close is late (it never completes exceptionally): begin this one
        }
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  static Duration min(Duration a, Duration b) {
    return a.compareTo(b) <= 0 ? a : b;
  }
}
