package dev.ringbatch.examples.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * SIGTERM with requests in flight: the service, in a child JVM as it runs in production, answers every request
 * it accepted, and every event it acknowledged is in the table afterwards. The events linger in the batcher
 * (3 s) when the signal comes, so the drain and the embedded database's stop race unless the database is
 * stopped by Spring after the batcher and the pool (see {@code EventsApplication#embeddedPostgres}).
 */
@Timeout(value = 240, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class ShutdownUnderLoadIT {
  private static final int IN_FLIGHT = 24;
  private static final Pattern PORT = Pattern.compile("Tomcat started on port (\\d+)");
  private static final String AUTH = "Basic " + Base64.getEncoder()
      .encodeToString("ops:demo-only-password".getBytes(StandardCharsets.UTF_8));

  @TempDir
  Path dataDirectory;

  private Process service;
  private final StringBuffer output = new StringBuffer();

  @AfterEach
  void stop() {
    if (service != null) {
      service.destroyForcibly();
    }
  }

  @Test
  void sigterm_withRequestsInFlight_everyAcknowledgedEventIsStored() throws Exception {
    CompletableFuture<Integer> port = start();
    String base = "http://localhost:" + port.get(120, TimeUnit.SECONDS);
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    List<CompletableFuture<HttpResponse<String>>> responses = new ArrayList<>();
    for (int id = 1; id <= IN_FLIGHT; id++) {
      responses.add(http.sendAsync(HttpRequest.newBuilder(URI.create(base + "/events"))
          .header("Content-Type", "application/json").timeout(Duration.ofSeconds(60))
          .POST(HttpRequest.BodyPublishers.ofString("{\"id\":" + id + ",\"payload\":\"event " + id + "\"}"))
          .build(), HttpResponse.BodyHandlers.ofString()));
    }
    // every event is in the batcher, lingering, before the signal
    Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> inFlight(http, base) == IN_FLIGHT);
    assertThat(service.toHandle().destroy()).isTrue(); // SIGTERM; the handle keeps the pipe open
    assertThat(service.waitFor(120, TimeUnit.SECONDS)).as("service exited; output:%n%s", output).isTrue();

    Set<Long> acknowledged = new HashSet<>();
    for (CompletableFuture<HttpResponse<String>> response : responses) {
      HttpResponse<String> answer = response.get(10, TimeUnit.SECONDS);
      assertThat(answer.statusCode()).as("%s; output:%n%s", answer.body(), output).isEqualTo(201);
      acknowledged.add(Long.parseLong(answer.body().substring("stored ".length())));
    }
    assertThat(acknowledged).hasSize(IN_FLIGHT);
    assertThat(storedIds()).containsExactlyInAnyOrderElementsOf(acknowledged);
    assertThat(output.toString()).contains("Graceful shutdown complete")
        .contains("ringbatch batcher 'events' closed on shutdown: CloseReport{drained=true, written=" + IN_FLIGHT);
  }

  /** Starts the service on the test's class path; the future completes with its port. */
  private CompletableFuture<Integer> start() throws IOException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    service = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
        EventsApplication.class.getName(), "--server.port=0", "--ringbatch.batchers.events.linger=3s",
        "--events.postgres.data-directory=" + dataDirectory).redirectErrorStream(true).start();
    CompletableFuture<Integer> port = new CompletableFuture<>();
    Thread reader = new Thread(() -> {
      try (BufferedReader lines = new BufferedReader(
          new InputStreamReader(service.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line = lines.readLine(); line != null; line = lines.readLine()) {
          output.append(line).append('\n');
          Matcher m = PORT.matcher(line);
          if (m.find()) {
            port.complete(Integer.parseInt(m.group(1)));
          }
        }
        port.completeExceptionally(new IllegalStateException("the service ended before it started:\n" + output));
      } catch (IOException e) {
        port.completeExceptionally(new UncheckedIOException(e));
      }
    }, "service-output");
    reader.setDaemon(true);
    reader.start();
    return port;
  }

  /** The events batcher's {@code ringbatch.inflight} gauge, as Prometheus shows it. */
  private static double inFlight(HttpClient http, String base) throws IOException, InterruptedException {
    String prometheus = http.send(HttpRequest.newBuilder(URI.create(base + "/actuator/prometheus"))
        .header("Authorization", AUTH).build(), HttpResponse.BodyHandlers.ofString()).body();
    return prometheus.lines().filter(l -> l.startsWith("ringbatch_inflight_items{name=\"events\"}"))
        .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).findFirst().orElse(-1);
  }

  /** The ids in the table, read by a server started on the data directory the service left. */
  private Set<Long> storedIds() throws Exception {
    Set<Long> ids = new HashSet<>();
    try (EmbeddedPostgres postgres = EmbeddedPostgres.builder().setDataDirectory(dataDirectory)
        .setCleanDataDirectory(false).start();
        Connection c = postgres.getPostgresDatabase().getConnection();
        Statement s = c.createStatement();
        ResultSet rows = s.executeQuery("SELECT id FROM events")) {
      while (rows.next()) {
        ids.add(rows.getLong(1));
      }
    }
    return ids;
  }
}
