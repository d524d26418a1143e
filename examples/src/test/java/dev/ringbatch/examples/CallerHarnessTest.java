package dev.ringbatch.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import me.tongfei.progressbar.ProgressBar;
import org.junit.jupiter.api.Test;

/** The demos' progress: plain lines, without terminal escape codes, where the output is not a terminal. */
class CallerHarnessTest {

  @Test
  void onTerminal_testJvmWritesToAPipe_isFalse() {
    // JDK 22+ gives this JVM a Console although its output is a pipe: System.console() alone would say true
    assertThat(CallerHarness.onTerminal()).isFalse();
  }

  @Test
  void progressBar_notATerminal_printsPlainAsciiLines() {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        ProgressBar bar = CallerHarness.progressBar("calls", 10, out, false)) {
      bar.stepBy(10);
    }

    String printed = bytes.toString(StandardCharsets.UTF_8);
    assertThat(printed).contains("calls").contains("10/10").doesNotContain("\u001b").doesNotContain("\r");
    assertThat(printed.chars()).allMatch(c -> c < 128);
  }
}
