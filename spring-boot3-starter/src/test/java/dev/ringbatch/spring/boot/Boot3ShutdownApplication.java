package dev.ringbatch.spring.boot;

import dev.ringbatch.Batcher;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.springframework.boot.SpringApplication;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@link Boot3WebApplication} run in a child JVM by {@link Boot3ShutdownTest}, plus a batcher {@code audit} that
 * only its close writes (the test sets a 10-minute linger) and {@code POST /events/{id}}, which stores an order
 * through {@code orders} and prints {@link #IN_FLIGHT} once {@link #REQUESTS} requests wait for their writes.
 */
@Configuration(proxyBeanMethods = false)
@Import({Boot3WebApplication.class, Boot3ShutdownApplication.EventsController.class})
public class Boot3ShutdownApplication {
  static final String PORT = "listening on port ";
  static final String IN_FLIGHT = "every request is in flight";
  static final int REQUESTS = 20;
  static final int AUDIT_ROWS = 10;
  static final int AUDIT_IDS = 1000;

  @Bean
  Batcher<int[], Void> audit(BatcherFactory batchers, DataSource dataSource) {
    return batchers.create("audit", Boot3WebApplication.insert(dataSource));
  }

  @RestController
  static class EventsController {
    private final Batcher<int[], Void> orders;
    private final AtomicInteger arrived = new AtomicInteger();

    EventsController(Batcher<int[], Void> orders) {
      this.orders = orders;
    }

    @PostMapping("/events/{id}")
    String event(@PathVariable int id) {
      CompletableFuture<Void> written = orders.submit(new int[] {id, 1});
      if (arrived.incrementAndGet() == REQUESTS) {
        System.out.println(IN_FLIGHT);
      }
      written.join();
      return "stored";
    }
  }

  public static void main(String[] args) {
    ConfigurableApplicationContext context = SpringApplication.run(Boot3ShutdownApplication.class, args);
    @SuppressWarnings("unchecked")
    Batcher<int[], Void> audit = context.getBean("audit", Batcher.class);
    for (int i = 0; i < AUDIT_ROWS; i++) {
      audit.submit(new int[] {AUDIT_IDS + i, 1});
    }
    System.out.println(PORT + context.getEnvironment().getProperty("local.server.port"));
  }
}
