package dev.ringbatch;

/**
 * Told of each fire-and-forget item ({@link Batcher#offer}) the sink failed: nobody holds a future for it, so this
 * is the one place its failure can be acted on (a dead-letter queue, a counter by cause). Set with
 * {@link BatcherConfig.Builder#offerFailureHandler}; without one, such failures are counted in
 * {@link BatcherStats#failed()} and logged at {@code WARNING}, at most once every ten seconds per batcher.
 *
 * <p>Called on the thread that completes the item's batch (the consumer thread for a {@link BatchSink}), once per
 * failed item, after the batch is counted, in item order. Like a future's dependent action, it should be quick and
 * must not wait for the batcher ({@code submitAndWait}, {@code flush().join()} there throw or wait for themselves).
 * What it throws is logged and otherwise ignored. Items a close abandoned are not reported here: the
 * {@link CloseReport} counts them. An item whose failure the sink had recorded before a close took its batch over
 * keeps that failure and is reported here, on a thread of the close's own.
 */
@FunctionalInterface
public interface OfferFailureHandler {

  /**
   * Handles one failed fire-and-forget item.
   *
   * @param item the item, as offered
   * @param cause why the sink failed it
   */
  void failed(Object item, Throwable cause);
}
