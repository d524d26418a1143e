/**
 * ringbatch: many threads' small writes coalesced into few large ones on a Disruptor ring, each caller
 * keeping its own result.
 *
 * <p>Only {@code dev.ringbatch}, {@code dev.ringbatch.stats} and {@code dev.ringbatch.sink} are API. The Disruptor is required but not
 * re-exported: no Disruptor type appears in a public signature.
 */
@org.jspecify.annotations.NullMarked
module dev.ringbatch {
  requires com.lmax.disruptor;
  requires static transitive java.sql; // in JdbcBatchSink signatures; a jlinked image without it can skip the sink
  requires static transitive org.jspecify; // annotations in our signatures; optional at run time

  exports dev.ringbatch;
  exports dev.ringbatch.stats;
  exports dev.ringbatch.sink;
}
