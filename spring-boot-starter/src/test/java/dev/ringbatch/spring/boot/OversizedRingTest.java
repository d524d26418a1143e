package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A ring size too large for the heap fails startup with Boot's failure report naming the property, not a bare
 * {@code OutOfMemoryError} (issue 21, docs found false). A child JVM, so that the heap can be small.
 */
class OversizedRingTest {

  @Test
  void ringSizeTooLargeForTheHeap_failureReportNamesTheProperty() throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process child = new ProcessBuilder(java, "-Xmx64m", "-cp", System.getProperty("java.class.path"),
        OversizedRingApplication.class.getName(), "--ringbatch.batchers.big.ring-size=33554432")
        .redirectErrorStream(true).start();
    CompletableFuture<String> output = CompletableFuture.supplyAsync(() -> {
      try {
        return new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    });
    try {
      assertThat(child.waitFor(60, TimeUnit.SECONDS)).as("child exited").isTrue();
    } finally {
      child.destroyForcibly();
    }
    String report = output.get(10, TimeUnit.SECONDS);

    assertThat(child.exitValue()).as(report).isNotZero();
    assertThat(report).contains("APPLICATION FAILED TO START")
        .contains("Invalid value '33554432' for configuration property 'ringbatch.batchers.big.ring-size'")
        .contains("ringSize 33554432 would take about 7.5 GiB of heap for its slots, more than the maximum heap");
  }
}
