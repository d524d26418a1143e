package dev.ringbatch.examples.spring;

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
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Runs the service the way {@code docs/spring-boot.md} says, {@code java -jar} on the repackaged jar, in a
 * child JVM of the JDK running the tests: it serves a request and shuts down on SIGTERM, and a bad property
 * fails startup with the report the docs show.
 */
@Timeout(value = 180, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class ExecutableJarIT {
  private static final Pattern PORT = Pattern.compile("Tomcat started on port (\\d+)");
  private static final String END = "\u0000end of output";

  private Process process;
  private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
  private final List<String> output = new ArrayList<>();

  @AfterEach
  void stop() {
    if (process != null) {
      process.destroyForcibly();
    }
  }

  @Test
  void javaJar_servesAnEvent_andShutsDownOnSigterm() throws Exception {
    start("--server.port=0");
    Matcher port = awaitLine(PORT);

    HttpResponse<String> response = HttpClient.newHttpClient().send(
        HttpRequest.newBuilder(URI.create("http://localhost:" + port.group(1) + "/events"))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString("{\"id\":1,\"payload\":\"hi\"}")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(response.statusCode()).as(response.body()).isEqualTo(201);
    process.toHandle().destroy(); // SIGTERM, keeping our end of the pipe open (Process.destroy closes it)

    assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
    // The batcher's CloseReport line is not asserted: it goes through System.Logger to JUL, whose own
    // shutdown hook resets its handlers, so Boot does not show it (docs/spring-boot.md#shutdown says so).
    assertThat(restOfOutput()).anyMatch(l -> l.contains("Graceful shutdown complete"))
        .anyMatch(l -> l.contains("HikariPool-1 - Shutdown completed."));
  }

  @Test
  void javaJar_ringSmallerThanTheFixedLimitsBatch_failsStartupNamingTheRingSize() throws Exception {
    start("--server.port=0", "--ringbatch.batchers.events.ring-size=128", "--ringbatch.batchers.events.max-batch-size=",
        "--ringbatch.batchers.events.linger=0ms");

    assertThat(process.waitFor(120, TimeUnit.SECONDS)).isTrue();
    assertThat(process.exitValue()).isNotZero();
    assertThat(String.join("\n", restOfOutput()))
        .contains("APPLICATION FAILED TO START")
        .contains("Invalid value '128' for configuration property 'ringbatch.batchers.events.ring-size'")
        .contains("Validation failed for the following reason:\n\nmaxBatchSize (256) must not exceed ringSize (128)");
  }

  private void start(String... args) throws IOException {
    List<String> command = new ArrayList<>();
    command.add(ProcessHandle.current().info().command().orElse("java"));
    command.add("-jar");
    command.add(jar().toString());
    command.addAll(List.of(args));
    process = new ProcessBuilder(command).redirectErrorStream(true).start();
    Thread reader = new Thread(() -> {
      try (BufferedReader in = new BufferedReader(
          new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line = in.readLine(); line != null; line = in.readLine()) {
          lines.add(line);
        }
      } catch (IOException e) {
        lines.add("reading the service's output failed: " + e);
      } finally {
        lines.add(END);
      }
    }, "service-output");
    reader.setDaemon(true);
    reader.start();
  }

  private Matcher awaitLine(Pattern pattern) throws InterruptedException {
    while (true) {
      String line = lines.take();
      assertThat(line).as("the service ended before printing %s; output:%n%s", pattern, output).isNotEqualTo(END);
      output.add(line);
      Matcher m = pattern.matcher(line);
      if (m.find()) {
        return m;
      }
    }
  }

  private List<String> restOfOutput() throws InterruptedException {
    for (String line = lines.take(); !line.equals(END); line = lines.take()) {
      output.add(line);
    }
    return output;
  }

  /** The repackaged jar that {@code mvn package} leaves in {@code target/}. */
  private static Path jar() {
    try (DirectoryStream<Path> jars = Files.newDirectoryStream(Path.of("target"),
        "ringbatch-example-spring-service-*.jar")) {
      for (Path jar : jars) {
        return jar;
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    throw new IllegalStateException("no executable jar in target/: run `mvn package` first");
  }
}
