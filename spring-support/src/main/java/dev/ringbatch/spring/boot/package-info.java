/**
 * Spring Boot auto-configuration for ringbatch: {@link dev.ringbatch.spring.boot.BatcherFactory} builds
 * batchers from {@code ringbatch.*} properties, {@link dev.ringbatch.spring.boot.BatcherLifecycle} drains them
 * on shutdown, and their meters are bound when Micrometer is present.
 */
@NullMarked
package dev.ringbatch.spring.boot;

import org.jspecify.annotations.NullMarked;
