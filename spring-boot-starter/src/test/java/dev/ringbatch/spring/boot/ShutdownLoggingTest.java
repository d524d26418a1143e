package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The close report of a real JVM exit reaches the application's log. Only a child JVM shows it: the JDK's
 * {@code LogManager} shutdown hook resets java.util.logging in parallel with Spring's shutdown hook, which
 * a test that calls {@code context.close()} never races against.
 */
class ShutdownLoggingTest {

  @Test
  void sigterm_withItemsQueuedIntoAStalledSink_logsTheAbandonedWarning() throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process child = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
        StalledApplication.class.getName()).redirectErrorStream(true).start();
    StringBuffer output = new StringBuffer();
    CompletableFuture<Void> queued = new CompletableFuture<>();
    CompletableFuture<Void> ended = CompletableFuture.runAsync(() -> {
      try (BufferedReader lines = new BufferedReader(
          new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line = lines.readLine(); line != null; line = lines.readLine()) {
          output.append(line).append('\n');
          if (line.equals(StalledApplication.QUEUED)) {
            queued.complete(null);
          }
        }
      } catch (java.io.IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    });
    try {
      queued.get(60, TimeUnit.SECONDS);
      // SIGTERM: the JVM runs its shutdown hooks, Spring's and LogManager's. Through the handle, because
      // Process.destroy() also closes the streams, and the child's last lines would be lost to this test.
      assertThat(child.toHandle().destroy()).isTrue();
      assertThat(child.waitFor(60, TimeUnit.SECONDS)).as("child exited; output:%n%s", output).isTrue();
      ended.get(10, TimeUnit.SECONDS);
    } finally {
      child.destroyForcibly();
    }

    assertThat(output.toString())
        .contains("ringbatch batcher 'stalled' closed on shutdown without draining: 10 items abandoned,"
            + " their callers failed: CloseReport{drained=false, written=0, failed=0, abandoned=10");
  }
}
