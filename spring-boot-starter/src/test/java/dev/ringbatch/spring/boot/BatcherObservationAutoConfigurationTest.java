package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.Batch;
import dev.ringbatch.Batcher;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

class BatcherObservationAutoConfigurationTest {
  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class,
          BatcherObservationAutoConfiguration.class))
      .withUserConfiguration(Registries.class);

  @Test
  void observationRegistry_factoryBatchersWritesObserved_namedAndWithOutcome() {
    runner.run(context -> {
      Batcher<Integer, Void> orders = context.getBean(BatcherFactory.class).create("orders",
          (Batch<Integer, Void> batch) -> batch.completeRemaining(null));
      orders.submit(1).get(10, TimeUnit.SECONDS);
      orders.close();

      List<Observation.Context> stopped = context.getBean(Recorder.class).stopped;
      assertThat(stopped).singleElement().satisfies(c -> {
        assertThat(c.getName()).isEqualTo("ringbatch.batch.write");
        assertThat(c.getLowCardinalityKeyValue("name").getValue()).isEqualTo("orders");
        assertThat(c.getLowCardinalityKeyValue("outcome").getValue()).isEqualTo("success");
      });
    });
  }

  @Test
  void meterObservationHandler_observationsOwnTimersDenied() {
    runner.run(context -> {
      SimpleMeterRegistry meters = new SimpleMeterRegistry();
      meters.config().meterFilter(context.getBean("ringbatchObservationMeterFilter", MeterFilter.class));
      context.getBean(ObservationRegistry.class).observationConfig()
          .observationHandler(new DefaultMeterObservationHandler(meters));
      Batcher<Integer, Void> orders = context.getBean(BatcherFactory.class).create("orders",
          (Batch<Integer, Void> batch) -> batch.completeRemaining(null));
      orders.submit(1).get(10, TimeUnit.SECONDS);
      orders.close();

      assertThat(context.getBean(Recorder.class).stopped).hasSize(1);
      assertThat(meters.getMeters()).noneMatch(m -> m.getId().getName().startsWith("ringbatch.batch.write"));
    });
  }

  @Test
  void disabledByProperty_noObservation() {
    runner.withPropertyValues("ringbatch.observations.enabled=false").run(context -> {
      assertThat(context).doesNotHaveBean(ObservingSinkDecorator.class);
      Batcher<Integer, Void> orders = context.getBean(BatcherFactory.class).create("orders",
          (Batch<Integer, Void> batch) -> batch.completeRemaining(null));
      orders.submit(1).get(10, TimeUnit.SECONDS);
      orders.close();
      assertThat(context.getBean(Recorder.class).stopped).isEmpty();
    });
  }

  @Test
  void noObservationRegistry_noDecorator() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(BatcherAutoConfiguration.class,
            BatcherObservationAutoConfiguration.class))
        .run(context -> assertThat(context).hasSingleBean(BatcherFactory.class)
            .doesNotHaveBean(ObservingSinkDecorator.class));
  }

  @Configuration(proxyBeanMethods = false)
  static class Registries {
    @Bean
    Recorder recorder() {
      return new Recorder();
    }

    @Bean
    ObservationRegistry observationRegistry(Recorder recorder) {
      ObservationRegistry registry = ObservationRegistry.create();
      registry.observationConfig().observationHandler(recorder);
      return registry;
    }
  }

  /** Records the observations stopped, on whichever thread. */
  static final class Recorder implements ObservationHandler<Observation.Context> {
    final List<Observation.Context> stopped = new CopyOnWriteArrayList<>();

    @Override
    public void onStop(Observation.Context context) {
      stopped.add(context);
    }

    @Override
    public boolean supportsContext(Observation.@Nullable Context context) {
      return true;
    }
  }
}
