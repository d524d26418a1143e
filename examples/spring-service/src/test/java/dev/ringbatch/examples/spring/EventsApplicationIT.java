package dev.ringbatch.examples.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.Batcher;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/** Boots the service on a random port, posts events from concurrent clients, checks rows and meters. */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class EventsApplicationIT {
  private static final int CLIENTS = 16;
  private static final int PER_CLIENT = 50;

  @LocalServerPort
  int port;

  @Autowired
  DataSource dataSource;

  @Autowired
  Batcher<Event, Integer> events;

  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  @Test
  void concurrentPosts_everyEventStoredOnce_andMetersShowThem() throws Exception {
    // The context (and its database and meters) is shared with the other test: measure this test's deltas.
    String before = get("/actuator/prometheus");
    double writtenBefore = value(before, "ringbatch_items_total", "result=\"written\"");
    double sizeSumBefore = value(before, "ringbatch_batch_size_items_sum", "");
    double waitsBefore = value(before, "ringbatch_item_wait_seconds_count", "");
    long batchesBefore = events.stats().batches();
    ExecutorService clients = Executors.newFixedThreadPool(CLIENTS);
    List<Future<Integer>> created = new ArrayList<>();
    for (int c = 0; c < CLIENTS; c++) {
      int client = c;
      created.add(clients.submit(() -> {
        int ok = 0;
        for (int i = 0; i < PER_CLIENT; i++) {
          long id = client * 1_000L + i;
          HttpResponse<String> response = http.send(HttpRequest.newBuilder(uri("/events"))
              .header("Content-Type", "application/json")
              .POST(HttpRequest.BodyPublishers.ofString("{\"id\":" + id + ",\"payload\":\"event " + id + "\"}"))
              .build(), HttpResponse.BodyHandlers.ofString());
          if (response.statusCode() == 201 && response.body().equals("stored " + id)) {
            ok++;
          }
        }
        return ok;
      }));
    }
    int stored = 0;
    for (Future<Integer> f : created) {
      stored += f.get(60, TimeUnit.SECONDS);
    }
    clients.shutdown();

    assertThat(stored).isEqualTo(CLIENTS * PER_CLIENT);
    assertThat(count("SELECT count(*) FROM events WHERE id < 100000")).isEqualTo(CLIENTS * PER_CLIENT);
    assertThat(count("SELECT count(DISTINCT id) FROM events WHERE id < 100000")).isEqualTo(CLIENTS * PER_CLIENT);

    String prometheus = get("/actuator/prometheus");
    assertThat(value(prometheus, "ringbatch_items_total", "result=\"written\"") - writtenBefore)
        .isEqualTo(CLIENTS * PER_CLIENT);
    assertThat(value(prometheus, "ringbatch_batch_size_items_sum", "") - sizeSumBefore)
        .isEqualTo(CLIENTS * PER_CLIENT);
    assertThat(value(prometheus, "ringbatch_batch_size_items_count", "")).isEqualTo(events.stats().batches());
    assertThat(value(prometheus, "ringbatch_item_wait_seconds_count", "") - waitsBefore)
        .as("every item's wait in the ring measured once").isEqualTo(CLIENTS * PER_CLIENT);
    assertThat(value(prometheus, "ringbatch_item_wait_seconds_sum", "")).isPositive();
    assertThat(value(prometheus, "ringbatch_item_wait_seconds_max", "")).isGreaterThanOrEqualTo(0);
    assertThat(events.stats().batches() - batchesBefore).as("batches for %s events", CLIENTS * PER_CLIENT)
        .isLessThan(CLIENTS * PER_CLIENT);
    assertThat(prometheus).contains("ringbatch_batch_write_seconds_count{name=\"events\",outcome=\"success\"}")
        .contains("ringbatch_ring_capacity_items{name=\"events\"} 4096.0")
        .contains("ringbatch_inflight_items{name=\"events\"}")
        .contains("ringbatch_rejected_items_total{name=\"events\",reason=\"full\"}")
        .contains("ringbatch_batch_retries_total{name=\"events\"}")
        .doesNotContain("ringbatch_items_inflight_items").doesNotContain("ringbatch_rejections");
    assertThat(prometheus.lines().filter(l -> l.startsWith("ringbatch_batch_size_items_count{")).count())
        .as("one batch size summary per batcher").isEqualTo(1);
    System.out.println("Prometheus output, ringbatch meters:");
    prometheus.lines().filter(l -> l.startsWith("ringbatch_")).forEach(System.out::println);
  }

  @Test
  void duplicateEvent_answers409ProblemDetail_withoutTheDatabaseError() throws Exception {
    String body = "{\"id\":999999,\"payload\":\"once\"}";
    HttpResponse<String> first = post("/events", body);
    HttpResponse<String> second = post("/events", body);
    HttpResponse<String> waited = post("/events/sync", body);

    assertThat(first.statusCode()).isEqualTo(201);
    for (HttpResponse<String> duplicate : List.of(second, waited)) {
      assertThat(duplicate.statusCode()).isEqualTo(409);
      assertThat(duplicate.body()).contains("\"title\":\"Duplicate key\"")
          .contains("\"detail\":\"the item conflicts with a stored one\"")
          .doesNotContain("events_pkey").doesNotContain("999999"); // the database's message stays out
    }
  }

  @Test
  void eventWithoutPayload_violatesNotNull_answers422() throws Exception {
    HttpResponse<String> response = post("/events", "{\"id\":999998}");

    assertThat(response.statusCode()).isEqualTo(422);
    assertThat(response.body()).contains("\"title\":\"Constraint violated\"").doesNotContain("payload");
  }

  @Test
  void actuator_anonymous_healthStatusOnly_otherEndpointsRefused() throws Exception {
    HttpResponse<String> readiness = http.send(HttpRequest.newBuilder(uri("/actuator/health/readiness")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(readiness.statusCode()).isEqualTo(200);
    assertThat(readiness.body()).isEqualTo("{\"status\":\"UP\"}"); // the probe: no components, no details
    assertThat(http.send(HttpRequest.newBuilder(uri("/actuator/health/ringbatch")).build(),
        HttpResponse.BodyHandlers.ofString()).statusCode()).as("a component, hidden from anonymous").isEqualTo(404);
    for (String endpoint : List.of("/actuator/batchers", "/actuator/prometheus", "/actuator/metrics")) {
      assertThat(http.send(HttpRequest.newBuilder(uri(endpoint)).build(), HttpResponse.BodyHandlers.ofString())
          .statusCode()).as(endpoint).isEqualTo(401);
    }
  }

  @Test
  void actuator_showsHealthAndBatchers_andRefusesWritesByDefault() throws Exception {
    String health = get("/actuator/health/ringbatch");
    assertThat(health).contains("\"status\":\"UP\"").contains("\"events\"").contains("\"ringSize\":4096");
    String batchers = get("/actuator/batchers");
    assertThat(batchers).contains("\"events\"").contains("\"maxBatchSize\":1000");
    System.out.println("GET /actuator/health/ringbatch: " + health);
    System.out.println("GET /actuator/batchers: " + batchers);

    HttpResponse<String> write = http.send(asOps(HttpRequest.newBuilder(uri("/actuator/batchers/events")))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{\"maxBatchSize\":10}")).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(write.statusCode()).as("write operations are off by default").isIn(404, 405);
    assertThat(events.limits().maxBatchSize()).isEqualTo(1000);
  }

  /**
   * The long-task timer and the limit gauges under the names docs/metrics.md gives, in both formats Boot serves:
   * the Prometheus text format ({@code curl}'s default) and OpenMetrics (what a Prometheus server asks for). Without
   * a percentiles histogram the long-task timer is a summary in both ({@code _gcount} and {@code _gsum} appear
   * only with one: docs/results/prometheus-write-active.txt).
   */
  @Test
  void prometheus_writeActiveAndLimits_namedAsTheDocsSay_inBothFormats() throws Exception {
    String text = get("/actuator/prometheus");
    String openMetrics = http.send(asOps(HttpRequest.newBuilder(uri("/actuator/prometheus")))
        .header("Accept", "application/openmetrics-text;version=1.0.0").build(),
        HttpResponse.BodyHandlers.ofString()).body();

    assertThat(text).contains("ringbatch_batch_write_active_seconds_count{name=\"events\",sink=\"sync\"}")
        .contains("ringbatch_batch_write_active_seconds_sum{name=\"events\",sink=\"sync\"}")
        .contains("ringbatch_batch_write_active_seconds_max{name=\"events\",sink=\"sync\"}")
        .contains("ringbatch_limits_batch_size_items{name=\"events\"} 1000.0")
        .contains("ringbatch_limits_linger_seconds{name=\"events\"} 0.0")
        .doesNotContain("_active_count");
    assertThat(openMetrics).endsWith("# EOF\n")
        .contains("ringbatch_batch_write_active_seconds_count{name=\"events\",sink=\"sync\"}")
        .contains("ringbatch_batch_write_active_seconds_sum{name=\"events\",sink=\"sync\"}")
        .contains("ringbatch_batch_write_active_seconds_max{name=\"events\",sink=\"sync\"}")
        .contains("ringbatch_limits_batch_size_items{name=\"events\"} 1000.0");
    System.out.println("Prometheus text format, write.active and limits:");
    text.lines().filter(l -> l.startsWith("ringbatch_batch_write_active") || l.startsWith("ringbatch_limits"))
        .forEach(System.out::println);
    System.out.println("OpenMetrics, write.active and limits:");
    openMetrics.lines().filter(l -> l.startsWith("ringbatch_batch_write_active") || l.startsWith("ringbatch_limits"))
        .forEach(System.out::println);
  }

  private HttpResponse<String> post(String path, String body) throws Exception {
    return http.send(HttpRequest.newBuilder(uri(path)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
  }

  /** GETs an actuator path as the operator of SecurityConfiguration, whose password is the demo's. */
  private String get(String path) throws Exception {
    return http.send(asOps(HttpRequest.newBuilder(uri(path))).build(), HttpResponse.BodyHandlers.ofString()).body();
  }

  private static HttpRequest.Builder asOps(HttpRequest.Builder request) {
    return request.header("Authorization", "Basic "
        + Base64.getEncoder().encodeToString("ops:demo-only-password".getBytes(StandardCharsets.UTF_8)));
  }

  private URI uri(String path) {
    return URI.create("http://127.0.0.1:" + port + path);
  }

  private int count(String sql) throws Exception {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getInt(1);
    }
  }

  /** The value of the Prometheus sample {@code name{..., name="events", ...labels...}}. */
  private static double value(String prometheus, String name, String label) {
    Matcher m = Pattern.compile("^" + Pattern.quote(name) + "\\{([^}]*)\\} (\\S+)$", Pattern.MULTILINE)
        .matcher(prometheus);
    while (m.find()) {
      if (m.group(1).contains("name=\"events\"") && m.group(1).contains(label)) {
        return Double.parseDouble(m.group(2));
      }
    }
    throw new AssertionError("no sample " + name + " with " + label + " in:\\n" + prometheus);
  }
}
