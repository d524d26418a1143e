package dev.ringbatch.spring.boot;

import static java.util.Objects.requireNonNull;

import dev.ringbatch.BatcherConfig;
import java.util.function.Consumer;

/**
 * Changes the configuration of one batcher, by name, after the {@code ringbatch.*} properties were applied:
 * for what properties cannot say (a {@code RetryPolicy.retryOn} predicate, a {@code ThreadFactory}, a
 * {@code Ticker}). Declare it as a bean; the {@link BatcherFactory} applies every customizer whose
 * {@link #name()} is the batcher's, in bean order, and only to that batcher.
 *
 * <pre>{@code
 * @Bean
 * BatcherConfigCustomizer eventsRetry() {
 *   return BatcherConfigCustomizer.of("events", builder -> builder.retryPolicy(RetryPolicy.builder()
 *       .retryOn(e -> e instanceof SQLTransientException).build()));
 * }
 * }</pre>
 *
 * A setter's {@code IllegalArgumentException} fails startup like a bad property does.
 */
public interface BatcherConfigCustomizer {

  /** The name of the batcher this customizer changes. */
  String name();

  /** Changes {@code builder}, which holds the configuration the properties give. */
  void customize(BatcherConfig.Builder builder);

  /** Returns a customizer of the batcher named {@code name}. */
  static BatcherConfigCustomizer of(String name, Consumer<BatcherConfig.Builder> customizer) {
    requireNonNull(name, "name");
    requireNonNull(customizer, "customizer");
    return new BatcherConfigCustomizer() {
      @Override
      public String name() {
        return name;
      }

      @Override
      public void customize(BatcherConfig.Builder builder) {
        customizer.accept(builder);
      }

      @Override
      public String toString() {
        return "BatcherConfigCustomizer[" + name + "]";
      }
    };
  }
}
