package dev.ringbatch.spring.boot;

import dev.ringbatch.Batch;
import dev.ringbatch.Batcher;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * A Boot application, run in a child JVM by {@link ShutdownLoggingTest}: its batcher's sink never returns, so
 * ten queued items are still there when the JVM is told to exit.
 */
@Configuration(proxyBeanMethods = false)
@ImportAutoConfiguration(BatcherAutoConfiguration.class)
public class StalledApplication {
  static final String QUEUED = "ten items queued into a stalled sink";
  private static final CountDownLatch IN_SINK = new CountDownLatch(1);

  @Bean
  Batcher<Integer, Void> stalled(BatcherFactory batchers) {
    return batchers.create("stalled", (Batch<Integer, Void> batch) -> {
      IN_SINK.countDown();
      new CountDownLatch(1).await(); // until the close interrupts it
    });
  }

  public static void main(String[] args) throws InterruptedException {
    SpringApplication application = new SpringApplication(StalledApplication.class);
    application.setWebApplicationType(WebApplicationType.NONE);
    ConfigurableApplicationContext context = application.run("--ringbatch.shutdown-timeout=1s");
    @SuppressWarnings("unchecked")
    Batcher<Integer, Void> stalled = context.getBean(Batcher.class);
    stalled.submit(0);
    if (!IN_SINK.await(30, TimeUnit.SECONDS)) {
      throw new IllegalStateException("the sink was never called");
    }
    for (int i = 1; i < 10; i++) {
      stalled.submit(i);
    }
    System.out.println(QUEUED);
    new CountDownLatch(1).await(); // until SIGTERM
  }
}
