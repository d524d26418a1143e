package dev.ringbatch.spring.boot;

import dev.ringbatch.Batcher;
import dev.ringbatch.CloseReport;
import dev.ringbatch.micrometer.BatcherMetrics;
import dev.ringbatch.stats.StatsRecorder;
import io.micrometer.core.instrument.LongTaskTimer;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.BeanFactoryAware;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;

/**
 * Binds the meters of every batcher to the registries Spring Boot binds {@link MeterBinder}s to: each
 * {@link Batcher} bean that exists when the registry is bound (a lazy one created later is bound only if
 * the factory made it), and every batcher the {@link BatcherFactory} creates, before or after startup.
 * {@link BatcherMetrics} binds a batcher to a registry once, so an application that also calls
 * {@code BatcherMetrics.monitor} on the same registry counts nothing twice.
 */
public class BatcherMeterBinder implements MeterBinder, BeanFactoryAware {
  /** The long-task timer of the sink writes in progress. */
  public static final String WRITE_ACTIVE = "ringbatch.batch.write.active";

  private final BatcherFactory factory;
  private final ObjectProvider<Batcher<?, ?>> beans;
  private final boolean itemWaits;
  private final @Nullable WriteTracker writes;
  private volatile @Nullable ConfigurableListableBeanFactory beanFactory;

  /** Binds every meter, item waits included. */
  public BatcherMeterBinder(BatcherFactory factory, ObjectProvider<Batcher<?, ?>> beans) {
    this(factory, beans, true);
  }

  /** Binds every meter; the item-wait meters only if {@code itemWaits} ({@code ringbatch.metrics.item-waits}). */
  public BatcherMeterBinder(BatcherFactory factory, ObjectProvider<Batcher<?, ?>> beans, boolean itemWaits) {
    this(factory, beans, itemWaits, null);
  }

  /**
   * Binds every meter, and with {@code writes} the long-task timer {@value #WRITE_ACTIVE} of each batcher the
   * factory made: its sink writes in progress, tagged {@code name} and {@code sink=sync|async}.
   */
  public BatcherMeterBinder(BatcherFactory factory, ObjectProvider<Batcher<?, ?>> beans, boolean itemWaits,
      @Nullable WriteTracker writes) {
    this.factory = factory;
    this.beans = beans;
    this.itemWaits = itemWaits;
    this.writes = writes;
  }

  @Override
  public void setBeanFactory(BeanFactory beanFactory) {
    this.beanFactory = beanFactory instanceof ConfigurableListableBeanFactory listable ? listable : null;
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    factory.whenCreated(batcher -> bind(registry, batcher));
    // A factory batcher declared as a bean is bound above already: binding it twice would count each write twice
    java.util.Set<Batcher<?, ?>> fromFactory =
        java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
    fromFactory.addAll(factory.created());
    BatcherLifecycle.singletons(beanFactory, beans).filter(batcher -> !fromFactory.contains(batcher))
        .forEach(batcher -> {
          factory.reserve(batcher); // a name clash fails here with the starter's message, as at the lifecycle's start
          bind(registry, batcher);
        });
  }

  private void bind(MeterRegistry registry, Batcher<?, ?> batcher) {
    BatcherMetrics metrics = new BatcherMetrics(batcher, Tags.empty(), itemWaits);
    metrics.bindTo(registry);
    factory.whenRetired(batcher, metrics::close); // a batcher its owner closes leaves the meters; one closed on shutdown stays
    WritesInProgress inProgress = writes == null ? null : writes.of(batcher.name());
    if (inProgress != null && !batcher.isClosed()) {
      bindWriteActive(registry, batcher, inProgress);
    }
  }

  /** Registers the long-task timer fed by the batcher's writes; removes it when the batcher closes. */
  private static void bindWriteActive(MeterRegistry registry, Batcher<?, ?> batcher, WritesInProgress inProgress) {
    LongTaskTimer active = LongTaskTimer.builder(WRITE_ACTIVE)
        .description("Sink writes in progress, and how long each has run")
        .tags("name", batcher.name(), "sink", inProgress.async ? "async" : "sync").register(registry);
    WritesInProgress.Listener listener = () -> {
      LongTaskTimer.Sample sample = active.start();
      return sample::stop;
    };
    inProgress.addListener(listener);
    batcher.addStatsRecorder(new StatsRecorder() {
      @Override
      public void recordClosed(CloseReport report) {
        inProgress.removeListener(listener);
        registry.remove(active);
      }
    });
  }
}
