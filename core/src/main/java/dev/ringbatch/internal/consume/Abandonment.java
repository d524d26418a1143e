package dev.ringbatch.internal.consume;

import dev.ringbatch.internal.shared.GuardedStatsRecorders;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * The items a close (or a consumer left to clean up after it) fails, gathered before any of them is told. The
 * closing thread first counts them and publishes its report, and only then completes their futures, whose
 * dependent actions are user code: one that calls {@code flush().join()}, {@code close()} or {@code stats()}
 * finds the close finished and its item counted. Not thread-safe: one party gathers and finishes it.
 */
public final class Abandonment {
  /** A caller to tell of {@code cause}; {@code bySink}: a failure the sink recorded, told as a sink failure. */
  record Told(CompletableFuture<Object> future, Throwable cause, boolean bySink) {}

  /** A fire-and-forget item the sink failed: the offer failure handler's to hear. */
  record FailedOffer(Object item, Throwable cause) {}

  final List<Told> told = new ArrayList<>();
  long items;
  private long failedBySink;
  /** Fire-and-forget items among {@link #failedBySink}. */
  final List<FailedOffer> failedOffers = new ArrayList<>();
  /** How long each of {@link #failedBySink} waited for its write, where that was measured. */
  private long[] failedWaits = new long[0];
  private int measuredFailedWaits;
  private final List<String> notes = new ArrayList<>();
  /** Slots claimed but not yet published when gathered: their items, if accepted, fail once published. */
  final List<Long> stragglers = new ArrayList<>();
  private @Nullable Throwable stragglerCause;

  /** One item abandoned with {@code cause}; {@code future} is null for a fire-and-forget item. */
  void add(@Nullable CompletableFuture<Object> future, Throwable cause) {
    items++;
    tell(future, cause, false);
  }

  /**
   * One item that keeps the failure its sink recorded ({@code cause}), taken with its batch by a close: it counts
   * as failed, not abandoned, and a fire-and-forget one ({@code future} null) goes to the offer failure handler.
   */
  void addFailed(Object item, @Nullable CompletableFuture<Object> future, Throwable cause, long waitNanos) {
    failedBySink++;
    if (waitNanos >= 0) {
      if (measuredFailedWaits == failedWaits.length) {
        failedWaits = Arrays.copyOf(failedWaits, Math.max(8, 2 * failedWaits.length));
      }
      failedWaits[measuredFailedWaits++] = waitNanos;
    }
    if (future == null) {
      failedOffers.add(new FailedOffer(item, cause));
    } else {
      tell(future, cause, true);
    }
  }

  private void tell(@Nullable CompletableFuture<Object> future, Throwable cause, boolean sink) {
    if (future != null) {
      told.add(new Told(future, cause, sink));
    }
  }

  /** A line to log once the futures are told (logging is user code too). */
  void note(String message) {
    notes.add(message);
  }

  /**
   * A slot its producer claimed but had not published when the ring was scanned (a producer descheduled between
   * the two): if it publishes an item, that item fails with {@code cause} when it does ({@link StragglerWatch}).
   */
  void straggler(long sequence, Throwable cause) {
    stragglers.add(sequence);
    stragglerCause = cause;
  }

  public List<Long> stragglers() {
    return stragglers;
  }

  @Nullable Throwable stragglerCause() {
    return stragglerCause;
  }

  /** Whether nothing was gathered: nobody to tell, count or watch. */
  public boolean isEmpty() {
    return items == 0 && failedBySink == 0 && told.isEmpty() && failedOffers.isEmpty() && notes.isEmpty()
        && stragglers.isEmpty();
  }

  /** Items abandoned: their callers are told the batcher closed before (or while) they were written. */
  public long items() {
    return items;
  }

  /** Items that keep the failure their sink recorded. */
  long failedBySink() {
    return failedBySink;
  }

  /**
   * Tells the recorders of what was gathered (counted before): the items with a failure their sink recorded as one
   * batch, all failed, with how long they waited for their write; then the abandoned items. User code.
   */
  void record(GuardedStatsRecorders recorders) {
    if (failedBySink > 0) {
      int n = (int) Math.min(Integer.MAX_VALUE, failedBySink);
      if (measuredFailedWaits > 0) {
        long total = 0;
        long max = 0;
        for (int i = 0; i < measuredFailedWaits; i++) {
          total += failedWaits[i];
          max = Math.max(max, failedWaits[i]);
        }
        recorders.recordItemWaits(measuredFailedWaits, total, max);
        if (recorders.timesEachItemWait()) {
          recorders.recordEachItemWait(failedWaits, measuredFailedWaits);
        }
      }
      recorders.recordBatch(n, 0, 0, n);
    }
    if (items > 0) {
      recorders.recordAbandoned(items);
    }
  }

  List<String> notes() {
    return notes;
  }
}
