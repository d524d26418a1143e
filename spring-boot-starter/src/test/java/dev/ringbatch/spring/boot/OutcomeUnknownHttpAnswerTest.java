package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.BatcherClosedException;
import dev.ringbatch.OutcomeUnknownException;
import java.io.EOFException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.http.converter.autoconfigure.HttpMessageConvertersAutoConfiguration;
import org.springframework.boot.jackson.autoconfigure.JacksonAutoConfiguration;
import org.springframework.boot.tomcat.autoconfigure.servlet.TomcatServletWebServerAutoConfiguration;
import org.springframework.boot.webmvc.autoconfigure.DispatcherServletAutoConfiguration;
import org.springframework.boot.webmvc.autoconfigure.WebMvcAutoConfiguration;
import org.springframework.boot.webmvc.autoconfigure.error.ErrorMvcAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Configuration;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * With the web mappings on, an item whose outcome is unknown is answered 500 "Outcome unknown", never a 503 that
 * invites a retry, and never the empty 200 Spring MVC gives an exception it takes for a client that went away: the
 * chain of a lost database reply holds an EOFException.
 */
class OutcomeUnknownHttpAnswerTest {

  @Configuration(proxyBeanMethods = false)
  @ImportAutoConfiguration({BatcherAutoConfiguration.class, BatcherWebMvcAutoConfiguration.class,
      TomcatServletWebServerAutoConfiguration.class, DispatcherServletAutoConfiguration.class,
      WebMvcAutoConfiguration.class, HttpMessageConvertersAutoConfiguration.class, JacksonAutoConfiguration.class,
      ErrorMvcAutoConfiguration.class})
  static class App {
    /** Registered as a member class of this configuration. */
    @RestController
    static class Lost {
      /** pgjdbc's lost COMMIT reply, as a JDBC sink reports it. */
      static OutcomeUnknownException lostReply() {
        SQLException io = new SQLException("An I/O error occurred while sending to the backend.", "08006",
            new EOFException());
        return new OutcomeUnknownException("no answer of the database to COMMIT (" + io + "): the database may or"
            + " may not have written these rows", io, true);
      }

      /** What a close makes of an item whose batch waited to retry after that lost reply. */
      static BatcherClosedException closedWhileRetrying() {
        BatcherClosedException closed = new BatcherClosedException("orders", 4, true, true, "close timed out after"
            + " 100 ms while the item's batch waited to retry after an attempt whose outcome is unknown");
        closed.initCause(lostReply());
        return closed;
      }

      @GetMapping("/closed-async")
      CompletableFuture<String> closedAsync() {
        return CompletableFuture.failedFuture(closedWhileRetrying());
      }

      @GetMapping("/closed-join")
      String closedJoin() {
        return CompletableFuture.<String>failedFuture(closedWhileRetrying()).join();
      }

      @GetMapping("/unknown-join")
      String unknownJoin() {
        return CompletableFuture.<String>failedFuture(lostReply()).join();
      }
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"/closed-async", "/closed-join", "/unknown-join"})
  void itemWhoseOutcomeIsUnknown_afterALostDatabaseReply_isA500_neverARetryNorAnEmpty200(String path)
      throws Exception {
    answers500(path, "ringbatch.web.overload-mapping.enabled=true", "ringbatch.web.data-access-mapping.enabled=true");
  }

  @Test
  void itemWhoseOutcomeIsUnknown_withTheDataAccessMappingAlone_isA500_neverAnEmpty200() throws Exception {
    answers500("/unknown-join", "ringbatch.web.data-access-mapping.enabled=true");
  }

  private static void answers500(String path, String... mappings) throws Exception {
    try (ConfigurableApplicationContext context = new SpringApplicationBuilder(App.class)
        .properties("server.port=0").properties(mappings).run()) {
      String port = context.getEnvironment().getProperty("local.server.port");
      HttpResponse<String> response = HttpClient.newHttpClient().send(
          HttpRequest.newBuilder(URI.create("http://localhost:" + port + path)).timeout(Duration.ofSeconds(10))
              .build(), HttpResponse.BodyHandlers.ofString());

      assertThat(response.statusCode()).as("%s answered '%s'", path, response.body()).isEqualTo(500);
      assertThat(response.headers().firstValue("Retry-After")).isEmpty();
      assertThat(response.body()).contains("\"title\":\"Outcome unknown\"");
    }
  }
}
