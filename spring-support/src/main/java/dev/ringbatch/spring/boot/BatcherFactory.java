package dev.ringbatch.spring.boot;

import static java.util.Objects.requireNonNull;

import dev.ringbatch.AsyncBatchSink;
import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.CloseReport;
import dev.ringbatch.Weigher;
import dev.ringbatch.spring.boot.BatcherProperties.Settings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.IntFunction;
import java.util.function.Supplier;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.core.env.Environment;

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
 * failed after batchers were created) the factory closes when the context destroys it, which may come after the
 * beans their sinks use (a {@code DataSource}) were destroyed: items still queued then fail with the sink's error.
 *
 * <p>A bad property fails startup with {@link InvalidConfigurationPropertyValueException} naming the property,
 * its value and the rule it broke; every configured batcher is checked when the factory is created, used or
 * not. Thread-safe.
 */
public class BatcherFactory implements AutoCloseable {
  private static final Log LOG = LogFactory.getLog(BatcherFactory.class);

  private final BatcherProperties properties;
  private final PropertiesConfigMapper mapper;
  private final List<BatchSinkDecorator> decorators;
  private final List<Batcher<?, ?>> created = new CopyOnWriteArrayList<>();
  /** The names of the batchers in {@link #created}, and of those being built. */
  private final Set<String> names = ConcurrentHashMap.newKeySet();
  /** Batcher beans the application made itself, whose names {@link #reserve} took. */
  private final Set<Batcher<?, ?>> handMade =
      java.util.Collections.synchronizedSet(java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>()));
  private final List<Consumer<? super Batcher<?, ?>>> listeners = new CopyOnWriteArrayList<>();
  private final Map<Batcher<?, ?>, List<Object>> sinks = Collections.synchronizedMap(new IdentityHashMap<>());
  /** What {@link #retire} undoes besides the name and the sinks: the meters the starter bound. */
  private final Map<Batcher<?, ?>, List<Runnable>> registrations =
      Collections.synchronizedMap(new IdentityHashMap<>());

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
    this(properties, customizers, decorators, PropertiesConfigMapper.Precedence.NONE);
  }

  /**
   * Creates a factory and checks the configuration of every batcher named in the properties. When a rule
   * between two properties fails (a batch larger than the ring), the one blamed is the one whose property
   * source in {@code environment} takes precedence: a ring size given on the command line, not the batch size
   * from {@code application.yml}.
   *
   * @param customizers applied to the batcher of their name, in this order, after the properties
   * @param decorators wrapped around every sink given to the factory, the first innermost
   */
  public BatcherFactory(BatcherProperties properties, List<BatcherConfigCustomizer> customizers,
      List<BatchSinkDecorator> decorators, Environment environment) {
    this(properties, customizers, decorators, PropertiesConfigMapper.Precedence.of(environment));
  }

  private BatcherFactory(BatcherProperties properties, List<BatcherConfigCustomizer> customizers,
      List<BatchSinkDecorator> decorators, PropertiesConfigMapper.Precedence precedence) {
    this.properties = requireNonNull(properties, "properties");
    this.mapper = new PropertiesConfigMapper(properties, customizers, precedence);
    this.decorators = List.copyOf(decorators);
    mapper.checkAll(); // private state only: an overridable call here would let a subclass see a half-built factory
  }

  /**
   * Creates and starts a batcher named {@code name} configured from the properties.
   *
   * @throws IllegalStateException if the properties set {@code shards} above 1: use {@link #createSharded}
   */
  public <T, R> Batcher<T, R> create(String name, BatchSink<T, R> sink) {
    requireUnsharded(name, sink);
    return register(name, () -> Batcher.of(name,
        unweighed(name, "create the batcher with a weigher: create(name, weigher, sink)"), decorate(name, sink)),
        List.of(sink));
  }

  /** Creates and starts a batcher whose items are weighed for its byte limit. */
  public <T, R> Batcher<T, R> create(String name, Weigher<? super T> weigher, BatchSink<T, R> sink) {
    requireUnsharded(name, sink);
    return register(name, () -> Batcher.of(name, config(name), weigher, decorate(name, sink)), List.of(sink));
  }

  /** Creates and starts a batcher with an asynchronous sink, configured from the properties. */
  public <T, R> Batcher<T, R> createAsync(String name, AsyncBatchSink<T, R> sink) {
    requireUnsharded(name, sink);
    // decorated inside register, after the name is taken: a refused duplicate must not touch the tracker's entry
    return register(name, () -> Batcher.ofAsync(name, unweighed(name, "an asynchronous batcher takes no weigher"),
        decorateAsync(name, sink)), List.of(sink));
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
    return register(name, () -> Batcher.sharded(name, unweighed(name, "a sharded batcher takes no weigher"),
        mapper.shards(name), key, recording(name, sinks, made)), made);
  }

  /** Creates and starts a sharded batcher whose items go round-robin over the shards, in no order. */
  public <T, R> Batcher<T, R> createSharded(String name, IntFunction<? extends BatchSink<T, R>> sinks) {
    List<Object> made = new CopyOnWriteArrayList<>();
    return register(name, () -> Batcher.sharded(name, unweighed(name, "a sharded batcher takes no weigher"),
        mapper.shards(name), recording(name, sinks, made)), made);
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
   * Returns the configuration the properties, the customizers and then the {@link BatchSinkDecorator}s give a
   * batcher named {@code name}.
   *
   * @throws InvalidConfigurationPropertyValueException if a property breaks a rule
   */
  public BatcherConfig config(String name) {
    requireNonNull(name, "name");
    BatcherConfig config = mapper.config(name);
    for (BatchSinkDecorator decorator : decorators) {
      config = requireNonNull(decorator.customize(name, config), "a BatchSinkDecorator returned a null config");
    }
    return config;
  }

  /** The batchers this factory created, in creation order. */
  public List<Batcher<?, ?>> created() {
    return List.copyOf(created);
  }

  /**
   * Closes every batcher this factory created that is still open, in parallel, each within its close-timeout
   * bounded by {@code ringbatch.shutdown-timeout}, and their {@link AutoCloseable} sinks, logging each report. Normally the {@link BatcherLifecycle} has
   * closed them already and this does nothing.
   */
  @Override
  public void close() {
    List<Batcher<?, ?>> open = new ArrayList<>();
    for (Batcher<?, ?> batcher : created) {
      if (!batcher.isClosed() || sinks.containsKey(batcher)) {
        open.add(batcher);
      }
    }
    Collections.reverse(open);
    ParallelCloser.closeAll(open, properties.getShutdownTimeout(), (batcher, within) ->
        closeAndLog(batcher, within, "closed by its factory"));
  }

  /**
   * Forgets {@code batcher}, which its owner closed while the application runs: it is no longer in
   * {@link #created()}, its name is free for a new batcher, and the sinks the factory was given with it are
   * closed. Called by the {@link BatcherLifecycle} on the closing thread, once the close report is out.
   */
  void retire(Batcher<?, ?> batcher, CloseReport report) {
    if (created.remove(batcher) || handMade.remove(batcher)) {
      release(batcher.name());
    }
    LOG.info("ringbatch batcher '" + batcher.name() + "' closed by its owner and deregistered: " + report);
    List<Object> own = sinks.remove(batcher);
    closeSinks(batcher.name(), own == null ? List.of() : own);
    List<Runnable> undo = registrations.remove(batcher);
    if (undo != null) {
      undo.forEach(Runnable::run);
    }
  }

  /**
   * Runs {@code undo} when its owner closes {@code batcher} while the application runs (see
   * {@link #retire}); not on shutdown, whose closes keep what the batchers registered (their meters' final
   * counts, for the registry's last publication).
   */
  void whenRetired(Batcher<?, ?> batcher, Runnable undo) {
    registrations.computeIfAbsent(batcher, b -> new CopyOnWriteArrayList<>()).add(undo);
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
    } else if (report.abandoned() > 0) {
      LOG.warn("ringbatch batcher '" + batcher.name() + "' " + why + " without draining: " + report.abandoned()
          + " items abandoned, their callers failed: " + report);
    } else {
      // The close timed out with nothing to abandon: it did not see its consumer stop in time (a sharded
      // batcher's shard, say), so it cannot say it drained; there were no callers to fail.
      LOG.warn("ringbatch batcher '" + batcher.name() + "' " + why + " before its consumer confirmed the drain;"
          + " no item abandoned: " + report);
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
   * Takes {@code name}, builds the batcher, records it and tells the listeners (meter binders). The name is
   * taken before the batcher is built (and started), so that of two concurrent creates of one name the second
   * fails before it starts a consumer; it is free again if the build fails. If a listener throws, create()
   * throws: the batcher, which nobody holds then, is closed with its sinks rather than left running until
   * shutdown.
   *
   * @throws IllegalStateException if a batcher of this factory already has that name
   */
  private <T, R> Batcher<T, R> register(String name, Supplier<Batcher<T, R>> build, List<Object> ownSinks) {
    requireNonNull(name, "name");
    if (!names.add(name)) {
      throw duplicateName(name);
    }
    Batcher<T, R> batcher;
    try {
      batcher = build.get();
    } catch (RuntimeException | Error e) {
      // The sinks given (or made so far, for a sharded batcher that failed part way) are the factory's, and nobody
      // else holds them: closed, as a batcher's are when a decorator or a listener fails below
      closeSinks(name, ownSinks);
      release(name);
      if (e instanceof IllegalArgumentException refused) {
        throw mapper.blameRingSize(name, refused); // the core refuses a ring too large for the heap only when built
      }
      throw e;
    }
    sinks.put(batcher, ownSinks);
    Batcher<T, R> built = batcher;
    batcher = decorate(name, built); // closes the built batcher and its sinks if a decorator fails
    sinks.remove(built);
    sinks.put(batcher, ownSinks);
    synchronized (listeners) {
      created.add(batcher);
      try {
        for (Consumer<? super Batcher<?, ?>> listener : listeners) {
          listener.accept(batcher);
        }
      } catch (RuntimeException | Error e) {
        created.remove(batcher);
        release(name);
        closeAndLog(batcher, properties.getShutdownTimeout(), "closed: a listener of its creation failed");
        throw e;
      }
    }
    return batcher;
  }

  /**
   * Takes the name of a {@code Batcher} bean the application made itself, so that no batcher of the factory takes
   * it later: the name keys health, meters and the endpoint. Called by the {@link BatcherLifecycle} at start.
   *
   * @throws IllegalStateException if a batcher of the factory has that name
   */
  void reserve(Batcher<?, ?> bean) {
    if (handMade.contains(bean)) {
      return; // a context started again after a stop: the name is this bean's already
    }
    if (!names.add(bean.name())) {
      throw duplicateName(bean.name());
    }
    handMade.add(bean);
  }

  /**
   * Frees {@code name} for a new batcher: the one place a name is given back, and with it what a write tracker
   * kept for it (a new batcher of the name must not inherit a write left hanging).
   */
  private void release(String name) {
    for (BatchSinkDecorator decorator : decorators) {
      if (decorator instanceof WriteTracker tracker) {
        tracker.forget(name);
      }
    }
    names.remove(name);
  }

  static IllegalStateException duplicateName(String name) {
    return new IllegalStateException("a batcher named '" + name + "' already exists; batcher names must be unique:"
        + " they key its properties, meters, health and batchers endpoint entry");
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

  /** The batcher wrapped by the decorators; if one fails, the batcher is closed and the name released. */
  private <T, R> Batcher<T, R> decorate(String name, Batcher<T, R> built) {
    Batcher<T, R> batcher = built;
    try {
      for (BatchSinkDecorator decorator : decorators) {
        batcher = requireNonNull(decorator.decorate(name, batcher), "a BatchSinkDecorator returned a null batcher");
      }
    } catch (RuntimeException | Error e) {
      release(name);
      closeAndLog(built, properties.getShutdownTimeout(), "closed: a BatchSinkDecorator failed to wrap it");
      throw e;
    }
    return batcher;
  }

  private <T, R> BatchSink<T, R> decorate(String name, BatchSink<T, R> sink) {
    requireNonNull(sink, "sink");
    BatchSink<T, R> decorated = sink;
    for (BatchSinkDecorator decorator : decorators) {
      decorated = decorator.decorate(name, decorated);
    }
    return decorated;
  }

  private <T, R> AsyncBatchSink<T, R> decorateAsync(String name, AsyncBatchSink<T, R> sink) {
    AsyncBatchSink<T, R> decorated = sink;
    for (BatchSinkDecorator decorator : decorators) {
      decorated = decorator.decorateAsync(name, decorated);
    }
    return decorated;
  }

  /**
   * The configuration of a batcher made without a weigher. A byte limit needs one: a property that sets it is
   * named in the refusal (the core's names none), thrown inside {@link #register}'s build, which closes the sinks
   * given and frees the name, as for any failed create.
   */
  private BatcherConfig unweighed(String name, String instead) {
    BatcherConfig config = config(name);
    if (config.limits().hasByteLimit()) {
      mapper.requireNoByteLimitProperty(name, instead);
    }
    return config;
  }

  /** Refuses a batcher the properties shard, closing {@code sink} as any failed create closes the sinks given. */
  private void requireUnsharded(String name, Object sink) {
    requireNonNull(sink, "sink");
    int shards = mapper.shards(name);
    if (shards > 1) {
      closeSinks(name, List.of(sink));
      throw new IllegalStateException(mapper.shardsKey(name) + " is " + shards
          + ": create batcher '" + name + "' with BatcherFactory.createSharded");
    }
  }

  /** The sinks given with {@code batcher} that the factory has not closed yet; for tests. */
  List<Object> sinksOf(Batcher<?, ?> batcher) {
    List<Object> own = sinks.get(batcher);
    return own == null ? List.of() : new ArrayList<>(own);
  }
}
