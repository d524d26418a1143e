package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringbatch.Batcher;
import dev.ringbatch.CloseReport;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/** The opt-in 503 mapping, against a real controller on Tomcat. */
class BatcherOverloadExceptionHandlerTest {
  private static final String[] PROPERTIES = {"server.port=0", "ringbatch.batchers.orders.ring-size=4",
      "ringbatch.batchers.orders.max-batch-size=1", "ringbatch.batchers.orders.overflow-policy=drop"};

  private final HttpClient client = HttpClient.newHttpClient();

  @ParameterizedTest
  @ValueSource(strings = {"join", "get", "async"})
  void fullBatcher_mappingEnabled_answers503WithRetryAfterAndProblemDetail(String way) throws Exception {
    try (ConfigurableApplicationContext context = start("ringbatch.web.overload-mapping.enabled=true",
        "ringbatch.web.overload-mapping.retry-after=2")) {
      fill(context);

      HttpResponse<String> response = get(context, "/" + way + "/5");

      assertThat(response.statusCode()).isEqualTo(503);
      assertThat(response.headers().firstValue("Retry-After")).hasValue("2");
      assertThat(response.headers().firstValue("Content-Type")).hasValue("application/problem+json");
      assertThat(response.body()).contains("\"status\":503", "\"title\":\"Batcher full\"",
          "\"detail\":\"Batcher 'orders' is full (capacity 4); item dropped\"");
      context.getBean(OverloadApplication.class).gate.countDown();
    }
  }

  @Test
  void closedBatcher_mappingEnabled_answers503() throws Exception {
    try (ConfigurableApplicationContext context = start("ringbatch.web.overload-mapping.enabled=true")) {
      context.getBean(OverloadApplication.class).gate.countDown();
      orders(context).close(Duration.ofSeconds(10));

      HttpResponse<String> response = get(context, "/async/1");

      assertThat(response.statusCode()).isEqualTo(503);
      assertThat(response.headers().firstValue("Retry-After")).hasValue("1");
      assertThat(response.body()).contains("\"title\":\"Batcher closed\"");
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"join", "async"})
  void itemAClosingBatcherGaveUpOnInsideTheSink_isNotAnswered503_sinceItMayBeWritten(String way) throws Exception {
    try (ConfigurableApplicationContext context = start("ringbatch.web.overload-mapping.enabled=true")) {
      OverloadApplication app = context.getBean(OverloadApplication.class);
      CompletableFuture<HttpResponse<String>> answer = client.sendAsync(request(context, "/" + way + "/7"),
          HttpResponse.BodyHandlers.ofString());
      assertThat(app.inSink.await(10, TimeUnit.SECONDS)).isTrue(); // item 7's batch waits inside the sink

      CloseReport report = orders(context).close(Duration.ofMillis(100)); // gives up on it there
      HttpResponse<String> response = answer.get(20, TimeUnit.SECONDS);
      app.gate.countDown();

      assertThat(report.drained()).isFalse();
      assertThat(response.statusCode()).isEqualTo(500);
      assertThat(response.headers().firstValue("Retry-After")).isEmpty();
    }
  }

  @Test
  void fullBatcher_mappingOffByDefault_answersTheUsual500() throws Exception {
    try (ConfigurableApplicationContext context = start()) {
      assertThat(context.getBeanNamesForType(BatcherOverloadExceptionHandler.class)).isEmpty();
      fill(context);

      HttpResponse<String> response = get(context, "/join/5");

      assertThat(response.statusCode()).isEqualTo(500);
      assertThat(response.headers().firstValue("Retry-After")).isEmpty();
      context.getBean(OverloadApplication.class).gate.countDown();
    }
  }

  @Test
  void negativeRetryAfter_failsStartupNamingIt() {
    SpringApplicationBuilder builder = new SpringApplicationBuilder(OverloadApplication.class)
        .properties(PROPERTIES).properties("ringbatch.web.overload-mapping.enabled=true",
            "ringbatch.web.overload-mapping.retry-after=-1");
    assertThatThrownBy(builder::run).rootCause()
        .hasMessage("Property ringbatch.web.overload-mapping.retry-after with value 'PT-1S' is invalid: "
            + "retry-after must not be negative but was PT-1S");
  }

  private static ConfigurableApplicationContext start(String... properties) {
    return new SpringApplicationBuilder(OverloadApplication.class).properties(PROPERTIES).properties(properties)
        .run();
  }

  /** One item held in the sink, four filling the ring of four: the next submit is refused. */
  private static void fill(ConfigurableApplicationContext context) throws InterruptedException {
    Batcher<Integer, String> orders = orders(context);
    orders.submit(0);
    assertThat(context.getBean(OverloadApplication.class).inSink.await(10, TimeUnit.SECONDS)).isTrue();
    for (int i = 1; i <= 4; i++) {
      orders.submit(i);
    }
    assertThat(orders.stats().remainingCapacity()).isZero();
  }

  @SuppressWarnings("unchecked")
  private static Batcher<Integer, String> orders(ConfigurableApplicationContext context) {
    return context.getBean("orders", Batcher.class);
  }

  private HttpResponse<String> get(ConfigurableApplicationContext context, String path) throws Exception {
    return client.send(request(context, path), HttpResponse.BodyHandlers.ofString());
  }

  private static HttpRequest request(ConfigurableApplicationContext context, String path) {
    String port = context.getEnvironment().getProperty("local.server.port");
    return HttpRequest.newBuilder(URI.create("http://localhost:" + port + path)).timeout(Duration.ofSeconds(20))
        .build();
  }
}
