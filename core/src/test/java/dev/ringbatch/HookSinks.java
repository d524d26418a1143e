package dev.ringbatch;

import dev.ringbatch.HookFault.Hook;
import dev.ringbatch.HookRound.Attempt;
import java.io.IOException;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BiConsumer;

/**
 * The sinks of {@link HookChaosTest}: a sync {@link BatchSink} and an {@link AsyncBatchSink} that record, per
 * attempt and item id, what they were handed and what outcome they recorded (complete, fail, fail with
 * {@link OutcomeUnknownException}, {@code completeRemaining}, nothing), run the sink hook's fault before and
 * after recording, sometimes throw after recording, and keep some of their {@link Batch}es for later reads.
 * The async sink completes its stage on the consumer thread, on another thread, twice (a stage that runs its
 * callback twice) or only once the close has returned.
 */
final class HookSinks {
  private final HookRound round;

  HookSinks(HookRound round) {
    this.round = round;
  }

  BatchSink<Long, Long> sync() {
    return batch -> {
      boolean late = round.closeReturned; // first: a write that starts after close returned sees it set
      long[] ids = ids(batch);
      Attempt attempt = round.beginAttempt(ids, late);
      round.sinkEntered();
      round.checkKept("sync sink");
      ThreadLocalRandom r = ThreadLocalRandom.current();
      try {
        round.fault.strike(Hook.SINK);
        record(batch, ids, attempt, r);
        round.fault.strike(Hook.SINK); // a throw now fails the batch whatever was recorded
        if (r.nextDouble() < round.pSinkThrow) {
          throw HookFault.sneaky(failure(r));
        }
      } catch (Throwable t) {
        round.ended(attempt, HookRound.THREW);
        round.keep(batch, ids, true);
        throw HookFault.sneaky(t);
      }
      round.ended(attempt, HookRound.RETURNED);
      round.keep(batch, ids, true);
    };
  }

  AsyncBatchSink<Long, Long> async() {
    return batch -> {
      boolean late = round.closeReturned;
      long[] ids = ids(batch);
      Attempt attempt = round.beginAttempt(ids, late);
      round.checkKept("async sink");
      try {
        round.fault.strike(Hook.SINK);
      } catch (Throwable t) {
        round.ended(attempt, HookRound.THREW);
        throw HookFault.sneaky(t);
      }
      ThreadLocalRandom r = ThreadLocalRandom.current();
      CompletableFuture<Void> stage = r.nextInt(6) == 0 ? new TwiceStage() : new CompletableFuture<>();
      Runnable finish = () -> finish(batch, ids, attempt, stage);
      int x = r.nextInt(100);
      if (x < 15) {
        finish.run(); // complete before write returns
      } else if (x < 15 + round.holdPercent && round.hold(finish)) {
        return stage; // completed only once the close returned
      } else {
        long delay = r.nextLong(3_000_000);
        try {
          round.stagePool.execute(() -> {
            LockSupport.parkNanos(delay); // simulated I/O
            finish.run();
          });
        } catch (RejectedExecutionException e) {
          finish.run();
        }
      }
      return stage;
    };
  }

  /** Records outcomes and completes the stage, on whichever thread; the stage thread's own hook may misbehave. */
  private void finish(Batch<Long, Long> batch, long[] ids, Attempt attempt, CompletableFuture<Void> stage) {
    HookRound.STAGE_THREAD.set(Boolean.TRUE);
    ThreadLocalRandom r = ThreadLocalRandom.current();
    try {
      round.fault.strike(Hook.STAGE);
      record(batch, ids, attempt, r);
      round.fault.strike(Hook.STAGE);
      if (r.nextDouble() < round.pSinkThrow) {
        round.ended(attempt, HookRound.THREW); // before: the batch's futures complete inside the call
        stage.completeExceptionally(failure(r));
      } else {
        round.ended(attempt, HookRound.RETURNED);
        stage.complete(null);
      }
    } catch (Throwable t) {
      round.ended(attempt, HookRound.THREW);
      stage.completeExceptionally(t);
    } finally {
      HookRound.STAGE_THREAD.set(Boolean.FALSE);
      round.keep(batch, ids, false);
    }
  }

  private static long[] ids(Batch<Long, Long> batch) {
    long[] ids = new long[batch.size()];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = batch.item(i);
    }
    return ids;
  }

  /**
   * Records an outcome per item in one of a few styles: complete each; fail some and completeRemaining the
   * rest (sometimes failing one more after that, which must throw); leave some without an outcome. Items
   * fail singly, some with OutcomeUnknownException. A batch that refuses recording was taken over by a close.
   */
  private void record(Batch<Long, Long> batch, long[] ids, Attempt attempt, ThreadLocalRandom r) {
    int style = r.nextInt(10);
    boolean remaining = style >= 5 && style != 8;
    int n = ids.length;
    try {
      for (int i = 0; i < n; i++) {
        double x = r.nextDouble();
        if (x < round.pUnknown) {
          batch.fail(i, new OutcomeUnknownException("hookchaos: the item's outcome is unknown", null));
          attempt.set(i, HookRound.UNKNOWN);
        } else if (x < round.pUnknown + round.pFail) {
          batch.fail(i, new IllegalArgumentException("hookchaos: item failed"));
          attempt.set(i, HookRound.FAIL);
        } else if (!remaining && (style != 8 || r.nextInt(8) != 0)) {
          batch.complete(i, ids[i]);
          attempt.set(i, HookRound.SUCCESS);
        }
      }
      if (remaining) {
        batch.completeRemaining(HookRound.REMAINING);
        int j = r.nextInt(n);
        boolean wasRemaining = attempt.setRemaining(j);
        if (style == 9 && wasRemaining) {
          try {
            batch.fail(j, new IllegalArgumentException("hookchaos: failed after completeRemaining"));
            round.violation("fail-after-completeRemaining-accepted", "fail(" + j + ") of a batch of " + n
                + " returned normally after completeRemaining had recorded it written (id " + ids[j] + ")");
          } catch (IllegalStateException expected) {
            // it already had an outcome
          }
        }
      }
    } catch (IllegalStateException notWriting) {
      attempt.refused = true; // a close took the batch over
    }
  }

  private static Throwable failure(ThreadLocalRandom r) {
    int x = r.nextInt(10);
    if (x < 5) {
      return new IllegalStateException("hookchaos: batch failed [retry]");
    } else if (x < 7) {
      return new IOException("hookchaos: batch I/O failed [retry]");
    } else if (x < 8) {
      return new CancellationException("hookchaos: batch cancelled");
    }
    return HookFault.throwable(r);
  }

  /** A stage whose {@code whenComplete} runs its action twice: a stage that fires more than once. */
  static final class TwiceStage extends CompletableFuture<Void> {
    @Override
    public CompletableFuture<Void> whenComplete(BiConsumer<? super Void, ? super Throwable> action) {
      super.whenComplete(action);
      return super.whenComplete(action);
    }
  }
}
