package dev.ringbatch.spring.boot;

import static java.util.Objects.requireNonNull;

import dev.ringbatch.Adaptive;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.RetryPolicy;
import dev.ringbatch.spring.boot.BatcherProperties.Retry;
import dev.ringbatch.spring.boot.BatcherProperties.Settings;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.function.Consumer;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.core.env.Environment;

/**
 * Maps {@code ringbatch.*} properties and {@link BatcherConfigCustomizer}s onto {@link BatcherConfig.Builder},
 * turning each builder refusal into an {@link InvalidConfigurationPropertyValueException} that names the
 * property the user set and its value. Stateless apart from what it is given; thread-safe.
 */
final class PropertiesConfigMapper {
  /** Of two properties the user set, the one from the property source that takes precedence. */
  @FunctionalInterface
  interface Precedence {
    /** Takes the first when it cannot tell. */
    String winner(String first, String second);

    /** Without an environment: the first. */
    Precedence NONE = (first, second) -> first;

    /** The one found first in {@code environment}'s property sources, highest precedence first. */
    static Precedence of(Environment environment) {
      return (first, second) -> {
        // adapt, not of: a batcher's name may have capitals ("orderEvents"), which Boot binds as a map key
        ConfigurationPropertyName a = ConfigurationPropertyName.adapt(first, '.');
        ConfigurationPropertyName b = ConfigurationPropertyName.adapt(second, '.');
        for (ConfigurationPropertySource source : ConfigurationPropertySources.get(environment)) {
          if (source.getConfigurationProperty(a) != null) {
            return first;
          }
          if (source.getConfigurationProperty(b) != null) {
            return second;
          }
        }
        return first;
      };
    }
  }

  private final BatcherProperties properties;
  private final List<BatcherConfigCustomizer> customizers;
  private final Precedence precedence;

  PropertiesConfigMapper(BatcherProperties properties, List<BatcherConfigCustomizer> customizers,
      Precedence precedence) {
    this.properties = requireNonNull(properties, "properties");
    this.customizers = List.copyOf(customizers);
    this.precedence = requireNonNull(precedence, "precedence");
  }

  /** Checks the shutdown budget, the defaults and every configured batcher, used or not. */
  void checkAll() {
    requirePositive("ringbatch.shutdown-timeout", properties.getShutdownTimeout());
    config("ringbatch.defaults", properties.getDefaults(), null, null);
    requireShards("ringbatch.defaults.shards", properties.getDefaults().getShards());
    for (String name : properties.getBatchers().keySet()) {
      config(name);
      shards(name);
    }
  }

  /** The configuration of the batcher {@code name}: defaults, its own properties, then its customizers. */
  BatcherConfig config(String name) {
    return config("ringbatch.batchers." + name, properties.getBatchers().get(name), name, properties.getDefaults());
  }

  /**
   * What to throw for {@code refusal}, which building the batcher {@code name} threw: naming the ring-size
   * property with its value if the refusal is about the rings' size (rings too large for the heap, checked only
   * when they are allocated) and a property set it, else the shards property if one set that; else
   * {@code refusal} itself.
   */
  RuntimeException blameRingSize(String name, IllegalArgumentException refusal) {
    Settings own = properties.getBatchers().get(name);
    Integer ring = valueOf(own, properties.getDefaults(), Settings::getRingSize);
    Integer shards = valueOf(own, properties.getDefaults(), Settings::getShards);
    String message = refusal.getMessage();
    if (message == null || !message.startsWith("ringSize ") && !message.startsWith("shards ")
        || ring == null && shards == null) {
      return refusal;
    }
    String prefix = "ringbatch.batchers." + name;
    String property = ring != null ? lastSet(prefix, own, "ring-size", Settings::getRingSize) : shardsKey(name);
    RuntimeException blamed = new InvalidConfigurationPropertyValueException(property, ring != null ? ring : shards,
        message);
    blamed.addSuppressed(refusal); // its cause is set (null) by its constructor: the refusal's trace kept here
    return blamed;
  }

  /** Refuses a budget that is null, zero or negative: it would abandon every held item at once. */
  static void requirePositive(String property, @Nullable Duration value) {
    if (value == null || value.isZero() || value.isNegative()) {
      String key = property.substring(property.lastIndexOf('.') + 1);
      throw new InvalidConfigurationPropertyValueException(property, String.valueOf(value),
          key + " must be positive but was " + value);
    }
  }

  /** The shards of batcher {@code name}: its own property, else the default's, else 1. */
  int shards(String name) {
    Settings own = properties.getBatchers().get(name);
    Integer shards = own != null && own.getShards() != null ? own.getShards() : properties.getDefaults().getShards();
    String property = shardsKey(name);
    if (shards == null) {
      return 1;
    }
    requireShards(property, shards);
    return shards;
  }

  /** The property that sets the shards of batcher {@code name}: its own if set, else the default's. */
  String shardsKey(String name) {
    Settings own = properties.getBatchers().get(name);
    return own != null && own.getShards() != null ? "ringbatch.batchers." + name + ".shards"
        : "ringbatch.defaults.shards";
  }

  private static void requireShards(String property, @Nullable Integer shards) {
    if (shards != null && shards < 1) {
      throw new InvalidConfigurationPropertyValueException(property, shards,
          "shards must be at least 1 but was " + shards);
    }
  }

  /**
   * Builds the configuration of {@code prefix}: the defaults (if given), then {@code own}, then the
   * customizers of {@code name}.
   */
  BatcherConfig config(String prefix, @Nullable Settings own, @Nullable String name,
      @Nullable Settings defaults) {
    BatcherConfig.Builder builder = fromProperties(prefix, own, name, defaults);
    boolean customized = false;
    if (name != null) {
      for (BatcherConfigCustomizer customizer : customizers) {
        if (customizer.name().equals(name)) {
          customizer.customize(builder);
          customized = true;
        }
      }
    }
    try {
      return builder.build();
    } catch (IllegalStateException e) {
      if (customized && buildsWithoutCustomizers(prefix, own, name, defaults)) {
        throw customizerMistake(name, e);
      }
      throw blame(prefix, own, name, defaults, e);
    }
  }

  private boolean buildsWithoutCustomizers(String prefix, @Nullable Settings own, @Nullable String name,
      @Nullable Settings defaults) {
    try {
      fromProperties(prefix, own, name, defaults).build();
      return true;
    } catch (IllegalStateException e) {
      return false;
    }
  }

  /** The properties' refusal of a configuration they alone make invalid: the key of the rule that failed. */
  private RuntimeException blame(String prefix, @Nullable Settings own, @Nullable String name,
      @Nullable Settings defaults, IllegalStateException e) {
    Duration linger = valueOf(own, defaults, Settings::getLinger);
    if (String.valueOf(e.getMessage()).startsWith("linger (") && linger != null) {
      return new InvalidConfigurationPropertyValueException(lastSet(prefix, own, "linger", Settings::getLinger),
          linger, e.getMessage()); // an adaptive batcher chooses its own linger
    }
    // maxBatchSize > ringSize: blame the one the user set, or of the two the one from the source that takes
    // precedence (a ring size on the command line over a batch size from application.yml), with its value
    Object batch = valueOf(own, defaults, Settings::getMaxBatchSize);
    Object ring = valueOf(own, defaults, Settings::getRingSize);
    String batchProperty = lastSet(prefix, own, "max-batch-size", Settings::getMaxBatchSize);
    String ringProperty = lastSet(prefix, own, "ring-size", Settings::getRingSize);
    boolean blameBatch = batch != null
        && (ring == null || precedence.winner(batchProperty, ringProperty).equals(batchProperty));
    String property = blameBatch ? batchProperty : ringProperty;
    Object value = blameBatch ? batch : ring;
    if (value == null) { // neither is a property: a customizer set them
      return customizerMistake(name, e);
    }
    return new InvalidConfigurationPropertyValueException(property, value, e.getMessage());
  }

  private static IllegalStateException customizerMistake(@Nullable String name, IllegalStateException e) {
    return new IllegalStateException("the BatcherConfigCustomizer of batcher '" + name + "' made an invalid"
        + " configuration: " + e.getMessage(), e);
  }

  /** The builder of {@code prefix} from the properties alone: the defaults (if given), then {@code own}. */
  private BatcherConfig.Builder fromProperties(String prefix, @Nullable Settings own, @Nullable String name,
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
      if (Boolean.FALSE.equals(own.getBlockWithoutTimeout()) && own.getSubmitTimeout() == null && defaults != null
          && Boolean.TRUE.equals(defaults.getBlockWithoutTimeout())) {
        builder.submitTimeout(BatcherConfig.ofDefaults().submitTimeout()); // undoes the true of ringbatch.defaults
      }
    }
    applyAdaptive(builder, prefix, own, defaults);
    if (retrySet) {
      try {
        builder.retryPolicy(retry.build());
      } catch (IllegalStateException e) {
        // maxBackoff below initialBackoff: blame max-backoff if a property set it, else the initial-backoff that
        // rose above its default
        Function<Settings, @Nullable Object> maxBackoff = s -> s.getRetry().getMaxBackoff();
        Function<Settings, @Nullable Object> blamed = valueOf(own, defaults, maxBackoff) != null ? maxBackoff
            : s -> s.getRetry().getInitialBackoff();
        String key = blamed == maxBackoff ? "retry.max-backoff" : "retry.initial-backoff";
        throw new InvalidConfigurationPropertyValueException(lastSet(prefix, own, key, blamed),
            valueOf(own, defaults, blamed), e.getMessage());
      }
    }
    if (name != null && valueOf(own, defaults, Settings::getConsumerThread) == ConsumerThread.VIRTUAL) {
      builder.threadFactory(VirtualThreads.factory("ringbatch-" + name + "-"));
    }
    return builder;
  }

  /**
   * @throws InvalidConfigurationPropertyValueException if {@code max-batch-bytes} is set for the batcher
   *     {@code name} (its own or the defaults'), saying what to do {@code instead}
   */
  void requireNoByteLimitProperty(String name, String instead) {
    Settings own = properties.getBatchers().get(name);
    Long bytes = valueOf(own, properties.getDefaults(), Settings::getMaxBatchBytes);
    if (bytes != null) {
      String property = lastSet("ringbatch.batchers." + name, own, "max-batch-bytes", Settings::getMaxBatchBytes);
      throw new InvalidConfigurationPropertyValueException(property, bytes, "max-batch-bytes needs a weigher, which"
          + " batcher '" + name + "' is created without: " + instead + (property.startsWith("ringbatch.defaults.")
          ? " (set it under ringbatch.batchers.<name>. for the batchers created with a weigher only)" : ""));
    }
  }

  /** The property, in {@code own} if set there, else in the defaults. */
  private static String lastSet(String prefix, @Nullable Settings own, String key,
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

  /**
   * The adaptive keys, each from {@code own} or else the defaults: a goal, its p99 target (latency only) and the
   * longest linger it may choose. Without a goal the limits tune themselves for throughput unless a linger fixes
   * them, so a longest linger alone caps that default. A misfit names the key where it was set.
   */
  private static void applyAdaptive(BatcherConfig.Builder b, String prefix, @Nullable Settings own,
      @Nullable Settings defaults) {
    Adaptive.Goal goal = valueOf(own, defaults, Settings::getAdaptive);
    Duration p99 = valueOf(own, defaults, Settings::getAdaptiveP99);
    Duration maxLinger = valueOf(own, defaults, Settings::getAdaptiveMaxLinger);
    String p99Key = lastSet(prefix, own, "adaptive-p99", Settings::getAdaptiveP99);
    String maxLingerKey = lastSet(prefix, own, "adaptive-max-linger", Settings::getAdaptiveMaxLinger);
    String goalKey = lastSet(prefix, own, "adaptive", Settings::getAdaptive);
    if (goal == null) {
      if (p99 != null) {
        throw new InvalidConfigurationPropertyValueException(p99Key, p99, "needs adaptive=latency");
      }
      if (maxLinger == null) {
        return; // the builder's default: throughput, unless a linger fixes the limits
      }
      if (valueOf(own, defaults, Settings::getLinger) != null) {
        if (own != null && own.getLinger() != null && own.getAdaptiveMaxLinger() == null) {
          return; // the batcher's own linger fixes its limits: the defaults' cap of the tuning does not apply
        }
        throw new InvalidConfigurationPropertyValueException(maxLingerKey, maxLinger, "needs limits that tune"
            + " themselves, but " + lastSet(prefix, own, "linger", Settings::getLinger) + " fixes them");
      }
      goal = Adaptive.Goal.THROUGHPUT; // the default mode, which the longest linger caps
    }
    Adaptive adaptive;
    if (goal == Adaptive.Goal.LATENCY) {
      if (p99 == null) {
        throw new InvalidConfigurationPropertyValueException(goalKey, "latency",
            "latency needs a p99 target at " + prefix + ".adaptive-p99");
      }
      try {
        adaptive = Adaptive.latency(p99);
      } catch (IllegalArgumentException e) {
        throw new InvalidConfigurationPropertyValueException(p99Key, p99, e.getMessage());
      }
    } else {
      if (own != null && own.getAdaptiveP99() != null) { // one inherited from the defaults does not apply here
        throw new InvalidConfigurationPropertyValueException(p99Key, p99, "a p99 target needs adaptive=latency, not "
            + goal.name().toLowerCase(Locale.ROOT) + " (" + goalKey + ")");
      }
      adaptive = Adaptive.throughput();
    }
    if (maxLinger != null) {
      try {
        adaptive = adaptive.withMaxLinger(maxLinger);
      } catch (IllegalArgumentException e) {
        throw new InvalidConfigurationPropertyValueException(maxLingerKey, maxLinger, e.getMessage());
      }
    }
    b.adaptive(adaptive);
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
}
