package dev.ringbatch.internal.consume;

/**
 * How a batch reaches the sink: {@link SyncBatchWriter} (one call at a time, with retries) or
 * {@link AsyncBatchWriter} (pipelined, settle-once tickets). Chosen once, when the batcher is built; the
 * consumer does not know which it has. Methods without a note are called on the consumer thread, in
 * {@link HandOver#OWNED} state; they enter and leave the {@code CALLING_OUT} state around user code themselves.
 */
public interface BatchWriter<T, R> {

  /** Whether a batch can be handed over now without waiting (an async writer may be at its in-flight limit). */
  boolean ready();

  /**
   * How long the last batch written spent in the sink, every attempt and backoff, once {@link #write} returned;
   * -1 for a writer that does not wait for its sink (async). Consumer thread.
   */
  default long lastSinkNanos() {
    return -1;
  }

  /** The ticker's reading when the last batch's write started, once {@link #write} returned. Consumer thread. */
  long lastWriteStart();

  /**
   * Writes {@code batch}, whose last item came from ring slot {@code lastSequence}, and returns the batch to
   * fill next (empty). May wait for an in-flight slot.
   *
   * @throws ConsumerStop if a close took over, or asked the consumer to give up its holdings
   */
  PendingBatch<T, R> write(PendingBatch<T, R> batch, long lastSequence);

  /**
   * Every item up to {@code sequence} that is not in flight has its outcome: moves flush progress, completing
   * nobody (that is user code). Returns whether flush waiters may now be due: the consumer then completes them
   * through {@link FlushWaiters#completeFinished()} as a call out.
   */
  boolean finishIdle(long sequence);

  /**
   * At the close marker: waits until every batch handed to the sink has settled.
   *
   * @throws ConsumerStop if a close asked the consumer to give up
   */
  void awaitSettled();

  /**
   * On the closing thread, after the consumer stopped or a take-over: waits until {@code deadline} (in
   * {@link System#nanoTime()} terms) for threads still completing the futures of settled batches (the consumer,
   * or an async sink's completing threads), except the calling thread's own completion, if it is one.
   */
  void awaitCompletions(long deadline);

  /** Whether the calling thread is completing the futures of a settled batch (a dependent action runs on it). */
  boolean completingOnThisThread();

  /**
   * After a take-over, on the closing thread: settles every batch still in the sink (or waiting to retry) as
   * abandoned, each once, and gathers its items into {@code into}; nobody is told yet.
   */
  void failInFlight(String closeDescription, Abandonment into);
}
