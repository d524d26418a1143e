package dev.ringbatch.spring.boot;

import static java.util.Objects.requireNonNull;

import dev.ringbatch.AsyncBatchSink;
import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.CloseReport;
import dev.ringbatch.RetryPolicy;
import dev.ringbatch.Weigher;
import dev.ringbatch.spring.boot.BatcherProperties.Retry;
import dev.ringbatch.spring.boot.BatcherProperties.Settings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.IntFunction;
import java.util.function.Supplier;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;

/**
 * Creates batchers configured by {@code ringbatch.*} properties and {@link BatcherConfigCustomizer} beans.
 * Declare a batcher as a bean in one line:
 *
 * <pre>{@code
 * @Bean
 * Batcher<Event, Integer> events(BatcherFactory batchers, DataSource dataSource) {
 *   return batchers.create("events", JdbcBatchSink.of(dataSource, INSERT, binder));
 * }
 * }</pre>
 *
 * Every batcher it creates, at startup or later, is closed (drained) on shutdown by {@link BatcherLifecycle},
 * then its sinks if they are {@link AutoCloseable}; with Micrometer it gets its meters, and it shows in the
 * {@code ringbatch} health and the {@code batchers} endpoint. What the lifecycle did not close (a startup that
 * failed after batchers were created) the factory closes when the context destroys it.
 *
 * <p>A bad property fails startup with {@link InvalidConfigurationPropertyValueException} naming the property,
 * its value and the rule it broke; every configured batcher is checked when the factory is created, used or
 * not. Thread-safe.
 */
public class BatcherFactory implements AutoCloseable {
  private static final Log LOG = LogFactory.getLog(BatcherFactory.class);

  private final BatcherProperties properties;
  private final List<BatcherConfigCustomizer> customizers;
  private final List<BatchSinkDecorator> decorators;
  private final List<Batcher<?, ?>> created = new CopyOnWriteArrayList<>();
  private final List<Consumer<? super Batcher<?, ?>>> listeners = new CopyOnWriteArrayList<>();
  private final Map<Batcher<?, ?>, List<Object>> sinks = Collections.synchronizedMap(new IdentityHashMap<>());

  public BatcherFactory(BatcherProperties properties) {
    this(properties, List.of());
  }

  /**
   * Creates a factory and checks the configuration of every batcher named in the properties.
   *
   * @param customizers applied to the batcher of their name, in this order, after the properties
   */
  public BatcherFactory(BatcherProperties properties, List<BatcherConfigCustomizer> customizers) {
    this(properties, customizers, List.of());
  }

  /**
   * Creates a factory and checks the configuration of every batcher named in the properties.
   *
   * @param customizers applied to the batcher of their name, in this order, after the properties
   * @param decorators wrapped around every sink given to the factory, the first innermost
   */
  public BatcherFactory(BatcherProperties properties, List<BatcherConfigCustomizer> customizers,
      List<BatchSinkDecorator> decorators) {
    this.properties = requireNonNull(properties, "properties");
    this.customizers = List.copyOf(customizers);
    this.decorators = List.copyOf(decorators);
    config("ringbatch.defaults", properties.getDefaults(), null, null);
    for (String name : properties.getBatchers().keySet()) {
      // private calls only: an overridable one here would let a subclass see a half-built factory
      config("ringbatch.batchers." + name, properties.getBatchers().get(name), name, properties.getDefaults());
      shards(name);
    }
  }

  /**
   * Creates and starts a batcher named {@code name} configured from the properties.
   *
   * @throws IllegalStateException if the properties set {@code shards} above 1: use {@link #createSharded}
   */
  public <T, R> Batcher<T, R> create(String name, BatchSink<T, R> sink) {
    requireUnsharded(name);
    return register(Batcher.of(name, config(name), decorate(name, sink)), List.of(sink));
  }

  /** Creates and starts a batcher whose items are weighed for its byte limit. */
  public <T, R> Batcher<T, R> create(String name, Weigher<? super T> weigher, BatchSink<T, R> sink) {
    requireUnsharded(name);
    return register(Batcher.of(name, config(name), weigher, decorate(name, sink)), List.of(sink));
  }

  /** Creates and starts a batcher with an asynchronous sink, configured from the properties. */
  public <T, R> Batcher<T, R> createAsync(String name, AsyncBatchSink<T, R> sink) {
    requireUnsharded(name);
    requireNonNull(sink, "sink");
    AsyncBatchSink<T, R> decorated = sink;
    for (BatchSinkDecorator decorator : decorators) {
      decorated = decorator.decorateAsync(name, decorated);
    }
    return register(Batcher.ofAsync(name, config(name), decorated), List.of(sink));
  }

  /**
   * Creates and starts a batcher of {@code ringbatch.batchers.<name>.shards} shards (1 when unset), each with
   * its own sink from {@code sinks}; items of one {@code key} go to one shard, in order. See
   * {@link Batcher#sharded}.
   */
  public <T, R> Batcher<T, R> createSharded(String name, Function<? super T, ?> key,
      IntFunction<? extends BatchSink<T, R>> sinks) {
    requireNonNull(key, "key");
    List<Object> made = new CopyOnWriteArrayList<>();
    return register(closingSinksOnFailure(name, made,
        () -> Batcher.sharded(name, config(name), shards(name), key, recording(name, sinks, made))), made);
  }

  /** Creates and starts a sharded batcher whose items go round-robin over the shards, in no order. */
  public <T, R> Batcher<T, R> createSharded(String name, IntFunction<? extends BatchSink<T, R>> sinks) {
    List<Object> made = new CopyOnWriteArrayList<>();
    return register(closingSinksOnFailure(name, made,
        () -> Batcher.sharded(name, config(name), shards(name), recording(name, sinks, made))), made);
  }

  /**
   * Builds a sharded batcher; if that fails part way (a later shard's sink cannot be made), closes the sinks
   * already made: the core closes the shards it started, but the sinks are this factory's, and nobody else
   * holds them.
   */
  private <T, R> Batcher<T, R> closingSinksOnFailure(String name, List<Object> made,
      Supplier<Batcher<T, R>> build) {
    try {
      return build.get();
    } catch (RuntimeException | Error e) {
      closeSinks(name, made);
      throw e;
    }
  }

  /**
   * Runs {@code action} for every batcher this factory created and, from now on, for every batcher it
   * creates, on the creating thread before {@code create} returns. The starter binds meters this way.
   */
  public void whenCreated(Consumer<? super Batcher<?, ?>> action) {
    requireNonNull(action, "action");
    synchronized (listeners) {
      listeners.add(action);
      created.forEach(action);
    }
  }

  /**
   * Returns the configuration the properties and the customizers give a batcher named {@code name}.
   *
   * @throws InvalidConfigurationPropertyValueException if a property breaks a rule
   */
  public BatcherConfig config(String name) {
    requireNonNull(name, "name");
    return config("ringbatch.batchers." + name, properties.getBatchers().get(name), name, properties.getDefaults());
  }

  /** The batchers this factory created, in creation order. */
  public List<Batcher<?, ?>> created() {
    return List.copyOf(created);
  }

  /**
   * Closes every batcher this factory created that is still open, within {@code ringbatch.shutdown-timeout} in
   * all, and their {@link AutoCloseable} sinks, logging each report. Normally the {@link BatcherLifecycle} has
   * closed them already and this does nothing.
   */
  @Override
  public void close() {
    long deadline = System.nanoTime() + properties.getShutdownTimeout().toNanos();
    for (Batcher<?, ?> batcher : created) {
      if (!batcher.isClosed() || sinks.containsKey(batcher)) {
        closeAndLog(batcher, Duration.ofNanos(Math.max(0, deadline - System.nanoTime())), "closed by its factory");
      }
    }
  }

  /** Names that have properties, for checking against the batchers actually created. */
  Map<String, Settings> configuredNames() {
    return properties.getBatchers();
  }

  /**
   * Closes {@code batcher} and then the {@link AutoCloseable} sinks this factory gave it, logging the report
   * through Spring's logging (commons-logging), which, unlike {@code java.util.logging}, is still wired when a
   * JVM shutdown hook stops the context: see {@link BatcherLifecycle}.
   */
  void closeAndLog(Batcher<?, ?> batcher, Duration timeout, String why) {
    CloseReport report = batcher.close(timeout);
    if (report.drained()) {
      LOG.info("ringbatch batcher '" + batcher.name() + "' " + why + ": " + report);
    } else {
      LOG.warn("ringbatch batcher '" + batcher.name() + "' " + why + " without draining: " + report.abandoned()
          + " items abandoned, their callers failed: " + report);
    }
    List<Object> own = sinks.remove(batcher);
    closeSinks(batcher.name(), own == null ? List.of() : own);
  }

  private static void closeSinks(String name, List<Object> own) {
    for (Object sink : own) {
      if (sink instanceof AutoCloseable closeable) {
        try {
          closeable.close();
        } catch (Exception e) {
          LOG.warn("closing the sink of batcher '" + name + "' failed", e);
        }
      }
    }
  }

  /**
   * Records a new batcher and tells the listeners (meter binders). If one throws, create() throws: the batcher,
   * which nobody holds then, is closed with its sinks rather than left running until shutdown.
   */
  private <T, R> Batcher<T, R> register(Batcher<T, R> batcher, List<Object> ownSinks) {
    sinks.put(batcher, ownSinks);
    synchronized (listeners) {
      created.add(batcher);
      try {
        for (Consumer<? super Batcher<?, ?>> listener : listeners) {
          listener.accept(batcher);
        }
      } catch (RuntimeException | Error e) {
        created.remove(batcher);
        closeAndLog(batcher, properties.getShutdownTimeout(), "closed: a listener of its creation failed");
        throw e;
      }
    }
    return batcher;
  }

  /** The shards' sinks, decorated; the undecorated ones recorded in {@code made}, to be closed. */
  private <T, R> IntFunction<BatchSink<T, R>> recording(String name, IntFunction<? extends BatchSink<T, R>> sinks,
      List<Object> made) {
    requireNonNull(sinks, "sinks");
    return shard -> {
      BatchSink<T, R> sink = sinks.apply(shard);
      made.add(requireNonNull(sink, "sinks returned null for shard " + shard));
      return decorate(name, sink);
    };
  }

  private <T, R> BatchSink<T, R> decorate(String name, BatchSink<T, R> sink) {
    requireNonNull(sink, "sink");
    BatchSink<T, R> decorated = sink;
    for (BatchSinkDecorator decorator : decorators) {
      decorated = decorator.decorate(name, decorated);
    }
    return decorated;
  }

  private void requireUnsharded(String name) {
    int shards = shards(name);
    if (shards > 1) {
      throw new IllegalStateException("ringbatch.batchers." + name + ".shards is " + shards
          + ": create batcher '" + name + "' with BatcherFactory.createSharded");
    }
  }

  private int shards(String name) {
    Settings own = properties.getBatchers().get(name);
    Integer shards = own != null && own.getShards() != null ? own.getShards() : properties.getDefaults().getShards();
    String property = own != null && own.getShards() != null ? "ringbatch.batchers." + name + ".shards"
        : "ringbatch.defaults.shards";
    if (shards == null) {
      return 1;
    }
    if (shards < 1) {
      throw new InvalidConfigurationPropertyValueException(property, shards,
          "shards must be at least 1 but was " + shards);
    }
    return shards;
  }

  /**
   * Builds the configuration of {@code prefix}: the defaults (if given), then {@code own}, then the
   * customizers of {@code name}.
   */
  private BatcherConfig config(String prefix, @Nullable Settings own, @Nullable String name,
      @Nullable Settings defaults) {
    BatcherConfig.Builder builder = BatcherConfig.builder();
    RetryPolicy.Builder retry = RetryPolicy.builder();
    boolean retrySet = false;
    if (defaults != null) {
      apply(builder, "ringbatch.defaults", defaults);
      retrySet = apply(retry, "ringbatch.defaults.retry", defaults.getRetry());
    }
    if (own != null) {
      apply(builder, prefix, own);
      retrySet |= apply(retry, prefix + ".retry", own.getRetry());
    }
    if (retrySet) {
      try {
        builder.retryPolicy(retry.build());
      } catch (IllegalStateException e) {
        throw new InvalidConfigurationPropertyValueException(lastSet(prefix, own, defaults, "retry.max-backoff",
            s -> s.getRetry().getMaxBackoff()), valueOf(own, defaults, s -> s.getRetry().getMaxBackoff()),
            e.getMessage());
      }
    }
    if (name != null && valueOf(own, defaults, Settings::getConsumerThread) == ConsumerThread.VIRTUAL) {
      builder.threadFactory(VirtualThreads.factory("ringbatch-" + name + "-"));
    }
    if (name != null) {
      for (BatcherConfigCustomizer customizer : customizers) {
        if (customizer.name().equals(name)) {
          customizer.customize(builder);
        }
      }
    }
    try {
      return builder.build();
    } catch (IllegalStateException e) {
      // maxBatchSize > ringSize: blame whichever of the two the user set last, with its value
      String property = lastSet(prefix, own, defaults, "max-batch-size", Settings::getMaxBatchSize);
      Object value = valueOf(own, defaults, Settings::getMaxBatchSize);
      if (value == null) {
        property = lastSet(prefix, own, defaults, "ring-size", Settings::getRingSize);
        value = valueOf(own, defaults, Settings::getRingSize);
      }
      if (value == null) { // neither is a property: a customizer set them
        throw new IllegalStateException("the BatcherConfigCustomizer of batcher '" + name + "' made an invalid"
            + " configuration: " + e.getMessage(), e);
      }
      throw new InvalidConfigurationPropertyValueException(property, value, e.getMessage());
    }
  }

  /** The property, in {@code own} if set there, else in the defaults. */
  private static String lastSet(String prefix, @Nullable Settings own, @Nullable Settings defaults, String key,
      Function<Settings, @Nullable Object> getter) {
    return own != null && getter.apply(own) != null ? prefix + "." + key : "ringbatch.defaults." + key;
  }

  private static <V> @Nullable V valueOf(@Nullable Settings own, @Nullable Settings defaults,
      Function<Settings, @Nullable V> getter) {
    V value = own == null ? null : getter.apply(own);
    return value != null || defaults == null ? value : getter.apply(defaults);
  }

  private static void apply(BatcherConfig.Builder b, String prefix, Settings s) {
    set(prefix + ".ring-size", s.getRingSize(), b::ringSize);
    set(prefix + ".max-batch-size", s.getMaxBatchSize(), b::maxBatchSize);
    set(prefix + ".max-batch-bytes", s.getMaxBatchBytes(), b::maxBatchBytes);
    set(prefix + ".linger", s.getLinger(), b::linger);
    set(prefix + ".overflow-policy", s.getOverflowPolicy(), b::overflowPolicy);
    set(prefix + ".submit-timeout", s.getSubmitTimeout(), b::submitTimeout);
    if (Boolean.TRUE.equals(s.getBlockWithoutTimeout())) {
      if (s.getSubmitTimeout() != null) {
        throw new InvalidConfigurationPropertyValueException(prefix + ".block-without-timeout", true,
            "block-without-timeout excludes submit-timeout, which is set to " + s.getSubmitTimeout() + " at "
                + prefix + ".submit-timeout");
      }
      b.submitTimeout(BatcherConfig.NO_TIMEOUT);
    }
    set(prefix + ".wait-mode", s.getWaitMode(), b::waitMode);
    set(prefix + ".close-timeout", s.getCloseTimeout(), b::closeTimeout);
    set(prefix + ".max-in-flight-batches", s.getMaxInFlightBatches(), b::maxInFlightBatches);
    if (s.getConsumerThread() == ConsumerThread.VIRTUAL && !VirtualThreads.available()) {
      throw new InvalidConfigurationPropertyValueException(prefix + ".consumer-thread", "virtual",
          "virtual threads need Java 21 or later; this is Java " + Runtime.version().feature());
    }
  }

  /** Returns whether any retry key is set. */
  private static boolean apply(RetryPolicy.Builder b, String prefix, Retry r) {
    set(prefix + ".max-attempts", r.getMaxAttempts(), b::maxAttempts);
    set(prefix + ".initial-backoff", r.getInitialBackoff(), b::initialBackoff);
    set(prefix + ".max-backoff", r.getMaxBackoff(), b::maxBackoff);
    set(prefix + ".multiplier", r.getMultiplier(), b::multiplier);
    set(prefix + ".jitter", r.getJitter(), b::jitter);
    set(prefix + ".max-elapsed", r.getMaxElapsed(), b::maxElapsed);
    return r.isSet();
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

  /** The sinks given with {@code batcher} that the factory has not closed yet; for tests. */
  List<Object> sinksOf(Batcher<?, ?> batcher) {
    List<Object> own = sinks.get(batcher);
    return own == null ? List.of() : new ArrayList<>(own);
  }
}
