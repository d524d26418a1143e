/**
 * Micrometer for ringbatch batchers: meters ({@link dev.ringbatch.micrometer.BatcherMetrics}) and an observation
 * of each batch write ({@link dev.ringbatch.micrometer.BatchWriteObservation}).
 */
@NullMarked
package dev.ringbatch.micrometer;

import org.jspecify.annotations.NullMarked;
