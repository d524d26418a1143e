package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

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
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * SIGTERM to a Spring Boot 3.5 service with requests waiting for their writes and items that only the batcher's
 * close writes: every request is answered "stored", every item is in the table, and the batchers drained before
 * the connection pool closed (the starter's shutdown ordering on Boot 3). A child JVM, because only a real JVM
 * exit runs the shutdown hooks; the database is an H2 file told not to close itself on exit
 * ({@code DB_CLOSE_ON_EXIT=FALSE}), so that, as with a server database, only the pool's close ends the writes.
 */
class Boot3ShutdownTest {
  private static final int AUDIT_IDS = Boot3ShutdownApplication.AUDIT_IDS;

  @Test
  void sigterm_withRequestsInFlightAndItemsQueued_answersAndWritesEveryOneBeforeThePoolCloses(@TempDir Path dir)
      throws Exception {
    String url = "jdbc:h2:file:" + dir.resolve("db").toAbsolutePath() + ";DB_CLOSE_ON_EXIT=FALSE";
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process child = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
        Boot3ShutdownApplication.class.getName(), "--server.port=0", "--server.shutdown=graceful",
        "--spring.datasource.url=" + url, "--ringbatch.batchers.orders.linger=3s",
        "--ringbatch.batchers.orders.max-batch-size=100", "--ringbatch.batchers.audit.linger=10m")
        .redirectErrorStream(true).start();
    StringBuffer output = new StringBuffer();
    CompletableFuture<String> port = new CompletableFuture<>();
    CompletableFuture<Void> inFlight = new CompletableFuture<>();
    CompletableFuture<Void> ended = CompletableFuture.runAsync(() -> {
      try (BufferedReader lines = new BufferedReader(
          new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line = lines.readLine(); line != null; line = lines.readLine()) {
          output.append(line).append('\n');
          if (line.startsWith(Boot3ShutdownApplication.PORT)) {
            port.complete(line.substring(Boot3ShutdownApplication.PORT.length()));
          } else if (line.equals(Boot3ShutdownApplication.IN_FLIGHT)) {
            inFlight.complete(null);
          }
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    });
    List<CompletableFuture<HttpResponse<String>>> responses = new ArrayList<>();
    try {
      String base = "http://localhost:" + port.get(120, TimeUnit.SECONDS);
      HttpClient http = HttpClient.newHttpClient();
      for (int id = 0; id < Boot3ShutdownApplication.REQUESTS; id++) {
        responses.add(http.sendAsync(HttpRequest.newBuilder(URI.create(base + "/events/" + id))
            .timeout(Duration.ofSeconds(60)).POST(HttpRequest.BodyPublishers.noBody()).build(),
            HttpResponse.BodyHandlers.ofString()));
      }
      inFlight.get(60, TimeUnit.SECONDS);
      // SIGTERM through the handle: Process.destroy() would also close the streams and lose the last lines.
      assertThat(child.toHandle().destroy()).isTrue();
      for (CompletableFuture<HttpResponse<String>> response : responses) {
        HttpResponse<String> answer = response.get(60, TimeUnit.SECONDS);
        assertThat(answer.statusCode()).as("output:%n%s", output).isEqualTo(200);
        assertThat(answer.body()).isEqualTo("stored");
      }
      assertThat(child.waitFor(60, TimeUnit.SECONDS)).as("child exited; output:%n%s", output).isTrue();
      ended.get(10, TimeUnit.SECONDS);
    } finally {
      child.destroyForcibly();
    }

    String log = output.toString();
    int auditClosed = log.indexOf("ringbatch batcher 'audit' closed on shutdown: CloseReport{drained=true, written="
        + Boot3ShutdownApplication.AUDIT_ROWS + ",");
    int ordersClosed = log.indexOf("ringbatch batcher 'orders' closed on shutdown: CloseReport{drained=true");
    int poolClosing = log.indexOf("HikariPool-1 - Shutdown initiated");
    assertThat(auditClosed).as(log).isNotNegative();
    assertThat(ordersClosed).as(log).isNotNegative();
    assertThat(poolClosing).as(log).isGreaterThan(auditClosed).isGreaterThan(ordersClosed);
    try (Connection db = DriverManager.getConnection(url); Statement query = db.createStatement();
        ResultSet counts = query.executeQuery("select count(case when id < " + AUDIT_IDS
            + " then 1 end), count(case when id >= " + AUDIT_IDS + " then 1 end) from orders")) {
      assertThat(counts.next()).isTrue();
      assertThat(counts.getInt(1)).as("rows of the answered requests").isEqualTo(Boot3ShutdownApplication.REQUESTS);
      assertThat(counts.getInt(2)).as("rows only the close wrote").isEqualTo(Boot3ShutdownApplication.AUDIT_ROWS);
    }
  }
}
