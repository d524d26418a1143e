package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringbatch.AsyncBatchSink;
import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.core.env.SystemEnvironmentPropertySource;

/**
 * Bad or mistyped {@code ringbatch.*} properties fail startup, naming the property and its value; settings that
 * apply to nothing are reported.
 */
@ExtendWith(OutputCaptureExtension.class)
class StartupValidationTest {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class));

  @Test
  void shutdownTimeout_negative_failsStartupNamingTheProperty() {
    runner.withPropertyValues("ringbatch.shutdown-timeout=-5s")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .isInstanceOf(InvalidConfigurationPropertyValueException.class)
            .hasMessage("Property ringbatch.shutdown-timeout with value 'PT-5S' is invalid: "
                + "shutdown-timeout must be positive but was PT-5S"));
  }

  @Test
  void shutdownTimeout_zero_failsStartupNamingTheProperty() {
    runner.withPropertyValues("ringbatch.shutdown-timeout=0s")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .isInstanceOf(InvalidConfigurationPropertyValueException.class)
            .hasMessage("Property ringbatch.shutdown-timeout with value 'PT0S' is invalid: "
                + "shutdown-timeout must be positive but was PT0S"));
  }

  @Test
  void shutdownTimeout_positive_starts() {
    runner.withPropertyValues("ringbatch.shutdown-timeout=1ms")
        .run(context -> assertThat(context).hasNotFailed().hasSingleBean(BatcherLifecycle.class));
  }

  @Test
  void unknownBatcherKey_failsStartupNamingItAndTheNearestValidOne() {
    runner.withPropertyValues("ringbatch.batchers.audit.ring-sise=1000")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .isInstanceOf(InvalidConfigurationPropertyValueException.class)
            .hasMessage("Property ringbatch.batchers.audit.ring-sise with value '1000' is invalid: "
                + "ring-sise is not a batcher setting; the nearest is ring-size"));
  }

  @Test
  void unknownRetryKeyInTheDefaults_failsStartupNamingTheNearestRetryKey() {
    runner.withPropertyValues("ringbatch.defaults.retry.max-atempts=3")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .isInstanceOf(InvalidConfigurationPropertyValueException.class)
            .hasMessage("Property ringbatch.defaults.retry.max-atempts with value '3' is invalid: "
                + "retry.max-atempts is not a batcher setting; the nearest is retry.max-attempts"));
  }

  @Test
  void knownKeysInAnyRelaxedForm_start() {
    runner.withPropertyValues("ringbatch.batchers.audit.ringSize=64", "ringbatch.batchers.audit.max_batch_size=8",
            "ringbatch.batchers[billing].retry.maxAttempts=2", "ringbatch.defaults.linger=1ms")
        .run(context -> {
          assertThat(context).hasNotFailed();
          assertThat(context.getBean(BatcherFactory.class).config("audit").ringSize()).isEqualTo(64);
        });
  }

  @Test
  void knownKeysAsEnvironmentVariables_start() {
    runner.withInitializer(context -> context.getEnvironment().getPropertySources().addFirst(
            new SystemEnvironmentPropertySource(StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME,
                Map.of("RINGBATCH_DEFAULTS_RING_SIZE", "2048", "RINGBATCH_BATCHERS_AUDIT_RETRY_MAX_ATTEMPTS", "2",
                    "RINGBATCH_BATCHERS_AUDIT_MAXBATCHSIZE", "8"))))
        .run(context -> {
          assertThat(context).hasNotFailed();
          assertThat(context.getBean(BatcherFactory.class).config("audit").ringSize()).isEqualTo(2048);
          assertThat(context.getBean(BatcherFactory.class).config("audit").limits().maxBatchSize()).isEqualTo(8);
          assertThat(context.getBean(BatcherFactory.class).config("audit").retryPolicy().maxAttempts()).isEqualTo(2);
        });
  }

  @Test
  void ringSizeOnTheCommandLine_belowTheBatchSizeOfTheFile_blamesTheRingSize() {
    runner.withPropertyValues("ringbatch.batchers.events.max-batch-size=1000") // as in application.yml
        .withInitializer(context -> context.getEnvironment().getPropertySources().addFirst(
            new MapPropertySource("commandLineArgs", Map.of("ringbatch.batchers.events.ring-size", "512"))))
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .isInstanceOf(InvalidConfigurationPropertyValueException.class)
            .hasMessage("Property ringbatch.batchers.events.ring-size with value '512' is invalid: "
                + "maxBatchSize (1000) must not exceed ringSize (512)"));
  }

  @Test
  void batchSizeOnTheCommandLine_aboveTheRingSizeOfTheFile_blamesTheBatchSize() {
    runner.withPropertyValues("ringbatch.defaults.ring-size=512")
        .withInitializer(context -> context.getEnvironment().getPropertySources().addFirst(
            new MapPropertySource("commandLineArgs", Map.of("ringbatch.batchers.events.max-batch-size", "1000"))))
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .isInstanceOf(InvalidConfigurationPropertyValueException.class)
            .hasMessage("Property ringbatch.batchers.events.max-batch-size with value '1000' is invalid: "
                + "maxBatchSize (1000) must not exceed ringSize (512)"));
  }

  @Test
  void adaptiveKeys_fromTheDefaultsAndTheBatcher_makeAnAdaptiveConfig() {
    runner.withPropertyValues("ringbatch.defaults.adaptive=latency", "ringbatch.defaults.adaptive-p99=50ms",
            "ringbatch.batchers.audit.adaptive-p99=20ms",
            "ringbatch.batchers.audit.adaptive-max-linger=300us", "ringbatch.batchers.bulk.adaptive=throughput")
        .run(context -> {
          assertThat(context).hasNotFailed();
          BatcherFactory factory = context.getBean(BatcherFactory.class);
          assertThat(factory.config("audit").adaptive()).isEqualTo(
              dev.ringbatch.Adaptive.latency(Duration.ofMillis(20)).withMaxLinger(Duration.ofNanos(300_000)));
          assertThat(factory.config("bulk").adaptive()).isEqualTo(dev.ringbatch.Adaptive.throughput());
          assertThat(factory.config("bulk").limits().maxBatchSize()).isEqualTo(4096); // the tuning's cap under the default ring
        });
  }

  @Test
  void adaptiveMaxLingerAlone_capsTheDefaultTuning_andWithALingerFailsStartupNamingBothKeys() {
    runner.withPropertyValues("ringbatch.batchers.bulk.adaptive-max-linger=200us",
            "ringbatch.defaults.adaptive-max-linger=50us", "ringbatch.batchers.audit.ring-size=64",
            "ringbatch.batchers.fixed.linger=2ms")
        .run(context -> {
          assertThat(context).hasNotFailed();
          BatcherFactory factory = context.getBean(BatcherFactory.class);
          assertThat(factory.config("bulk").adaptive()) // the limits tune themselves by default: the cap applies
              .isEqualTo(dev.ringbatch.Adaptive.throughput().withMaxLinger(Duration.ofNanos(200_000)));
          assertThat(factory.config("audit").adaptive())
              .isEqualTo(dev.ringbatch.Adaptive.throughput().withMaxLinger(Duration.ofNanos(50_000)));
          assertThat(factory.config("fixed").adaptive()).as("its own linger fixes its limits: the defaults' cap of"
              + " the tuning does not apply").isNull();
          assertThat(factory.config("fixed").limits().linger()).isEqualTo(Duration.ofMillis(2));
        });
    runner.withPropertyValues("ringbatch.batchers.bulk.adaptive-max-linger=200us",
            "ringbatch.defaults.linger=0ms")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .isInstanceOf(InvalidConfigurationPropertyValueException.class)
            .hasMessage("Property ringbatch.batchers.bulk.adaptive-max-linger with value 'PT0.0002S' is invalid: "
                + "needs limits that tune themselves, but ringbatch.defaults.linger fixes them"));
  }

  @Test
  void adaptiveLatencyWithoutATarget_failsStartupNamingTheKey() {
    runner.withPropertyValues("ringbatch.batchers.audit.adaptive=latency")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .isInstanceOf(InvalidConfigurationPropertyValueException.class)
            .hasMessage("Property ringbatch.batchers.audit.adaptive with value 'latency' is invalid: "
                + "latency needs a p99 target at ringbatch.batchers.audit.adaptive-p99"));
  }

  @Test
  void aP99TargetWithoutLatencyMode_andALingerWithAdaptive_failStartupNamingTheKey() {
    runner.withPropertyValues("ringbatch.batchers.audit.adaptive-p99=5ms")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .isInstanceOf(InvalidConfigurationPropertyValueException.class)
            .hasMessage("Property ringbatch.batchers.audit.adaptive-p99 with value 'PT0.005S' is invalid: "
                + "needs adaptive=latency"));
    runner.withPropertyValues("ringbatch.batchers.audit.adaptive=throughput", "ringbatch.defaults.linger=2ms")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .isInstanceOf(InvalidConfigurationPropertyValueException.class)
            .hasMessageStartingWith("Property ringbatch.defaults.linger with value 'PT0.002S' is invalid: "
                + "linger (PT0.002S) cannot be set with adaptive"));
  }

  /** Spring Boot compares status codes by letters and digits, upper case: each of these is UP to its HTTP mapper. */
  @ParameterizedTest
  @ValueSource(strings = {"UP", "up", "Up", "u-p"})
  void degradedStatus_thatBootReadsAsUp_failsStartupNamingTheProperty(String code) {
    runner.withConfiguration(AutoConfigurations.of(BatcherHealthContributorAutoConfiguration.class))
        .withPropertyValues("ringbatch.health.degraded-status=" + code)
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .isInstanceOf(InvalidConfigurationPropertyValueException.class)
            .hasMessage("Property ringbatch.health.degraded-status with value '" + code + "' is invalid: "
                + "degraded-status must name a status other than UP, such as OUT_OF_SERVICE"));
  }
  /**
   * A camel-case batcher name ({@code create("orderEvents", ...)}) binds from application.properties (Boot keeps
   * a map key's case), but when its batch is larger than its ring the refusal is Boot's "Configuration property
   * name ... is not valid", about a name Boot just bound, instead of the rule and the value.
   */
  @Test
  void camelCaseBatcherName_batchLargerThanRing_failsStartupWithTheRule_notAnInvalidName() {
    runner.withPropertyValues("ringbatch.batchers.orderEvents.ring-size=64",
            "ringbatch.batchers.orderEvents.max-batch-size=128")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .isInstanceOf(InvalidConfigurationPropertyValueException.class)
            .hasMessageContaining("maxBatchSize (128) must not exceed ringSize (64)"));
  }

  /** {@code ringbatch.batcher.} (no s) is a typo of the one map the user configures: the batcher keeps its defaults. */
  @Test
  void keyUnderAMistypedBatchersPrefix_failsStartupNamingIt() {
    runner.withPropertyValues("ringbatch.batcher.events.ring-size=64")
        .run(context -> assertThat(context.getStartupFailure()).as("startup failure")
            .isNotNull().rootCause().hasMessageContaining("ringbatch.batcher.events.ring-size"));
  }

  /** A mistyped shutdown budget leaves the 30 s default in force, without a word. */
  @Test
  void mistypedShutdownTimeout_failsStartupNamingIt() {
    runner.withPropertyValues("ringbatch.shutdown-timout=120s")
        .run(context -> assertThat(context.getStartupFailure()).as("startup failure")
            .isNotNull().rootCause().hasMessageContaining("ringbatch.shutdown-timout")
            .hasMessageContaining("the nearest is ringbatch.shutdown-timeout"));
  }

  /** A mistyped health key leaves the 30 s max-write-age in force, without a word. */
  @Test
  void mistypedHealthKey_failsStartupNamingIt() {
    runner.withPropertyValues("ringbatch.health.max-write-aeg=5m")
        .run(context -> assertThat(context.getStartupFailure()).as("startup failure")
            .isNotNull().rootCause().hasMessageContaining("ringbatch.health.max-write-aeg")
            .hasMessageContaining("the nearest is ringbatch.health.max-write-age"));
  }

  /** Every key outside the batchers' settings, in each form Boot binds, starts the application. */
  @Test
  void everyOtherSetting_inEachFormBootBinds_startsTheApplication() {
    runner.withPropertyValues("ringbatch.enabled=true", "ringbatch.shutdown-timeout=20s",
            "ringbatch.metrics.enabled=false", "ringbatch.metrics.itemWaits=false",
            "ringbatch.health.degraded-status=DEGRADED", "ringbatch.health.ring_full_for=5s",
            "ringbatch.health.failure-ratio=0.4", "ringbatch.health.failure-window=2m",
            "ringbatch.health.max-write-age=1m", "ringbatch.health.failure-min-items=5",
            "ringbatch.web.overload-mapping.enabled=false", "ringbatch.web.overload-mapping.retry-after=2s",
            "ringbatch.web.data-access-mapping.enabled=false", "ringbatch.jdbc.exception-translation.enabled=true",
            "ringbatch.observations.enabled=true", "ringbatch.defaults.retry.max-attempts=2",
            "ringbatch.batchers.events.retry.initial-backoff=10ms")
        .run(context -> assertThat(context).hasNotFailed());
  }

  /** Durations of the health read without a unit are seconds too, as the failure window always was. */
  @Test
  void unitlessHealthDurations_readAsSeconds() {
    runner.withPropertyValues("ringbatch.health.ring-full-for=10", "ringbatch.health.max-write-age=30")
        .run(context -> {
          BatcherProperties.Health health = context.getBean(BatcherProperties.class).getHealth();
          assertThat(health.getRingFullFor()).isEqualTo(Duration.ofSeconds(10));
          assertThat(health.getMaxWriteAge()).isEqualTo(Duration.ofSeconds(30));
        });
  }

  /**
   * Two keys of one block, both documented with seconds-scale defaults ({@code 30s}, {@code 1m}): a unit-less
   * failure-window is seconds, a unit-less shutdown-timeout milliseconds. {@code ringbatch.shutdown-timeout=30}
   * gives the drain 30 ms and abandons what the batchers hold.
   */
  @Test
  void unitlessShutdownTimeout_readAsSeconds_likeTheUnitlessFailureWindow() {
    runner.withPropertyValues("ringbatch.shutdown-timeout=30", "ringbatch.health.failure-window=30")
        .run(context -> {
          BatcherProperties properties = context.getBean(BatcherProperties.class);
          assertThat(properties.getHealth().getFailureWindow()).isEqualTo(Duration.ofSeconds(30));
          assertThat(properties.getShutdownTimeout()).isEqualTo(Duration.ofSeconds(30));
        });
  }

  private final ApplicationContextRunner withEvents = runner.withUserConfiguration(Events.class);

  /** A batcher created without a weigher. */
  @Configuration(proxyBeanMethods = false)
  static class Events {
    @Bean
    Batcher<String, Void> events(BatcherFactory batchers) {
      return batchers.create("events", BatchSink.noResult(items -> { }));
    }
  }

  /** A byte limit needs a weigher: without one, startup fails naming the property, not the core's Batcher.of. */
  @Test
  void byteLimitOfTheBatcher_createWithoutWeigher_failsStartupNamingTheProperty() {
    withEvents.withPropertyValues("ringbatch.batchers.events.max-batch-bytes=1000000")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .isInstanceOf(InvalidConfigurationPropertyValueException.class)
            .hasMessageContaining("ringbatch.batchers.events.max-batch-bytes"));
  }

  @Test
  void byteLimit_asyncAndShardedBatchers_failStartupNamingTheProperty() {
    runner.withPropertyValues("ringbatch.batchers.async.max-batch-bytes=1000")
        .run(context -> {
          BatcherFactory factory = context.getBean(BatcherFactory.class);
          assertThatThrownBy(() -> factory.createAsync("async",
                  (AsyncBatchSink<String, Void>) batch -> CompletableFuture.completedFuture(null)))
              .isInstanceOf(InvalidConfigurationPropertyValueException.class)
              .hasMessageContaining("ringbatch.batchers.async.max-batch-bytes")
              .hasMessageContaining("asynchronous");
          assertThatThrownBy(() -> factory.createSharded("async", shard -> BatchSink.<String>noResult(items -> { })))
              .isInstanceOf(InvalidConfigurationPropertyValueException.class)
              .hasMessageContaining("ringbatch.batchers.async.max-batch-bytes")
              .hasMessageContaining("sharded");
          assertThat(factory.created()).isEmpty();
        });
  }

  @Test
  void byteLimitOfTheDefaults_createWithoutWeigher_failsStartupNamingTheDefaultsProperty() {
    withEvents.withPropertyValues("ringbatch.defaults.max-batch-bytes=1000000")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .isInstanceOf(InvalidConfigurationPropertyValueException.class)
            .hasMessageContaining("ringbatch.defaults.max-batch-bytes"));
  }

  @Configuration(proxyBeanMethods = false)
  static class HandMade {
    @Bean
    Batcher<String, Void> audit() {
      return Batcher.of("audit", BatcherConfig.ofDefaults(), BatchSink.noResult(items -> { }));
    }
  }

  /** Settings for a Batcher bean built by hand, which reads none, are reported as settings for no batcher are. */
  @Test
  void propertiesForAHandMadeBatcherBean_thatItDoesNotRead_areReportedAtStartup(CapturedOutput output) {
    runner.withUserConfiguration(HandMade.class)
        .withPropertyValues("ringbatch.batchers.audit.ring-size=64")
        .run(context -> {
          assertThat(context).hasNotFailed();
          assertThat(context.getBean("audit", Batcher.class).config().ringSize()).isEqualTo(16_384); // ignored
          assertThat(output).contains("ringbatch.batchers.audit");
        });
  }

  /** In a properties file a dot is a level: {@code ringbatch.shutdown.timeout} binds nothing, and fails startup. */
  @ParameterizedTest
  @ValueSource(strings = {"ringbatch.shutdown.timeout=5", "ringbatch.health.max.write.age=5s",
      "ringbatch.batchers.audit.ring.size=64", "ringbatch.defaults.retry.max.attempts=7"})
  void dottedKeyInAPropertiesFile_thatBootDoesNotBind_failsStartup(String property) {
    runner.withPropertyValues(property).run(context -> assertThat(context.getStartupFailure())
        .as(property + ": bound to nothing, so refused as a typo").isNotNull());
  }

  /**
   * In the application's configuration every key under {@code ringbatch.} is ours: one of our settings one level
   * off binds to nothing, and fails startup.
   */
  @ParameterizedTest
  @ValueSource(strings = {"ringbatch.ring-size=8192", "ringbatch.events.ring-size=64", "ringbatch.item-waits=false",
      "ringbatch.overload-mapping.enabled=true", "ringbatch.loadtest.callers=64"})
  void settingOneLevelOff_orAnyOtherKey_inTheConfiguration_failsStartup(String property) {
    runner.withPropertyValues(property).run(context -> assertThat(context.getStartupFailure())
        .as(property + ": bound to nothing").isNotNull().rootCause()
        .isInstanceOf(InvalidConfigurationPropertyValueException.class)
        .hasMessageContaining(property.substring(0, property.indexOf('='))));
  }

  /**
   * Environment variables and system properties are another tool's too (a Kubernetes service's
   * {@code RINGBATCH_WEB_SERVICE_HOST}, a harness's {@code -Dringbatch.stress.items}): not checked.
   */
  @Test
  void otherToolsKeys_inEnvironmentVariablesAndSystemProperties_areLeftAlone() {
    runner.withSystemProperties("ringbatch.job.name=nightly", "ringbatch.web.mode=x")
        .withInitializer(context -> context.getEnvironment().getPropertySources().addFirst(
            new SystemEnvironmentPropertySource(StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME,
                Map.of("RINGBATCH_WEB_SERVICE_HOST", "10.0.0.1", "RINGBATCH_HOME", "/opt/x"))))
        .run(context -> assertThat(context).hasNotFailed());
  }

  /** A known key with an empty value (an optional override resolving to nothing) binds to null: the default stays. */
  @ParameterizedTest
  @ValueSource(strings = {"ringbatch.defaults.linger=", "ringbatch.batchers.orders.ring-size=${ORDERS_RING_SIZE:}",
      "ringbatch.shutdown-timeout=", "ringbatch.batchers.orders.overflow-policy="})
  void knownKeyWithAnEmptyValue_startsWithTheDefault(String property) {
    runner.withPropertyValues(property).run(context -> {
      assertThat(context).as(property).hasNotFailed();
      assertThat(context.getBean(BatcherProperties.class).getShutdownTimeout()).isEqualTo(Duration.ofSeconds(30));
    });
  }
}
