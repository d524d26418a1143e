/** Micrometer meters for ringbatch batchers: {@link dev.ringbatch.micrometer.BatcherMetrics}. */
@NullMarked
package dev.ringbatch.micrometer;

import org.jspecify.annotations.NullMarked;
