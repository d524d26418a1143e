package dev.ringbatch.micrometer;

import static java.util.Objects.requireNonNull;

import dev.ringbatch.Batcher;
import dev.ringbatch.CloseReport;
import dev.ringbatch.RejectionReason;
import dev.ringbatch.stats.StatsRecorder;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import java.lang.ref.WeakReference;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;
import org.jspecify.annotations.Nullable;

/**
 * Binds a {@link Batcher}'s meters to a {@link MeterRegistry}. Every meter is tagged {@code name=<batcher>}
 * plus the tags given here:
 *
 * <table>
 *   <caption>Meters</caption>
 *   <tr><th>name</th><th>type</th><th>tags</th><th>meaning</th></tr>
 *   <tr><td>{@code ringbatch.items}</td><td>counter</td><td>{@code result=written|failed|abandoned|rejected}</td>
 *       <td>items by outcome</td></tr>
 *   <tr><td>{@code ringbatch.rejected}</td><td>counter</td><td>{@code reason=full|timeout|interrupted|closed}</td>
 *       <td>refused items by reason</td></tr>
 *   <tr><td>{@code ringbatch.batch.size}</td><td>distribution summary</td><td></td><td>items per batch</td></tr>
 *   <tr><td>{@code ringbatch.batch.write}</td><td>timer</td><td>{@code outcome=success|partial|failure}</td>
 *       <td>time the sink took per batch, retries included</td></tr>
 *   <tr><td>{@code ringbatch.item.wait}</td><td>timer</td><td></td>
 *       <td>time items waited, from their submit or offer call to their batch's first write attempt, one
 *       record per item: count, total, max, and the histogram, percentiles and SLOs the registry configures</td></tr>
 *   <tr><td>{@code ringbatch.batch.retries}</td><td>counter</td><td></td><td>batch writes retried</td></tr>
 *   <tr><td>{@code ringbatch.ring.remaining}</td><td>gauge</td><td></td><td>free ring slots</td></tr>
 *   <tr><td>{@code ringbatch.ring.capacity}</td><td>gauge</td><td></td><td>ring slots</td></tr>
 *   <tr><td>{@code ringbatch.inflight}</td><td>gauge</td><td></td><td>accepted, not yet finished</td></tr>
 *   <tr><td>{@code ringbatch.limits.batch.size}</td><td>gauge</td><td></td><td>the batch size limit in force (an
 *       adaptive batcher's current choice)</td></tr>
 *   <tr><td>{@code ringbatch.limits.linger}</td><td>gauge</td><td></td><td>the linger in force, in seconds (an
 *       adaptive batcher's current choice)</td></tr>
 * </table>
 *
 * <p>Counters and gauges read {@link Batcher#stats()} when the registry is scraped and hold the batcher
 * weakly; the summary, the timers and the item waits are fed by a {@link StatsRecorder} the binder registers.
 * Measuring item waits makes each producer read the clock once per item; turn it off with
 * {@link #BatcherMetrics(Batcher, Iterable, boolean)}.
 *
 * <p>The meters live as long as their binder. A binder you hold keeps them when the batcher closes, reading its
 * final counts (the items its close drained and abandoned among them), so that a push registry's last
 * publication, when the registry closes after the batcher, reports them; they are removed when you
 * {@linkplain #close() close} the binder, or when another batcher of the same name and tags is bound to the
 * registry (a batcher created again under its name takes its meters over). {@link #monitor monitor}, which gives
 * you no binder, closes its binder when the batcher closes: its meters go with the batcher.
 *
 * <p>A batcher is bound to a registry at most once: binding it again to the same registry (a
 * {@code monitor} call in an application whose Spring Boot starter already bound it) is a no-op, so no batch
 * is counted twice; the first binding's tags stay. Binding it to another registry works as usual. Binding a
 * batcher to a registry where a running batcher of the same name and tags is bound fails: the two would share
 * one set of meters.
 *
 * <pre>{@code
 * Batcher<Order, Integer> orders = BatcherMetrics.monitor(registry, Batcher.of("orders", config, sink));
 * }</pre>
 */
public final class BatcherMetrics implements MeterBinder, AutoCloseable {
  static final String PREFIX = "ringbatch.";

  /**
   * The bindings of each registry by meter tags ({@code name} included): who owns which meters. Weak registries;
   * a binding holds its batcher weakly, as its gauges and function counters do, so a closed batcher whose meters
   * stay is not kept alive by them.
   */
  private static final Map<MeterRegistry, Map<Tags, Binding>> BINDINGS = new WeakHashMap<>();

  private final Batcher<?, ?> batcher;
  private final Tags tags;
  private final boolean itemWaits;
  private final List<Meter> meters = new CopyOnWriteArrayList<>();
  private volatile @Nullable MeterRegistry registry;
  private volatile @Nullable Recorder recorder;
  /** The binding this binder made, null for a repeated bind, which owns no meters. */
  private volatile @Nullable Binding binding;
  /** Whether the batcher's close closes this binder ({@link #monitor}'s, which nobody else can close). */
  private final boolean closedWithBatcher;

  /**
   * Creates a binder for {@code batcher}; call {@link #bindTo} to register the meters.
   *
   * @param tags extra tags for every meter, on top of {@code name=<batcher name>}
   */
  public BatcherMetrics(Batcher<?, ?> batcher, Iterable<Tag> tags) {
    this(batcher, tags, true);
  }

  /**
   * Creates a binder for {@code batcher}; call {@link #bindTo} to register the meters.
   *
   * @param tags extra tags for every meter, on top of {@code name=<batcher name>}
   * @param itemWaits whether to register {@code ringbatch.item.wait}, which makes producers read the clock once
   *     per item and the completing thread record each item's wait
   */
  public BatcherMetrics(Batcher<?, ?> batcher, Iterable<Tag> tags, boolean itemWaits) {
    this(batcher, tags, itemWaits, false);
  }

  private BatcherMetrics(Batcher<?, ?> batcher, Iterable<Tag> tags, boolean itemWaits, boolean closedWithBatcher) {
    this.closedWithBatcher = closedWithBatcher;
    this.batcher = requireNonNull(batcher, "batcher");
    this.tags = Tags.of(requireNonNull(tags, "tags")).and("name", batcher.name());
    this.itemWaits = itemWaits;
  }

  /** Binds the meters of {@code batcher} to {@code registry} and returns the batcher unchanged. */
  public static <B extends Batcher<?, ?>> B monitor(MeterRegistry registry, B batcher, String... tags) {
    return monitor(registry, batcher, Tags.of(tags));
  }

  /** Binds the meters of {@code batcher} to {@code registry} and returns the batcher unchanged. */
  public static <B extends Batcher<?, ?>> B monitor(MeterRegistry registry, B batcher, Iterable<Tag> tags) {
    return monitor(registry, batcher, true, tags);
  }

  /**
   * Binds the meters of {@code batcher} to {@code registry}, {@code ringbatch.item.wait} only if {@code itemWaits},
   * and returns the batcher unchanged.
   */
  public static <B extends Batcher<?, ?>> B monitor(MeterRegistry registry, B batcher, boolean itemWaits,
      Iterable<Tag> tags) {
    new BatcherMetrics(batcher, tags, itemWaits, true).bindTo(registry);
    return batcher;
  }

  /**
   * Registers the meters, unless {@code batcher} is already bound to {@code registry} by another binder, or to a
   * {@code CompositeMeterRegistry} that records into it (Spring Boot binds to its composite): then this binder
   * does nothing, and its {@link #close()} removes nothing. (Bound to a registry first and then to a composite
   * over it, a batcher would count twice there: bind to the composite.) The meters of a closed batcher bound
   * with the same name and tags are removed first.
   *
   * @throws IllegalStateException if this binder is already bound, or if a running batcher of the same name
   *     and tags is bound to {@code registry}
   */
  @Override
  public void bindTo(MeterRegistry registry) {
    requireNonNull(registry, "registry");
    synchronized (this) {
      if (this.registry != null) {
        throw new IllegalStateException("BatcherMetrics of batcher '" + batcher.name() + "' is already bound");
      }
      this.registry = registry;
    }
    synchronized (BINDINGS) {
      for (Map.Entry<MeterRegistry, Map<Tags, Binding>> e : BINDINGS.entrySet()) {
        if (e.getKey() == registry || forwardsTo(e.getKey(), registry)) {
          for (Binding other : e.getValue().values()) {
            if (other.batcher.get() == batcher) {
              // bound already, here or through a composite that feeds this registry (Spring Boot binds to its
              // composite): counting its batches twice would be wrong
              return;
            }
          }
        }
      }
      Map<Tags, Binding> bound = BINDINGS.computeIfAbsent(registry, r -> new HashMap<>());
      Binding held = bound.get(tags);
      @Nullable Batcher<?, ?> holder = held == null ? null : held.batcher.get();
      if (holder != null && !holder.isClosed()) {
        this.registry = null;
        throw new IllegalStateException("batcher '" + batcher.name() + "' cannot be bound to " + registry
            + ": another running batcher is bound there with the same name and tags " + tags
            + "; their meters would be one");
      }
      if (held != null) {
        held.remove(registry);
      }
      Binding mine = new Binding(batcher, meters);
      bound.put(tags, mine);
      binding = mine;
      register(registry);
    }
  }

  /** Whether {@code composite} records into {@code registry}, through composites in between. */
  private static boolean forwardsTo(MeterRegistry composite, MeterRegistry registry) {
    if (composite instanceof CompositeMeterRegistry c) {
      for (MeterRegistry child : c.getRegistries()) {
        if (child == registry || forwardsTo(child, registry)) {
          return true;
        }
      }
    }
    return false;
  }

  private void register(MeterRegistry registry) {
    for (String result : new String[] {"written", "failed", "abandoned", "rejected"}) {
      counter(registry, "items", "Items of the batcher by outcome", Tags.of("result", result),
          itemsBy(result));
    }
    for (RejectionReason reason : RejectionReason.values()) {
      counter(registry, "rejected", "Items the batcher refused, by reason",
          Tags.of("reason", reason.name().toLowerCase(Locale.ROOT)), b -> b.stats().rejected(reason));
    }
    gauge(registry, "ring.remaining", "Free slots in the batcher's ring", b -> b.stats().remainingCapacity());
    gauge(registry, "ring.capacity", "Slots in the batcher's ring", b -> b.stats().ringSize());
    gauge(registry, "inflight", "Items accepted and not yet written, failed or abandoned",
        b -> b.stats().inFlight());
    gauge(registry, "limits.batch.size", "The batch size limit in force", b -> b.limits().maxBatchSize());
    meters.add(Gauge.builder(PREFIX + "limits.linger", batcher, b -> seconds(b.limits().linger()))
        .description("The linger in force").baseUnit("seconds").tags(tags).register(registry));
    DistributionSummary sizes = DistributionSummary.builder(PREFIX + "batch.size")
        .description("Items per batch handed to the sink").baseUnit("items").tags(tags)
        .register(registry);
    Timer[] writes = new Timer[Outcome.values().length];
    for (Outcome outcome : Outcome.values()) {
      writes[outcome.ordinal()] = Timer.builder(PREFIX + "batch.write")
          .description("Time the sink took to write a batch, retries included, by outcome")
          .tags(tags).tag("outcome", outcome.tag).register(registry);
      meters.add(writes[outcome.ordinal()]);
    }
    Counter retries = Counter.builder(PREFIX + "batch.retries")
        .description("Batch writes retried by the batcher's retry policy").baseUnit("retries").tags(tags)
        .register(registry);
    meters.add(sizes);
    meters.add(retries);
    @Nullable Timer waits = itemWaits ? registerItemWaits(registry) : null;
    Recorder r = new Recorder(sizes, writes, retries, waits);
    recorder = r;
    batcher.addStatsRecorder(r);
    if (batcher.isClosed() && batcher.closeReport() != null) {
      closed(); // closed before it was bound: no recorder hears of it
    }
  }

  private Timer registerItemWaits(MeterRegistry registry) {
    // A real Timer, fed each item's wait: it honours the registry's histogram, percentile and SLO settings
    // (Spring Boot's management.metrics.distribution.*), and its max is the recent longest wait.
    Timer waits = Timer.builder(PREFIX + "item.wait")
        .description("Time items waited, from their submit or offer call to their batch's first write attempt")
        .tags(tags).register(registry);
    meters.add(waits);
    return waits;
  }

  private static ToDoubleFunction<Batcher<?, ?>> itemsBy(String result) {
    switch (result) {
      case "written":
        return b -> b.stats().written();
      case "failed":
        return b -> b.stats().failed();
      case "abandoned":
        return b -> b.stats().abandoned();
      default:
        return b -> b.stats().rejected();
    }
  }

  private void counter(MeterRegistry registry, String name, String description, Tags extra,
      ToDoubleFunction<Batcher<?, ?>> value) {
    meters.add(FunctionCounter.builder(PREFIX + name, batcher, value).description(description)
        .baseUnit("items").tags(tags.and(extra)).register(registry));
  }

  private void gauge(MeterRegistry registry, String name, String description,
      ToDoubleFunction<Batcher<?, ?>> value) {
    meters.add(Gauge.builder(PREFIX + name, batcher, value).description(description).baseUnit("items")
        .tags(tags).register(registry));
  }

  /** Removes every meter this binder registered from the registry and stops recording. Idempotent. */
  @Override
  public void close() {
    stopRecording();
    MeterRegistry bound = registry;
    Binding mine = binding;
    binding = null;
    if (bound != null && mine != null) {
      synchronized (BINDINGS) {
        Map<Tags, Binding> bindings = BINDINGS.get(bound);
        if (bindings != null && bindings.get(tags) == mine) {
          bindings.remove(tags);
        }
        mine.remove(bound);
      }
    }
  }

  /** The batcher closed: nothing more to record; {@link #monitor}'s binder closes, meters and all. */
  private void closed() {
    if (closedWithBatcher) {
      close();
    } else {
      stopRecording();
    }
  }

  private void stopRecording() {
    Recorder r = recorder;
    recorder = null;
    if (r != null) {
      batcher.removeStatsRecorder(r);
    }
  }

  /** The meters one binder registered for its batcher, which it holds weakly. */
  private static final class Binding {
    final WeakReference<Batcher<?, ?>> batcher;
    private final List<Meter> meters;

    Binding(Batcher<?, ?> batcher, List<Meter> meters) {
      this.batcher = new WeakReference<>(batcher);
      this.meters = meters;
    }

    void remove(MeterRegistry registry) {
      for (Meter meter : meters) {
        registry.remove(meter);
      }
      meters.clear();
    }
  }

  /** The {@code outcome} tag of the write timer: every item written, some failed, or all failed. */
  private enum Outcome {
    SUCCESS("success"), PARTIAL("partial"), FAILURE("failure");

    final String tag;

    Outcome(String tag) {
      this.tag = tag;
    }

    static Outcome of(int size, int failed) {
      return failed == 0 ? SUCCESS : failed >= size ? FAILURE : PARTIAL;
    }
  }

  /** Feeds the summary, the timers, the item waits and the retry counter, until the batcher closes. */
  private final class Recorder implements StatsRecorder {
    private final DistributionSummary sizes;
    private final Timer[] writes;
    private final Counter retries;
    private final @Nullable Timer waits;

    Recorder(DistributionSummary sizes, Timer[] writes, Counter retries, @Nullable Timer waits) {
      this.sizes = sizes;
      this.writes = writes;
      this.retries = retries;
      this.waits = waits;
    }

    @Override
    public boolean recordsItemWaits() {
      return waits != null;
    }

    @Override
    public boolean recordsEachItemWait() {
      return waits != null;
    }

    @Override
    public void recordEachItemWait(long[] waitNanos, int count) {
      Timer w = waits;
      if (w != null) {
        for (int i = 0; i < count; i++) {
          w.record(waitNanos[i], TimeUnit.NANOSECONDS);
        }
      }
    }

    @Override
    public void recordBatch(int size, long weight, long writeNanos, int failed) {
      sizes.record(size);
      writes[Outcome.of(size, failed).ordinal()].record(writeNanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public void recordRetry(int attempt, Throwable cause) {
      retries.increment();
    }

    @Override
    public void recordClosed(CloseReport report) {
      closed();
    }
  }

  /** A duration in seconds, for any duration (toNanos() throws past about 292 years: a linger of FOREVER). */
  private static double seconds(java.time.Duration d) {
    return d.getSeconds() + d.getNano() / 1e9;
  }
}
