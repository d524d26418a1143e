/**
 * Statistics: the {@link dev.ringbatch.stats.StatsRecorder} SPI that metrics integrations implement.
 */
@NullMarked
package dev.ringbatch.stats;

import org.jspecify.annotations.NullMarked;
