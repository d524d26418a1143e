package dev.ringbatch.spring.boot;

import dev.ringbatch.Batcher;
import dev.ringbatch.CloseReport;
import dev.ringbatch.stats.StatsRecorder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.stream.Stream;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.BeanFactoryAware;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.context.SmartLifecycle;

/**
 * Drains every batcher on shutdown: those the {@link BatcherFactory} created and every {@link Batcher} bean.
 *
 * <p>Its phase, {@link #PHASE}, is below the web server's graceful-shutdown and stop phases, so the server
 * has stopped taking requests before the batchers close, and every lifecycle stops before beans are
 * destroyed, so the batchers have drained before the {@code DataSource} closes. The batchers close in parallel,
 * each within its own {@code close-timeout} bounded by {@code ringbatch.shutdown-timeout}, so a hung batcher
 * does not use up the time of a healthy one; what a batcher cannot write in time is abandoned, its callers
 * told. A batcher its owner closes while the application runs is deregistered: it leaves the health, the
 * {@code batchers} endpoint and the factory (its name is free again, its sinks closed); its meters go with
 * its close. A batcher begins its close once the newer ones' closes have returned (one whose sink feeds
 * another was created after it, and drains into it first), or once only its own close-timeout is left of the
 * budget: a hung newer batcher delays it but does not take its close-timeout away (see {@link ParallelCloser}).
 *
 * <p>Each close report is logged here, at {@code INFO} when the batcher drained and at {@code WARN} with the
 * abandoned count when it did not, through Spring's logging (commons-logging, so SLF4J and Logback in a Boot
 * application). Not through {@code System.Logger} like the core: on a real JVM exit (SIGTERM,
 * {@code System.exit}) the JDK's {@code LogManager} shutdown hook resets {@code java.util.logging} in parallel
 * with Spring's shutdown hook, and what the core logs then through JUL (and Boot's JUL-to-SLF4J bridge) is lost.
 * Boot shuts its logging system down only after the context has closed, so these lines are written.
 */
public class BatcherLifecycle implements SmartLifecycle, BeanFactoryAware {
  /** Stops after the web server (graceful shutdown at DEFAULT_PHASE - 1024, stop at DEFAULT_PHASE - 2048). */
  public static final int PHASE = SmartLifecycle.DEFAULT_PHASE - 4096;

  private static final Log LOG = LogFactory.getLog(BatcherLifecycle.class);

  private final BatcherFactory factory;
  private final ObjectProvider<Batcher<?, ?>> beans;
  private final Duration timeout;
  private volatile boolean running;
  private volatile @Nullable ConfigurableListableBeanFactory beanFactory;
  /** Batchers whose recorder is registered; weak, as is {@link #retired}: the batchers' owners hold them. */
  private final Set<Batcher<?, ?>> watched = Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));
  /** Batchers closed by their owners while the application ran: no longer listed anywhere. */
  private final Set<Batcher<?, ?>> retired = Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));
  /** Batchers a {@link #stop()} closed: still listed, as closed by the shutdown, after a later start too. */
  private final Set<Batcher<?, ?>> shutDown = Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));

  public BatcherLifecycle(BatcherFactory factory, ObjectProvider<Batcher<?, ?>> beans, Duration timeout) {
    this.factory = factory;
    this.beans = beans;
    this.timeout = timeout;
  }

  @Override
  public void setBeanFactory(BeanFactory beanFactory) {
    this.beanFactory = beanFactory instanceof ConfigurableListableBeanFactory listable ? listable : null;
  }

  @Override
  public void start() {
    running = true;
    Set<String> names = new HashSet<>();
    Set<String> handMade = new HashSet<>();
    Set<Batcher<?, ?>> fromFactory = Collections.newSetFromMap(new IdentityHashMap<>());
    fromFactory.addAll(factory.created());
    for (Batcher<?, ?> batcher : batchers()) {
      if (fromFactory.contains(batcher)) {
        names.add(batcher.name());
      } else {
        handMade.add(batcher.name());
        factory.reserve(batcher); // a hand-made Batcher bean: its name clashes with none, and no later create takes it
      }
    }
    for (String configured : factory.configuredNames().keySet()) {
      if (handMade.contains(configured)) {
        LOG.warn("ringbatch.batchers." + configured + ".* is set, but the batcher named '" + configured + "' is a"
            + " Batcher bean the BatcherFactory did not create: the settings apply to it only if it was built with"
            + " BatcherFactory.config(\"" + configured + "\")");
      } else if (!names.contains(configured)) {
        LOG.warn("ringbatch.batchers." + configured + ".* is set, but no batcher named '"
            + configured + "' was created; check the name");
      }
    }
    factory.whenCreated(this::watch);
    singletons(beanFactory, beans).forEach(this::watch);
  }

  /** Deregisters {@code batcher} when its owner closes it while the application runs; once per batcher. */
  private void watch(Batcher<?, ?> batcher) {
    if (watched.add(batcher)) {
      batcher.addStatsRecorder(new StatsRecorder() {
        @Override
        public void recordClosed(CloseReport report) {
          retire(batcher, report);
        }
      });
      CloseReport closedBefore = batcher.closeReport();
      if (closedBefore != null) { // its owner closed it before the application started: no recorder hears it
        retire(batcher, closedBefore);
      }
    }
  }

  private void retire(Batcher<?, ?> batcher, CloseReport report) {
    // The shutdown's own closes keep the batchers listed, as closed by the shutdown; each is retired once.
    if (running && retired.add(batcher)) {
      factory.retire(batcher, report);
    }
  }

  @Override
  public void stop() {
    running = false;
    List<Batcher<?, ?>> newestFirst = batchers();
    shutDown.addAll(newestFirst);
    Collections.reverse(newestFirst); // a batcher whose sink feeds another was created after it: it begins first
    ParallelCloser.closeAll(newestFirst, timeout, (batcher, within) ->
        factory.closeAndLog(batcher, within, "closed on shutdown"));
  }

  /**
   * Whether {@code batcher} was (or is being) closed by a shutdown, not by its owner: true while the application
   * is not running, and for the batchers a {@link #stop()} closed, after the context started again too.
   */
  boolean closedByShutdown(Batcher<?, ?> batcher) {
    return !running || shutDown.contains(batcher);
  }

  /** Whether the application runs: started and not yet stopping. A batcher closed meanwhile is unexpected. */
  @Override
  public boolean isRunning() {
    return running;
  }

  @Override
  public int getPhase() {
    return PHASE;
  }

  /**
   * Not pauseable: a pause ({@code ConfigurableApplicationContext.pause()} and {@code restart()} of Spring 7) stops
   * and later starts again what it pauses, and a stop closes the batchers for good. (No {@code @Override}: Spring 6,
   * of the Boot 3 starter, has no such method.)
   */
  public boolean isPauseable() {
    return false;
  }

  /** The factory's batchers and the Batcher beans, each once, without those their owners closed. */
  List<Batcher<?, ?>> batchers() {
    Set<Batcher<?, ?>> seen = Collections.newSetFromMap(new IdentityHashMap<>());
    synchronized (retired) {
      seen.addAll(retired);
    }
    // Hand-made Batcher beans first: a factory batcher that feeds one was created after it (it depends on it), so
    // the reversed list closes the feeding batcher first. The factory's batchers follow in their creation order.
    List<Batcher<?, ?>> created = factory.created();
    Set<Batcher<?, ?>> fromFactory = Collections.newSetFromMap(new IdentityHashMap<>());
    fromFactory.addAll(created);
    List<Batcher<?, ?>> all = new ArrayList<>();
    singletons(beanFactory, beans).forEach(batcher -> {
      if (!fromFactory.contains(batcher) && seen.add(batcher)) {
        all.add(batcher);
      }
    });
    for (Batcher<?, ?> batcher : created) {
      if (seen.add(batcher)) {
        all.add(batcher);
      }
    }
    return all;
  }

  /**
   * The Batcher beans that exist: singletons already created. Never prototypes (asking for one creates and
   * starts a new batcher, which nobody would close), and never a lazy singleton nobody has asked for yet (asking
   * would create and start it). Without a bean factory (a hand-made provider, in tests) it asks the provider
   * for its singletons.
   */
  static Stream<Batcher<?, ?>> singletons(@Nullable ConfigurableListableBeanFactory beanFactory,
      ObjectProvider<Batcher<?, ?>> beans) {
    if (beanFactory == null) {
      try {
        return beans.orderedStream(type -> true, false);
      } catch (UnsupportedOperationException notABeanFactoryProvider) {
        return beans.orderedStream();
      }
    }
    List<Batcher<?, ?>> existing = new ArrayList<>();
    for (String name : beanFactory.getBeanNamesForType(Batcher.class, false, false)) {
      if (beanFactory.containsSingleton(name) && beanFactory.getSingleton(name) instanceof Batcher<?, ?> batcher) {
        existing.add(batcher);
      }
    }
    return existing.stream();
  }
}
