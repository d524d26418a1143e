package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;
import static org.awaitility.Awaitility.await;

import dev.ringbatch.Batcher;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * A Boot application on Tomcat with {@code spring.threads.virtual.enabled=true}: 1,000 requests are held in
 * their controller at once, each waiting for its item's batch, then all are answered. With platform request
 * threads (Tomcat's 200 by default) at most 200 could wait at once, and the test would fail.
 */
class VirtualThreadsApplicationTest {
  private static final int REQUESTS = 1_000;

  @Test
  void virtualThreads_thousandConcurrentRequests_allWaitTogether_thenAllStored() throws Exception {
    assumeThat(Runtime.version().feature()).as("virtual threads need Java 21").isGreaterThanOrEqualTo(21);
    try (ConfigurableApplicationContext context = new SpringApplicationBuilder(OverloadApplication.class)
        .properties("server.port=0", "spring.threads.virtual.enabled=true", "ringbatch.batchers.orders.ring-size=1024")
        .run()) {
      @SuppressWarnings("unchecked")
      Batcher<Integer, String> orders = context.getBean("orders", Batcher.class);
      String base = "http://localhost:" + context.getEnvironment().getProperty("local.server.port") + "/join/";
      HttpClient client = HttpClient.newHttpClient();
      List<CompletableFuture<HttpResponse<String>>> responses = new ArrayList<>();
      for (int i = 0; i < REQUESTS; i++) {
        HttpRequest request = HttpRequest.newBuilder(URI.create(base + i)).timeout(Duration.ofSeconds(60)).build();
        responses.add(client.sendAsync(request, HttpResponse.BodyHandlers.ofString()));
      }

      // The sink holds its first batch at the gate: every request is now in its controller, waiting.
      await().atMost(Duration.ofSeconds(60)).until(() -> orders.stats().inFlight() == REQUESTS);
      context.getBean(OverloadApplication.class).gate.countDown();

      for (CompletableFuture<HttpResponse<String>> response : responses) {
        assertThat(response).succeedsWithin(Duration.ofSeconds(60)).satisfies(r -> {
          assertThat(r.statusCode()).isEqualTo(200);
          assertThat(r.body()).isEqualTo("stored");
        });
      }
      assertThat(orders.stats().written()).isEqualTo(REQUESTS);
    }
  }
}
