/**
 * Sinks that need only the JDK: {@link dev.ringbatch.sink.JdbcBatchSink} for batch inserts and updates
 * through {@code java.sql}, and {@link dev.ringbatch.sink.ByteSink} for streams and files with optional group
 * commit.
 */
@NullMarked
package dev.ringbatch.sink;

import org.jspecify.annotations.NullMarked;
