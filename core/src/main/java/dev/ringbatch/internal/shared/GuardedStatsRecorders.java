package dev.ringbatch.internal.shared;

import static java.util.Objects.requireNonNull;

import dev.ringbatch.CloseReport;
import dev.ringbatch.RejectionReason;
import dev.ringbatch.stats.StatsRecorder;
import java.lang.System.Logger.Level;
import java.util.Arrays;
import java.util.function.Consumer;
import java.util.function.Predicate;

/**
 * The registered {@link StatsRecorder}s, each call guarded so that a throwing recorder is logged and never
 * disturbs the batcher. Registration is rare and copies an array; recording a batch, its waits or a rejection reads
 * a volatile array and iterates it, so it allocates nothing. Thread-safe.
 */
public final class GuardedStatsRecorders {
  private static final System.Logger LOG = System.getLogger(GuardedStatsRecorders.class.getName());
  private static final StatsRecorder[] NONE = new StatsRecorder[0];

  private final String batcherName;
  private volatile StatsRecorder[] recorders = NONE;
  /** The recorders that asked for item waits, a subset of {@code recorders} in the same order. */
  private volatile StatsRecorder[] waitRecorders = NONE;
  /** Those of {@link #waitRecorders} that take each item's wait too. */
  private volatile StatsRecorder[] eachWaitRecorders = NONE;

  public GuardedStatsRecorders(String batcherName) {
    this.batcherName = batcherName;
  }

  public synchronized void add(StatsRecorder recorder) {
    requireNonNull(recorder, "recorder");
    StatsRecorder[] current = recorders;
    StatsRecorder[] next = Arrays.copyOf(current, current.length + 1);
    next[current.length] = recorder;
    recorders = next;
    setWaitRecorders(next);
  }

  /** Whether no recorder is added: a close then has none to tell. */
  public boolean isEmpty() {
    return recorders.length == 0;
  }

  /** Whether any recorder asks for {@link #recordItemWaits}; the batcher tells its {@code PublishGate}. */
  public boolean timesItemWaits() {
    return waitRecorders.length != 0;
  }

  /** Asks each recorder once, when the set changes; one that throws counts as no. */
  private void setWaitRecorders(StatsRecorder[] all) {
    StatsRecorder[] asking = asking(all, StatsRecorder::recordsItemWaits, "recordsItemWaits");
    eachWaitRecorders = asking(asking, StatsRecorder::recordsEachItemWait, "recordsEachItemWait");
    waitRecorders = asking;
  }

  private StatsRecorder[] asking(StatsRecorder[] all, Predicate<StatsRecorder> asks, String method) {
    return Arrays.stream(all).filter(recorder -> {
      try {
        return asks.test(recorder);
      } catch (Throwable t) {
        logFailure(recorder, method, t);
        return false;
      }
    }).toArray(StatsRecorder[]::new);
  }

  public synchronized boolean remove(StatsRecorder recorder) {
    java.util.Objects.requireNonNull(recorder, "recorder");
    StatsRecorder[] current = recorders;
    for (int i = 0; i < current.length; i++) {
      if (current[i] == recorder) {
        StatsRecorder[] next = new StatsRecorder[current.length - 1];
        System.arraycopy(current, 0, next, 0, i);
        System.arraycopy(current, i + 1, next, i, current.length - i - 1);
        recorders = next;
        setWaitRecorders(next);
        return true;
      }
    }
    return false;
  }

  public void recordBatch(int size, long weight, long writeNanos, int failed) {
    for (StatsRecorder recorder : recorders) {
      try {
        recorder.recordBatch(size, weight, writeNanos, failed);
      } catch (Throwable t) {
        logFailure(recorder, "recordBatch", t);
      }
    }
  }

  public void recordItemWaits(int items, long totalWaitNanos, long maxWaitNanos) {
    for (StatsRecorder recorder : waitRecorders) {
      try {
        recorder.recordItemWaits(items, totalWaitNanos, maxWaitNanos);
      } catch (Throwable t) {
        logFailure(recorder, "recordItemWaits", t);
      }
    }
  }

  /** Whether any recorder asking for item waits takes each item's wait too. */
  public boolean timesEachItemWait() {
    return eachWaitRecorders.length != 0;
  }

  public void recordEachItemWait(long[] waitNanos, int count) {
    StatsRecorder[] each = eachWaitRecorders;
    // Each recorder after the first gets a copy: one that writes into its array cannot change what others see.
    long[] pristine = each.length > 1 ? Arrays.copyOf(waitNanos, count) : waitNanos;
    for (int i = 0; i < each.length; i++) {
      StatsRecorder recorder = each[i];
      try {
        recorder.recordEachItemWait(i == 0 ? waitNanos : Arrays.copyOf(pristine, count), count);
      } catch (Throwable t) {
        logFailure(recorder, "recordEachItemWait", t);
      }
    }
  }

  public void recordRejected(RejectionReason reason) {
    for (StatsRecorder recorder : recorders) {
      try {
        recorder.recordRejected(reason);
      } catch (Throwable t) {
        logFailure(recorder, "recordRejected", t);
      }
    }
  }

  public void recordAbandoned(long count) {
    each("recordAbandoned", recorder -> recorder.recordAbandoned(count));
  }

  public void recordRetry(int attempt, Throwable cause) {
    each("recordRetry", recorder -> recorder.recordRetry(attempt, cause));
  }

  public void recordClosed(CloseReport report) {
    each("recordClosed", recorder -> recorder.recordClosed(report));
  }

  /** Calls every recorder, guarded; for the calls of a retry or a close only: its lambda may allocate. */
  private void each(String method, Consumer<StatsRecorder> call) {
    for (StatsRecorder recorder : recorders) {
      try {
        call.accept(recorder);
      } catch (Throwable t) {
        logFailure(recorder, method, t);
      }
    }
  }

  /**
   * Logs through {@link SafeLog}: a logging backend is user code too, and a throw from here would escape the
   * guard, after a batch was counted and before its futures were completed.
   */
  private void logFailure(StatsRecorder recorder, String method, Throwable t) {
    SafeLog.log(LOG, Level.WARNING, "StatsRecorder " + describe(recorder) + " of batcher '" + batcherName
        + "' threw from " + method + "; the batcher carries on", t);
  }

  private static String describe(StatsRecorder recorder) {
    try {
      return String.valueOf(recorder);
    } catch (Throwable broken) {
      return recorder.getClass().getName();
    }
  }
}
