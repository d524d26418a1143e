package dev.ringbatch.examples;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.BatcherStats;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class QuickStartTest {

  @Test
  void run_smallSizes_everyLineWrittenAndReported() throws Exception {
    ByteArrayOutputStream buffer = new ByteArrayOutputStream();

    BatcherStats stats = QuickStart.run(4, 50, new PrintStream(buffer, true, StandardCharsets.UTF_8));

    assertThat(stats.written()).isEqualTo(4 * 50 + 3); // the callers' lines plus the three examples
    assertThat(stats.failed() + stats.rejected() + stats.abandoned()).isZero();
    assertThat(buffer.toString(StandardCharsets.UTF_8))
        .contains("submitAndWait -> 16, submit -> 10")
        .contains("4 callers wrote 200 lines")
        .contains("CloseReport{drained=true, written=203");
  }

  @Test
  void helloRingbatch_printsTheResultsTheReadmePromises() throws Exception {
    assertThat(stdoutOf(HelloRingbatch::main)).isEqualTo("16 5 true" + System.lineSeparator());
  }

  @Test
  void userGuideExamples_allRunToTheEnd() throws Exception {
    assertThat(stdoutOf(UserGuideExamples::main))
        .contains("result: 40")
        .contains("failed alone: order 5 has no customer")
        .contains("length: 5")
        .contains("written=1 rejected=0")
        .contains("CloseReport{drained=true")
        .endsWith("all user guide examples ran" + System.lineSeparator());
  }

  /** A program's {@code main}, run with no arguments. */
  private interface Main {
    void main(String[] args) throws Exception;
  }

  private static String stdoutOf(Main program) throws Exception {
    PrintStream original = System.out;
    ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    System.setOut(new PrintStream(buffer, true, StandardCharsets.UTF_8));
    try {
      program.main(new String[0]);
    } finally {
      System.setOut(original);
    }
    return buffer.toString(StandardCharsets.UTF_8);
  }
}
