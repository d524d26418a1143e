/**
 * The ringbatch API: {@link dev.ringbatch.Batcher}, its {@link dev.ringbatch.BatcherConfig configuration},
 * the {@link dev.ringbatch.BatchSink sink} contract and the exceptions a caller can see.
 */
@NullMarked
package dev.ringbatch;

import org.jspecify.annotations.NullMarked;
