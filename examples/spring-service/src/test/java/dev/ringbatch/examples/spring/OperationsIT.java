package dev.ringbatch.examples.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.Batcher;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.test.annotation.DirtiesContext;

/**
 * The service's operations features end to end: each batch write is an Observation (what a tracer would
 * show), and a refused item is answered 503 with Retry-After by the starter's opt-in mapping. Its own
 * application context, because the last test closes the batcher.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@DirtiesContext
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class OperationsIT {
  @LocalServerPort
  int port;

  @Autowired
  Batcher<Event, Integer> events;

  @Autowired
  List<Observation.Context> observed;

  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  /** Records every observation the application makes, as a tracing bridge would receive them. */
  @TestConfiguration
  static class Recording {
    @Bean
    List<Observation.Context> observed() {
      return new CopyOnWriteArrayList<>();
    }

    @Bean
    ObservationHandler<Observation.Context> recordingHandler(List<Observation.Context> observed) {
      return new ObservationHandler<>() {
        @Override
        public void onStop(Observation.Context context) {
          observed.add(context);
        }

        @Override
        public boolean supportsContext(Observation.Context context) {
          return true;
        }
      };
    }
  }

  @Test
  @Order(1)
  void eachBatchWrite_isAnObservation_taggedWithTheBatcherAndOutcome() throws Exception {
    assertThat(post("/events/sync", 700_001).statusCode()).isEqualTo(201);

    List<Observation.Context> writes = observed.stream()
        .filter(c -> "ringbatch.batch.write".equals(c.getName())).toList();
    assertThat(writes).isNotEmpty().allSatisfy(c -> {
      assertThat(c.getLowCardinalityKeyValue("name").getValue()).isEqualTo("events");
      assertThat(c.getLowCardinalityKeyValue("outcome").getValue()).isEqualTo("success");
    });
    System.out.println("observation: " + writes.get(0).getName() + " " + writes.get(0).getLowCardinalityKeyValues());
  }

  @Test
  @Order(2)
  void refusedItem_isAnswered503WithRetryAfterAndAProblemDetail() throws Exception {
    events.close(Duration.ofSeconds(10)); // from now on every item is refused: BatcherClosedException

    HttpResponse<String> refused = post("/events/sync", 700_002);

    assertThat(refused.statusCode()).isEqualTo(503);
    assertThat(refused.headers().firstValue("Retry-After")).hasValue("1");
    assertThat(refused.headers().firstValue("Content-Type")).hasValueSatisfying(
        type -> assertThat(type).startsWith("application/problem+json"));
    assertThat(refused.body()).contains("\"status\":503").contains("Batcher 'events' is closed");
    System.out.println("POST /events/sync on a closed batcher: 503 Retry-After: 1 " + refused.body());
  }

  private HttpResponse<String> post(String path, long id) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{\"id\":" + id + ",\"payload\":\"ops\"}")).build(),
        HttpResponse.BodyHandlers.ofString());
  }
}
