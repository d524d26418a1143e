package dev.ringbatch.spring.boot;

import dev.ringbatch.Batch;
import dev.ringbatch.Batcher;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.http.converter.autoconfigure.HttpMessageConvertersAutoConfiguration;
import org.springframework.boot.jackson.autoconfigure.JacksonAutoConfiguration;
import org.springframework.boot.tomcat.autoconfigure.servlet.TomcatServletWebServerAutoConfiguration;
import org.springframework.boot.webmvc.autoconfigure.DispatcherServletAutoConfiguration;
import org.springframework.boot.webmvc.autoconfigure.WebMvcAutoConfiguration;
import org.springframework.boot.webmvc.autoconfigure.error.ErrorMvcAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RestController;

/**
 * A Spring MVC application on Tomcat whose controller submits to the batcher {@code orders}, in the three ways a
 * controller may: {@code join()}, {@code get()}, or returning the future. The sink waits at {@link #gate} until
 * a test opens it, so a test can fill the ring; {@link #inSink} counts down when a batch reaches the sink.
 */
@Configuration(proxyBeanMethods = false)
@ImportAutoConfiguration({BatcherAutoConfiguration.class, BatcherWebMvcAutoConfiguration.class,
    TomcatServletWebServerAutoConfiguration.class, DispatcherServletAutoConfiguration.class,
    WebMvcAutoConfiguration.class, HttpMessageConvertersAutoConfiguration.class, JacksonAutoConfiguration.class,
    ErrorMvcAutoConfiguration.class})
class OverloadApplication {
  final CountDownLatch gate = new CountDownLatch(1);
  final CountDownLatch inSink = new CountDownLatch(1);

  @Bean
  Batcher<Integer, String> orders(BatcherFactory batchers) {
    return batchers.create("orders", (Batch<Integer, String> batch) -> {
      inSink.countDown();
      if (!gate.await(30, TimeUnit.SECONDS)) {
        throw new IllegalStateException("the test never opened the gate");
      }
      batch.completeRemaining("stored");
    });
  }

  /** Registered as a member class of this configuration. */
  @RestController
  static class OrdersController {
    private final Batcher<Integer, String> orders;

    OrdersController(Batcher<Integer, String> orders) {
      this.orders = orders;
    }

    @GetMapping("/join/{n}")
    String join(@PathVariable int n) {
      return orders.submit(n).join();
    }

    @GetMapping("/get/{n}")
    String get(@PathVariable int n) throws Exception {
      return orders.submit(n).get();
    }

    @GetMapping("/async/{n}")
    CompletableFuture<String> async(@PathVariable int n) {
      return orders.submit(n);
    }
  }
}
