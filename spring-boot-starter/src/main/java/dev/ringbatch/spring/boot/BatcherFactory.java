package dev.ringbatch.spring.boot;

import static java.util.Objects.requireNonNull;

import dev.ringbatch.AsyncBatchSink;
import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.Weigher;
import dev.ringbatch.spring.boot.BatcherProperties.Settings;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;

/**
 * Creates batchers configured by {@code ringbatch.*} properties. Declare a batcher as a bean in one line:
 *
 * <pre>{@code
 * @Bean
 * Batcher<Event, Integer> events(BatcherFactory batchers, DataSource dataSource) {
 *   return batchers.create("events", JdbcBatchSink.of(dataSource, INSERT, binder));
 * }
 * }</pre>
 *
 * Every batcher it creates is closed (drained) on shutdown by {@link BatcherLifecycle}, then its sink if the
 * sink is {@link AutoCloseable}, and, with Micrometer, gets its meters. A bad property fails startup with {@link InvalidConfigurationPropertyValueException}
 * naming the property, its value and the rule it broke; every configured batcher is checked when the
 * factory is created, used or not.
 */
public class BatcherFactory {
  private final BatcherProperties properties;
  private final List<Batcher<?, ?>> created = new CopyOnWriteArrayList<>();
  private final Map<Batcher<?, ?>, Object> sinks = java.util.Collections.synchronizedMap(new java.util.IdentityHashMap<>());

  public BatcherFactory(BatcherProperties properties) {
    this.properties = requireNonNull(properties, "properties");
    for (String name : properties.getBatchers().keySet()) {
      configure(properties, name); // static: an overridable call here would let a subclass see a half-built factory
    }
  }

  /** Creates and starts a batcher named {@code name} configured from the properties. */
  public <T, R> Batcher<T, R> create(String name, BatchSink<T, R> sink) {
    return register(Batcher.of(name, config(name), sink), sink);
  }

  /** Creates and starts a batcher whose items are weighed for its byte limit. */
  public <T, R> Batcher<T, R> create(String name, Weigher<? super T> weigher, BatchSink<T, R> sink) {
    return register(Batcher.of(name, config(name), weigher, sink), sink);
  }

  /** Creates and starts a batcher with an asynchronous sink, configured from the properties. */
  public <T, R> Batcher<T, R> createAsync(String name, AsyncBatchSink<T, R> sink) {
    Batcher<T, R> batcher = Batcher.ofAsync(name, config(name), sink);
    created.add(batcher);
    sinks.put(batcher, sink);
    return batcher;
  }

  /** Returns the configuration the properties give a batcher named {@code name}. */
  public BatcherConfig config(String name) {
    return configure(properties, name);
  }

  private static BatcherConfig configure(BatcherProperties properties, String name) {
    requireNonNull(name, "name");
    BatcherConfig.Builder builder = BatcherConfig.builder();
    Settings defaults = properties.getDefaults();
    apply(builder, "ringbatch.defaults", defaults);
    Settings own = properties.getBatchers().get(name);
    String prefix = "ringbatch.batchers." + name;
    if (own != null) {
      apply(builder, prefix, own);
    }
    try {
      return builder.build();
    } catch (IllegalStateException e) {
      // The one cross-field rule, maxBatchSize <= ringSize: blame a property the user set, the batch size
      // if they set one, else the ring size (a small ring against the default batch size).
      if (own != null && own.getMaxBatchSize() != null) {
        throw new InvalidConfigurationPropertyValueException(prefix + ".max-batch-size", own.getMaxBatchSize(), e.getMessage());
      }
      if (defaults.getMaxBatchSize() != null) {
        throw new InvalidConfigurationPropertyValueException("ringbatch.defaults.max-batch-size", defaults.getMaxBatchSize(), e.getMessage());
      }
      if (own != null && own.getRingSize() != null) {
        throw new InvalidConfigurationPropertyValueException(prefix + ".ring-size", own.getRingSize(), e.getMessage());
      }
      throw new InvalidConfigurationPropertyValueException("ringbatch.defaults.ring-size", defaults.getRingSize(), e.getMessage());
    }
  }

  /** The batchers this factory created, in creation order. */
  public List<Batcher<?, ?>> created() {
    return List.copyOf(created);
  }

  /** Names that have properties, for checking against the batchers actually created. */
  Map<String, Settings> configuredNames() {
    return properties.getBatchers();
  }

  private <T, R> Batcher<T, R> register(Batcher<T, R> batcher, BatchSink<T, R> sink) {
    created.add(batcher);
    sinks.put(batcher, sink);
    return batcher;
  }

  /**
   * The sink given with {@code batcher}, if this factory created it; the lifecycle closes an
   * {@link AutoCloseable} sink (a {@code JdbcBatchSink} holding a pooled connection) once its batcher drained.
   */
  @Nullable Object sinkOf(Batcher<?, ?> batcher) {
    return sinks.get(batcher);
  }

  private static void apply(BatcherConfig.Builder b, String prefix, Settings s) {
    set(prefix + ".ring-size", s.getRingSize(), b::ringSize);
    set(prefix + ".max-batch-size", s.getMaxBatchSize(), b::maxBatchSize);
    set(prefix + ".max-batch-bytes", s.getMaxBatchBytes(), b::maxBatchBytes);
    set(prefix + ".linger", s.getLinger(), b::linger);
    set(prefix + ".overflow-policy", s.getOverflowPolicy(), b::overflowPolicy);
    set(prefix + ".submit-timeout", s.getSubmitTimeout(), b::submitTimeout);
    set(prefix + ".wait-mode", s.getWaitMode(), b::waitMode);
    set(prefix + ".close-timeout", s.getCloseTimeout(), b::closeTimeout);
    set(prefix + ".max-in-flight-batches", s.getMaxInFlightBatches(), b::maxInFlightBatches);
  }

  private static <V> void set(String property, @Nullable V value, Consumer<V> setter) {
    if (value == null) {
      return;
    }
    try {
      setter.accept(value);
    } catch (IllegalArgumentException e) {
      throw new InvalidConfigurationPropertyValueException(property, value, e.getMessage());
    }
  }
}
