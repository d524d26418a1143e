package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ringbatch.Batcher;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringApplication;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The Boot 3 starter in a real Spring Boot 3.5 service on Tomcat, through HTTP as its clients and operators see
 * it: the {@code ringbatch} health, the {@code batchers} endpoint, the meters, and the web mapping of failures.
 */
class Boot3WebApplicationTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
  private static ConfigurableApplicationContext context;
  private static String base;

  @BeforeAll
  static void start() {
    context = SpringApplication.run(Boot3WebApplication.class, "--server.port=0",
        "--spring.datasource.url=jdbc:h2:mem:boot3web;DB_CLOSE_DELAY=-1",
        "--management.endpoints.web.exposure.include=health,batchers,metrics,prometheus",
        "--management.endpoint.health.show-details=always", "--management.endpoint.batchers.access=unrestricted",
        "--ringbatch.batchers.orders.max-batch-size=1", "--ringbatch.web.overload-mapping.enabled=true",
        "--ringbatch.web.data-access-mapping.enabled=true");
    base = "http://localhost:" + context.getEnvironment().getProperty("local.server.port");
  }

  @AfterAll
  static void stop() {
    context.close();
  }

  @Test
  void health_hasTheRingbatchComponentWithEachBatcher() throws Exception {
    HttpResponse<String> response = get("/actuator/health");
    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
    JsonNode ringbatch = JSON.readTree(response.body()).path("components").path("ringbatch");
    assertThat(ringbatch.path("status").asText()).as(response.body()).isEqualTo("UP");
    assertThat(ringbatch.path("details").path("orders").path("status").asText()).isEqualTo("UP");
    assertThat(ringbatch.path("details").path("orders").path("ringSize").asInt()).isEqualTo(16_384);
  }

  @Test
  void batchersEndpoint_postWithOneLimitOnly_changesThatLimit() throws Exception {
    @SuppressWarnings("unchecked")
    Batcher<int[], Void> orders = context.getBean("orders", Batcher.class);
    HttpResponse<String> listed = get("/actuator/batchers");
    assertThat(JSON.readTree(listed.body()).path("orders").path("limits").path("maxBatchSize").asInt()).isEqualTo(1);

    // Boot 3 takes a parameter as optional only with Spring's own @Nullable: without it, 400 "Missing parameters".
    HttpResponse<String> changed = post("/actuator/batchers/orders", "{\"linger\": \"5ms\"}");
    assertThat(changed.statusCode()).as(changed.body()).isEqualTo(200);
    assertThat(orders.limits().linger()).isEqualTo(Duration.ofMillis(5));
    assertThat(orders.limits().maxBatchSize()).isEqualTo(1);

    HttpResponse<String> restored = post("/actuator/batchers/orders", "{\"linger\": \"0ms\"}");
    assertThat(restored.statusCode()).as(restored.body()).isEqualTo(200);
  }

  @Test
  void meters_ofAWrite_areInBootsMetricsEndpoint() throws Exception {
    assertThat(post("/orders/100/1", "").body()).isEqualTo("stored");

    HttpResponse<String> written = get("/actuator/metrics/ringbatch.items?tag=name:orders&tag=result:written");
    assertThat(written.statusCode()).as(written.body()).isEqualTo(200);
    assertThat(JSON.readTree(written.body()).path("measurements").get(0).path("value").asDouble()).isPositive();
    assertThat(get("/actuator/metrics/ringbatch.batch.write?tag=name:orders&tag=outcome:success").statusCode())
        .isEqualTo(200);
    assertThat(get("/actuator/metrics/ringbatch.batch.write.active?tag=name:orders").statusCode()).isEqualTo(200);
  }

  /** Every meter of docs/metrics.md's Prometheus listing (rendered there by Boot 4), under the same name on Boot 3. */
  @Test
  void prometheus_namesEveryMeterAsTheDocsList() throws Exception {
    assertThat(post("/orders/200/1", "").body()).isEqualTo("stored");

    HttpResponse<String> scrape = get("/actuator/prometheus");
    assertThat(scrape.statusCode()).isEqualTo(200);
    for (String name : List.of("ringbatch_batch_retries_total", "ringbatch_batch_size_items_count",
        "ringbatch_batch_size_items_sum", "ringbatch_batch_size_items_max",
        "ringbatch_batch_write_active_seconds_count", "ringbatch_batch_write_active_seconds_sum",
        "ringbatch_batch_write_active_seconds_max", "ringbatch_batch_write_seconds_count",
        "ringbatch_batch_write_seconds_sum", "ringbatch_batch_write_seconds_max", "ringbatch_inflight_items",
        "ringbatch_item_wait_seconds_count", "ringbatch_item_wait_seconds_sum", "ringbatch_item_wait_seconds_max",
        "ringbatch_items_total", "ringbatch_limits_batch_size_items", "ringbatch_limits_linger_seconds",
        "ringbatch_rejected_items_total", "ringbatch_ring_capacity_items", "ringbatch_ring_remaining_items")) {
      assertThat(scrape.body()).as(name).containsPattern("(?m)^" + name + "\\{[^}]*name=\"orders\"");
    }
    assertThat(scrape.body()).contains("ringbatch_batch_write_active_seconds_count{name=\"orders\",sink=\"sync\"}");
  }

  @Test
  void webMapping_duplicateIs409_constraintIs422_closedBatcherIs503() throws Exception {
    assertThat(post("/orders/1/5", "").statusCode()).isEqualTo(200);

    HttpResponse<String> duplicate = post("/orders/1/5", "");
    assertThat(duplicate.statusCode()).as(duplicate.body()).isEqualTo(409);
    assertThat(JSON.readTree(duplicate.body()).path("title").asText()).isEqualTo("Duplicate key");

    HttpResponse<String> constraint = post("/orders/2/0", "");
    assertThat(constraint.statusCode()).as(constraint.body()).isEqualTo(422);
    assertThat(JSON.readTree(constraint.body()).path("title").asText()).isEqualTo("Constraint violated");

    context.getBean("closing", Batcher.class).close(Duration.ofSeconds(10));
    HttpResponse<String> closed = post("/closing/1", "");
    assertThat(closed.statusCode()).as(closed.body()).isEqualTo(503);
    assertThat(closed.headers().firstValue("Retry-After")).isPresent();
  }

  private static HttpResponse<String> get(String path) throws IOException, InterruptedException {
    return HTTP.send(HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(30)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static HttpResponse<String> post(String path, String json) throws IOException, InterruptedException {
    return HTTP.send(HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(30))
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(json)).build(),
        HttpResponse.BodyHandlers.ofString());
  }
}
