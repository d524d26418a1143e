package dev.ringbatch.internal.consume;

import dev.ringbatch.internal.pacing.AdaptiveLimits;
import dev.ringbatch.internal.ring.SubmissionSlot;
import dev.ringbatch.internal.shared.GuardedStatsRecorders;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * The storage of one batch: its items, their futures (null for fire-and-forget items), the outcomes the sink
 * records, and the batch's settle state. Reused: the consumer fills it, a writer hands it to the sink through a
 * fresh {@link BatchView} per attempt, and whoever settles it ({@link BatchCompleter}) completes the futures
 * and clears it. The arrays grow on demand up to the ring size; the steady state allocates nothing but the view.
 *
 * <h2>Who touches it</h2>
 * Items are added by the consumer thread only, while the batch is {@link #FILLING}. Outcomes are recorded by
 * the sink through a view, on any thread, only while that view's generation is current and recording is open;
 * both checks and the writes happen under this object's monitor, and so does {@link #seal()}, so no late or
 * stale call can reach another batch's outcomes. Reads through a view are checked against the same generation
 * after the read (as {@code StampedLock} validates an optimistic read), and {@link #clear()} moves the
 * generation before the storage is reused, so a kept view never returns another caller's item. {@code state}
 * decides, by CAS, the one party that settles a batch: the consumer (or a completing thread) or an abandoning
 * close.
 *
 * <h2>Recorded outcomes are final</h2>
 * A failure the sink recorded for an item (one by one, or {@code OutcomeUnknownException}) stays that item's
 * outcome whatever happens next: a retry after the sink threw opens a view of the other items only, and a
 * batch that fails whole fails only the items without a recorded failure with its exception. Recorded
 * successes are voided by a throw (a sink may record per-row results and then fail to commit them).
 */
public final class PendingBatch<T, R> {
  /** Being filled by the consumer; an abandoning close that took over fails it as never written. */
  public static final int FILLING = 0;
  /** Inside the sink; a close that takes over fails it with "outcome unknown". */
  static final int IN_SINK = 1;
  /** A sync attempt failed and the consumer waits to retry; a close fails it as not written. */
  static final int BACKING_OFF = 2;
  /** Won by the party completing its futures. */
  public static final int SETTLING = 3;

  /** What a stale or late view is told: its write returned, its stage completed, or a close abandoned it. */
  static final String NOT_WRITING = "the batch is no longer being written; record outcomes inside write()";
  /** What a read through a stale view is told: the storage holds another attempt or another batch now. */
  static final String NOT_READING = "the batch is no longer being written; read its items inside write()"
      + " (for an async sink, before its stage completes)";

  static final byte NONE = 0;
  static final byte SUCCEEDED = 1;
  static final byte FAILED = 2;

  private final int maxCapacity;
  public final AtomicInteger state = new AtomicInteger(FILLING);
  private Object[] items;
  private @Nullable CompletableFuture<Object>[] futures;
  private @Nullable Object[] outcomes;
  private byte[] states;
  /** Each item's weight: a retry's view weighs only the items it holds. */
  private long[] weights;
  private int size;
  private long weight;
  private long firstSequence = -1;
  /** Item waits, kept only while a recorder measures them: consumer thread, then read by the settler. */
  private final BatchWaits waits = new BatchWaits();
  /**
   * The generation of the view that may read and record: written under {@code this} (open, clear), read
   * without the lock after an optimistic item read. Recording also needs {@code recording}, guarded by {@code this}.
   */
  private volatile int generation;
  private boolean recording;
  /** Whether a view was opened since the last clear: a retry views only the items without a recorded failure. */
  private boolean opened;
  /** The storage index of each item of the current view, or null when the view is the whole batch. */
  private int @Nullable [] viewIndices;
  private int viewSize;
  private long viewWeight;
  /** Outcomes recorded one by one, and how many of them failed; guarded by {@code this}. */
  private int recorded;
  private int failedRecorded;
  /** Set by {@code completeRemaining}: every item without an outcome succeeded with {@code remainingResult}. */
  private boolean remainingSucceeded;
  private @Nullable Object remainingResult;
  /** The last failure of a sync attempt, for the message of a close that abandons the batch while it backs off. */
  volatile @Nullable Throwable lastAttemptFailure;
  /**
   * The failure of the first sync attempt whose outcome is unknown (it may have written the items): whatever a
   * later attempt does short of succeeding, the items' outcome stays unknown.
   */
  volatile @Nullable Throwable unknownAttemptFailure;

  public PendingBatch(int initialCapacity, int maxCapacity) {
    this.maxCapacity = maxCapacity;
    int capacity = Math.max(1, Math.min(initialCapacity, maxCapacity));
    this.items = new Object[capacity];
    this.futures = newFutureArray(capacity);
    this.outcomes = new Object[capacity];
    this.states = new byte[capacity];
    this.weights = new long[capacity];
  }

  @SuppressWarnings("unchecked")
  private static @Nullable CompletableFuture<Object>[] newFutureArray(int capacity) {
    return (CompletableFuture<Object>[]) new CompletableFuture<?>[capacity];
  }

  /** Adds the item read from ring slot {@code sequence}. Consumer thread, while {@link #FILLING}. */
  public void add(Object item, @Nullable CompletableFuture<Object> future, long itemWeight, long sequence, long stamp) {
    if (size == items.length) {
      grow();
    }
    if (size == 0) {
      firstSequence = sequence;
    }
    items[size] = item;
    futures[size] = future;
    weights[size] = itemWeight;
    size++;
    weight += itemWeight;
    if (stamp != SubmissionSlot.NOT_STAMPED) {
      waits.stamp(stamp, size - 1);
    }
  }

  /** The items' publish stamps and how long they waited for the write: see {@link BatchWaits}. */
  BatchWaits waits() {
    return waits;
  }

  /** Copies the items' publish stamps for the adaptive limits; returns how many. Consumer thread. */
  public int copyStamps(AdaptiveLimits into) {
    return waits.copyStamps(into);
  }

  private void grow() {
    int capacity = Math.min(maxCapacity, items.length * 2);
    if (capacity <= items.length) {
      throw new IllegalStateException("batch of " + size + " items cannot grow past " + maxCapacity);
    }
    items = Arrays.copyOf(items, capacity);
    futures = Arrays.copyOf(futures, capacity);
    outcomes = Arrays.copyOf(outcomes, capacity);
    states = Arrays.copyOf(states, capacity);
    weights = Arrays.copyOf(weights, capacity);
  }

  int size() {
    return size;
  }

  boolean isEmpty() {
    return size == 0;
  }

  long weight() {
    return weight;
  }

  /** The ring sequence of the first item, or -1 when empty. */
  long firstSequence() {
    return size == 0 ? -1 : firstSequence;
  }

  Object item(int index) {
    return items[index];
  }

  @Nullable CompletableFuture<Object> future(int index) {
    return futures[index];
  }

  byte outcomeState(int index) {
    return states[index];
  }

  @Nullable Object outcome(int index) {
    return outcomes[index];
  }

  /**
   * Records every outcome at once for a sink without a view of its own ({@link ListSink}): every item of
   * {@code view} failed with {@code misfit} when the sink returned results that do not fit; else succeeded with
   * {@code null} when {@code results} is null, else view item {@code i} with {@code results[i]} (copied from the
   * sink's list outside this lock: reading it is user code). Consumer thread, right after the sink returned: the sink never saw a way to record.
   */
  synchronized void recordAll(BatchView<T, R> view, @Nullable Object[] results, @Nullable Throwable misfit) {
    checkRecording(view.generation());
    if (misfit != null) { // the sink returned, so it may have written them: a recorded failure, never retried
      Throwable unknown = unknownAttemptFailure;
      Throwable failure = unknown == null ? misfit : UnknownOutcomes.afterUnknownAttempt(unknown, misfit);
      for (int i = 0; i < viewSize; i++) {
        int index = storageIndex(i);
        if (states[index] == NONE) {
          states[index] = FAILED;
          outcomes[index] = failure;
          recorded++;
          failedRecorded++;
        }
      }
      return;
    }
    if (results == null) {
      remainingSucceeded = true;
      remainingResult = null;
      return;
    }
    for (int i = 0; i < viewSize; i++) {
      int index = storageIndex(i);
      states[index] = SUCCEEDED;
      outcomes[index] = results[i];
    }
    recorded += viewSize;
  }

  /**
   * Ends an attempt: the view of {@code viewGeneration} records nothing from now on (a sync sink's write
   * returned or threw; an async sink's stage completed). A stale call, for an older view, changes nothing.
   */
  synchronized void endAttempt(int viewGeneration) {
    if (viewGeneration == generation) {
      recording = false;
    }
  }

  /**
   * Opens recording for a new attempt and returns the view the sink gets: earlier views, and any kept from
   * earlier batches, fail loudly from now on. A retry's view holds only the items without a recorded failure;
   * successes recorded by the failed attempt are forgotten (the throw voided them).
   *
   * The first view counts the batch in {@code counters} as handed to the sink: under this lock, which a close takes
   * to gather the batch, so that a close's report counts it exactly when the sink got it.
   *
   * @return the view, or null if the batch is not {@link #IN_SINK} (a close took it since its writer moved it
   *     there: the sink must not see it) or no item is left to retry
   */
  synchronized @Nullable BatchView<T, R> open(String batcherName, ConsumerCounters counters) {
    if (state.get() != IN_SINK) {
      return null;
    }
    generation++;
    if (opened) {
      keepRecordedFailuresOnly();
      if (viewSize == 0) {
        recording = false;
        return null;
      }
    } else {
      viewIndices = null;
      viewSize = size;
      viewWeight = weight;
      counters.recordHandOver(size);
    }
    recording = true;
    opened = true;
    return new BatchView<>(this, generation, batcherName, viewSize, viewWeight);
  }

  /** Before a retry: forgets recorded successes, keeps recorded failures, and views the rest. */
  private void keepRecordedFailuresOnly() {
    int[] indices = new int[size]; // allocated only on a retry
    int kept = 0;
    int failures = 0;
    long keptWeight = 0;
    for (int i = 0; i < size; i++) {
      if (states[i] == FAILED) {
        failures++;
      } else {
        states[i] = NONE;
        outcomes[i] = null;
        indices[kept++] = i;
        keptWeight += weights[i];
      }
    }
    recorded = failures;
    failedRecorded = failures;
    remainingSucceeded = false;
    remainingResult = null;
    viewIndices = failures == 0 ? null : indices;
    viewSize = kept;
    viewWeight = keptWeight;
  }

  /** Whether some item has no recorded failure: only those may be handed to the sink again. */
  synchronized boolean anyWithoutRecordedFailure() {
    return failedRecorded < size;
  }

  /** The storage index of item {@code viewIndex} of the current view. */
  int storageIndex(int viewIndex) {
    int[] indices = viewIndices;
    return indices == null ? viewIndex : indices[viewIndex];
  }

  /**
   * The item at {@code viewIndex} of the view of {@code viewGeneration}, read without the lock and then
   * validated: throws if the storage moved on to another attempt or another batch meanwhile.
   */
  Object readItem(int viewGeneration, int viewIndex) {
    if (viewGeneration != generation) {
      throw new IllegalStateException(NOT_READING);
    }
    Object item = items[storageIndex(viewIndex)];
    VarHandle.loadLoadFence(); // the read above happens before the check below, as StampedLock.validate
    if (viewGeneration != generation || item == null) {
      throw new IllegalStateException(NOT_READING);
    }
    return item;
  }

  /** Closes recording: after this no view records anything. Called by the party that won the settle CAS. */
  public synchronized void seal() {
    recording = false;
  }

  private void checkRecording(int viewGeneration) {
    if (viewGeneration != generation || !recording) {
      throw new IllegalStateException(NOT_WRITING);
    }
  }

  /** Records an outcome for the view of {@code viewGeneration}; throws if that view is stale or closed. */
  synchronized void record(int viewGeneration, int viewIndex, byte outcomeState, @Nullable Object outcome) {
    checkRecording(viewGeneration);
    if (remainingSucceeded) {
      throw new IllegalStateException("completeRemaining was already called for this batch: every item"
          + " without an outcome was recorded as written, item " + viewIndex + " included");
    }
    int index = storageIndex(viewIndex);
    if (states[index] != NONE) {
      throw new IllegalStateException("item " + viewIndex + " of the batch already has an outcome");
    }
    Throwable unknown = unknownAttemptFailure;
    if (outcomeState == FAILED && unknown != null) {
      // An earlier attempt may have written this item: this attempt's failure cannot make it "not written".
      outcome = UnknownOutcomes.afterUnknownAttempt(unknown, (Throwable) outcome);
    }
    states[index] = outcomeState;
    outcomes[index] = outcome;
    recorded++;
    if (outcomeState == FAILED) {
      failedRecorded++;
    }
  }

  /** Records {@code result} for every item without an outcome, for the view of {@code viewGeneration}. */
  synchronized void recordRemaining(int viewGeneration, @Nullable Object result) {
    checkRecording(viewGeneration);
    if (remainingSucceeded) {
      throw new IllegalStateException("completeRemaining was already called for this batch");
    }
    remainingSucceeded = true; // O(1): a sink that writes whole batches records nothing per item
    remainingResult = result;
  }

  /**
   * How many items fail after a write that returned: those recorded as failed, plus those left without an
   * outcome unless the rest succeeded.
   */
  int failedCount() {
    return failedRecorded + (remainingSucceeded ? 0 : size - recorded);
  }

  /** The outcome state of an item once recording is sealed: an item left alone counts as completeRemaining says. */
  byte settledState(int index) {
    byte state = states[index];
    return state == NONE && remainingSucceeded ? SUCCEEDED : state;
  }

  /** The result of an item whose {@link #settledState} is {@link #SUCCEEDED}. */
  @Nullable Object settledResult(int index) {
    return states[index] == NONE ? remainingResult : outcomes[index];
  }

  private void forgetOutcomes() {
    if (recorded > 0) {
      Arrays.fill(outcomes, 0, size, null);
      Arrays.fill(states, 0, size, NONE);
    }
    recorded = 0;
    failedRecorded = 0;
    remainingSucceeded = false;
    remainingResult = null;
  }

  /** Forgets everything; the batch is {@link #FILLING} and empty again. Called by the party that settled it. */
  public void clear() {
    synchronized (this) {
      generation++; // before the items go: a kept view's next read fails instead of seeing another batch
      recording = false;
    }
    viewIndices = null;
    viewSize = 0;
    Arrays.fill(items, 0, size, null);
    Arrays.fill(futures, 0, size, null);
    forgetOutcomes();
    size = 0;
    weight = 0;
    firstSequence = -1;
    waits.clear();
    if (lastAttemptFailure != null) {
      lastAttemptFailure = null; // a volatile store only after a retried batch, not on every batch
      unknownAttemptFailure = null;
    }
    opened = false;
    state.set(FILLING); // last: a close that CASes FILLING afterwards sees an empty batch
  }
}
