package dev.ringbatch.internal;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * The items a close (or a consumer left to clean up after it) fails, gathered before any of them is told. The
 * closing thread first counts them and publishes its report, and only then completes their futures, whose
 * dependent actions are user code: one that calls {@code flush().join()}, {@code close()} or {@code stats()}
 * finds the close finished and its item counted. Not thread-safe: one party gathers and finishes it.
 */
final class Abandonment {
  private final List<CompletableFuture<Object>> futures = new ArrayList<>();
  private final List<Throwable> causes = new ArrayList<>();
  private long items;
  private long failedBySink;
  private final List<String> notes = new ArrayList<>();
  /** Slots claimed but not yet published when gathered: their items, if accepted, fail once published. */
  private final List<Long> stragglers = new ArrayList<>();
  private @Nullable Throwable stragglerCause;

  /** One item abandoned with {@code cause}; {@code future} is null for a fire-and-forget item. */
  void add(@Nullable CompletableFuture<Object> future, Throwable cause) {
    items++;
    tell(future, cause);
  }

  /**
   * One item that keeps the failure its sink recorded ({@code cause}), taken with its batch while it waited to
   * retry: it counts as failed, not abandoned.
   */
  void addFailed(@Nullable CompletableFuture<Object> future, Throwable cause) {
    failedBySink++;
    tell(future, cause);
  }

  private void tell(@Nullable CompletableFuture<Object> future, Throwable cause) {
    if (future != null) {
      futures.add(future);
      causes.add(cause);
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

  List<Long> stragglers() {
    return stragglers;
  }

  @Nullable Throwable stragglerCause() {
    return stragglerCause;
  }

  /** Items abandoned: their callers are told the batcher closed before (or while) they were written. */
  long items() {
    return items;
  }

  /** Items that keep the failure their sink recorded. */
  long failedBySink() {
    return failedBySink;
  }

  int futures() {
    return futures.size();
  }

  CompletableFuture<Object> future(int index) {
    return futures.get(index);
  }

  Throwable cause(int index) {
    return causes.get(index);
  }

  List<String> notes() {
    return notes;
  }
}
