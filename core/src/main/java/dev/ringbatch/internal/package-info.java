/**
 * Not API; may change in any release. The Disruptor wiring, the consumer loop, ring slots and guards.
 * The module does not export this package.
 */
@NullMarked
package dev.ringbatch.internal;

import org.jspecify.annotations.NullMarked;
