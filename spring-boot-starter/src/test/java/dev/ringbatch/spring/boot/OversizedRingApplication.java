package dev.ringbatch.spring.boot;

import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * A Boot application, run in a child JVM with a small heap by {@link OversizedRingTest}: the ring size its
 * arguments give does not fit in that heap.
 */
@Configuration(proxyBeanMethods = false)
@ImportAutoConfiguration(BatcherAutoConfiguration.class)
public class OversizedRingApplication {

  @Bean
  Batcher<Integer, Void> big(BatcherFactory batchers) {
    return batchers.create("big", BatchSink.noResult(items -> { }));
  }

  public static void main(String[] args) {
    SpringApplication application = new SpringApplication(OversizedRingApplication.class);
    application.setWebApplicationType(WebApplicationType.NONE);
    application.run(args);
  }
}
