package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringbatch.AsyncBatchSink;
import dev.ringbatch.Batch;
import dev.ringbatch.BatchSink;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * A refused startup or create names the property the user set, with its value, never a key nobody set; and a create
 * that fails closes the sink it was given, whichever create it was.
 */
class RefusalsNameTheKeySetTest {
  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class));

  @Test
  void initialBackoffAboveTheDefaultMaxBackoff_failsStartupNamingInitialBackoff() {
    runner.withPropertyValues("ringbatch.batchers.events.retry.initial-backoff=10s")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .isInstanceOf(InvalidConfigurationPropertyValueException.class)
            .hasMessageStartingWith("Property ringbatch.batchers.events.retry.initial-backoff with value 'PT10S'"));
  }

  @Test
  void maxBackoffBelowTheInitialBackoff_failsStartupNamingMaxBackoff() {
    runner.withPropertyValues("ringbatch.batchers.events.retry.max-backoff=1ms")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .isInstanceOf(InvalidConfigurationPropertyValueException.class)
            .hasMessageStartingWith("Property ringbatch.batchers.events.retry.max-backoff with value 'PT0.001S'"));
  }

  @Test
  void defaultShardsOfZero_failsStartupNamingTheKey_withNoBatcherConfigured() {
    runner.withPropertyValues("ringbatch.defaults.shards=0")
        .run(context -> assertThat(context.getStartupFailure()).as("startup with ringbatch.defaults.shards=0")
            .isNotNull().rootCause().isInstanceOf(InvalidConfigurationPropertyValueException.class)
            .hasMessageContaining("ringbatch.defaults.shards"));
  }

  @Test
  void createRefusedForShardsFromTheDefaults_namesTheDefaultsKey() {
    runner.withPropertyValues("ringbatch.defaults.shards=4").run(context -> {
      BatcherFactory factory = context.getBean(BatcherFactory.class);
      assertThatThrownBy(() -> factory.create("events", BatchSink.<String>noResult(items -> { })))
          .hasMessageStartingWith("ringbatch.defaults.shards is 4");
    });
  }

  @Test
  void aRingTooLargeForTheHeap_failsNamingTheRingSizeProperty() {
    runner.withPropertyValues("ringbatch.batchers.big.ring-size=1073741824").run(context -> {
      BatcherFactory factory = context.getBean(BatcherFactory.class);
      assertThatThrownBy(() -> factory.create("big", BatchSink.<String>noResult(items -> { })))
          .isInstanceOf(InvalidConfigurationPropertyValueException.class)
          .hasMessageContaining("ringbatch.batchers.big.ring-size");
    });
  }

  @Test
  void shardedRingsTooLargeForTheHeap_failNamingTheRingSizeProperty() {
    runner.withPropertyValues("ringbatch.batchers.big.shards=64", "ringbatch.batchers.big.ring-size=1048576")
        .run(context -> {
          BatcherFactory factory = context.getBean(BatcherFactory.class);
          assertThatThrownBy(() -> factory.createSharded("big", s -> BatchSink.<String>noResult(items -> { })))
              .isInstanceOf(InvalidConfigurationPropertyValueException.class)
              .hasMessageContaining("ringbatch.batchers.big.ring-size");
        });
  }

  /** A create the byte limit refuses (no weigher) closes the sink it was given, as every failed create does. */
  @Test
  void byteLimitWithoutAWeigher_failsNamingTheProperty_andClosesTheSinkGiven() {
    runner.withPropertyValues("ringbatch.defaults.max-batch-bytes=1000").run(context -> {
      BatcherFactory factory = context.getBean(BatcherFactory.class);
      ClosingSink plain = new ClosingSink();
      AtomicInteger asyncClosed = new AtomicInteger();
      assertThatThrownBy(() -> factory.create("plain", plain))
          .isInstanceOf(InvalidConfigurationPropertyValueException.class)
          .hasMessageContaining("ringbatch.defaults.max-batch-bytes");
      assertThatThrownBy(() -> factory.createAsync("async", new ClosingAsyncSink(asyncClosed)))
          .isInstanceOf(InvalidConfigurationPropertyValueException.class)
          .hasMessageContaining("ringbatch.defaults.max-batch-bytes");
      assertThat(plain.closed).as("create closes the sink it was given").hasValue(1);
      assertThat(asyncClosed).as("createAsync closes the sink it was given").hasValue(1);
      assertThat(factory.created()).isEmpty();
    });
  }

  /** A create refused for the shards its properties set closes the sink given too; a null sink is named. */
  @Test
  void createRefusedForItsShards_closesTheSinkGiven_andANullSinkIsNamed() {
    runner.withPropertyValues("ringbatch.batchers.events.shards=2").run(context -> {
      BatcherFactory factory = context.getBean(BatcherFactory.class);
      ClosingSink sink = new ClosingSink();
      assertThatThrownBy(() -> factory.create("events", sink)).isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("createSharded");
      assertThat(sink.closed).as("the sink given to the refused create is closed").hasValue(1);
      assertThatThrownBy(() -> factory.create("other", (BatchSink<String, Void>) null))
          .isInstanceOf(NullPointerException.class).hasMessageContaining("sink");
    });
  }

  private record ClosingAsyncSink(AtomicInteger closed) implements AsyncBatchSink<String, Void>, AutoCloseable {
    @Override
    public java.util.concurrent.CompletableFuture<?> write(Batch<String, Void> batch) {
      batch.completeRemaining(null);
      return java.util.concurrent.CompletableFuture.completedFuture(null);
    }

    @Override
    public void close() {
      closed.incrementAndGet();
    }
  }

  static final class ClosingSink implements BatchSink<String, Void>, AutoCloseable {
    final AtomicInteger closed = new AtomicInteger();

    @Override
    public void write(Batch<String, Void> batch) {
      batch.completeRemaining(null);
    }

    @Override
    public void close() {
      closed.incrementAndGet();
    }
  }

  static final class RefusingDecorator implements BatchSinkDecorator {
    @Override
    public <T, R> BatchSink<T, R> decorate(String name, BatchSink<T, R> sink) {
      throw new IllegalStateException("decorator refuses " + name);
    }

    @Override
    public <T, R> AsyncBatchSink<T, R> decorateAsync(String name, AsyncBatchSink<T, R> sink) {
      throw new IllegalStateException("decorator refuses async " + name);
    }
  }

  @Test
  void aSinkDecoratorThatThrows_closesTheSinkGiven_toCreateAsToCreateSharded_andFreesTheName() {
    runner.withBean(RefusingDecorator.class).run(context -> {
      BatcherFactory factory = context.getBean(BatcherFactory.class);
      ClosingSink plain = new ClosingSink();
      assertThatThrownBy(() -> factory.create("plain", plain)).hasMessage("decorator refuses plain");
      ClosingSink shard = new ClosingSink();
      assertThatThrownBy(() -> factory.createSharded("sharded", s -> shard)).hasMessage("decorator refuses sharded");
      assertThat(factory.created()).isEmpty();
      assertThat(shard.closed).as("createSharded closes the sink it made").hasValue(1);
      assertThat(plain.closed).as("create closes the sink it was given").hasValue(1);
      assertThatThrownBy(() -> factory.create("plain", new ClosingSink())).hasMessage("decorator refuses plain");
    });
  }
}
