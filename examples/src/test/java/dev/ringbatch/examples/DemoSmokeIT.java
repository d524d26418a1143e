package dev.ringbatch.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Every demo at small sizes: its RESULT line parses, every acknowledged write is there, speedups are real numbers. */
class DemoSmokeIT {
  private static final Pattern RESULT = Pattern.compile("^RESULT (\\w+)((?: \\w+=\\S+)+)$", Pattern.MULTILINE);

  @TempDir
  Path dir;

  @Test
  void jdbc() throws Exception {
    Map<String, String> result = run("jdbc", "--callers", "8", "--rows", "2000");

    assertThat(result).containsEntry("demo", "jdbc").containsEntry("callers", "8").containsEntry("rows", "2000")
        .containsEntry("threads", "platform").containsEntry("sink", "copy")
        .containsEntry("lost", "0").containsKeys("unbatched_rows_per_s", "batched_rows_per_s", "copy_rows_per_s")
        .containsEntry("warmup_rows", "400"); // a fifth of the rows, untimed, and truncated before the timed runs
    assertThat(Double.parseDouble(result.get("speedup"))).isPositive();
    assertThat(Double.parseDouble(result.get("mean_batch"))).isGreaterThanOrEqualTo(1.0);
    // the hand-written queue batchers and the fitted bound, measured in the same run
    assertThat(Double.parseDouble(result.get("queue_copy_rows_per_s"))).isPositive();
    assertThat(Double.parseDouble(result.get("queue_rewrite_rows_per_s"))).isPositive();
    assertThat(Double.parseDouble(result.get("queue_copy_batch"))).isGreaterThanOrEqualTo(1.0);
    assertThat(Double.parseDouble(result.get("bound_rows_per_s"))).as("result=%s", result).isPositive().isFinite();
    assertThat(Double.parseDouble(result.get("vs_best_queue"))).isPositive();
  }

  @Test
  void jdbc_withBadRows_ringbatchFailsOnlyThemWhileTheQueueBatcherFailsTheirWholeBatches() throws Exception {
    Map<String, String> result = run("jdbc", "--callers", "8", "--rows", "2000", "--bad-percent", "1",
        "--durability", "off");

    assertThat(result).containsEntry("bad_rows", "20").containsEntry("failed", "20").containsEntry("lost", "0");
    assertThat(Long.parseLong(result.get("queue_copy_failed"))).as("result=%s", result).isGreaterThan(20);
  }

  @Test
  void jdbc_inRotatingRounds_everyRoundFailsOnlyTheBadRows_andLosesNone() throws Exception {
    Map<String, String> result = run("jdbc", "--callers", "8", "--rows", "1000", "--bad-percent", "1",
        "--durability", "off", "--rounds", "3", "--warmup", "100");

    assertThat(result).containsEntry("rounds", "3").containsEntry("warmup_rows", "100")
        .containsEntry("bad_rows", "10").containsEntry("failed", "10").containsEntry("lost", "0");
    assertThat(Double.parseDouble(result.get("vs_best_queue"))).as("result=%s", result).isPositive().isFinite();
    assertThat(Double.parseDouble(result.get("queue_copy_rows_per_s"))).isPositive();
  }

  @Test
  void jdbc_virtualThreadCallers() throws Exception {
    org.junit.jupiter.api.Assumptions.assumeTrue(Runtime.version().feature() >= 21, "virtual threads need JDK 21+");
    Map<String, String> result = run("jdbc", "--threads", "virtual", "--callers", "500", "--rows", "3000");

    assertThat(result).containsEntry("threads", "virtual").containsEntry("callers", "500")
        .containsEntry("lost", "0");
    assertThat(Double.parseDouble(result.get("speedup"))).isPositive();
  }

  @Test
  void jdbc_virtualThreadsOnAnOldJdk_failBeforeTheDatabaseStarts() {
    org.junit.jupiter.api.Assumptions.assumeTrue(Runtime.version().feature() < 21, "virtual threads exist here");
    assertThatThrownBy(() -> run("jdbc", "--threads", "virtual", "--rows", "10"))
        .hasMessageContaining("--threads virtual needs JDK 21 or later");
  }

  @Test
  void jdbc_rowsSink() throws Exception {
    Map<String, String> result = run("jdbc", "--callers", "4", "--rows", "500", "--sink", "rows",
        "--durability", "off");

    assertThat(result).containsEntry("lost", "0");
  }

  @Test
  void jdbc_unnestSink() throws Exception {
    Map<String, String> result = run("jdbc", "--callers", "4", "--rows", "500", "--sink", "unnest",
        "--durability", "off");

    assertThat(result).containsEntry("sink", "unnest").containsEntry("lost", "0");
  }

  @Test
  void jdbc_copySinkOnTwoConnections() throws Exception {
    Map<String, String> result = run("jdbc", "--callers", "16", "--rows", "3000", "--sink", "copy",
        "--connections", "2", "--durability", "off");

    assertThat(result).containsEntry("sink", "copy").containsEntry("connections", "2").containsEntry("lost", "0");
  }

  @Test
  void jdbc_copySinkWithBadRows_failsExactlyTheBadOnes() throws Exception {
    Map<String, String> result = run("jdbc", "--callers", "8", "--rows", "2000", "--bad-percent", "5",
        "--durability", "off");

    assertThat(result).containsEntry("sink", "copy").containsEntry("bad_rows", "100").containsEntry("failed", "100")
        .containsEntry("lost", "0");
  }

  @Test
  void jdbc_connectionsWithoutTheCopySink_refusedBeforeTheDatabaseStarts() {
    assertThatThrownBy(() -> run("jdbc", "--sink", "rows", "--connections", "2"))
        .hasMessageContaining("--connections 2 needs --sink copy");
  }

  @Test
  void fsync() throws Exception {
    Map<String, String> result = run("fsync", "--callers", "8", "--records", "1000", "--dir", dir.toString());

    assertThat(result).containsEntry("demo", "fsync").containsEntry("records", "1000").containsEntry("lost", "0");
    assertThat(Long.parseLong(result.get("fsyncs_batched"))).isBetween(1L, 1000L);
    assertThat(Double.parseDouble(result.get("speedup"))).isPositive();
  }

  @Test
  void http() throws Exception {
    Map<String, String> result = run("http", "--callers", "8", "--requests", "500");

    assertThat(result).containsEntry("demo", "http").containsEntry("requests", "500")
        .containsEntry("failed", "0").containsEntry("lost", "0");
    assertThat(Double.parseDouble(result.get("speedup"))).isPositive();
  }

  @Test
  void unknownOption_namedInTheError() {
    assertThatThrownBy(() -> run("jdbc", "--rowz", "10"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown option(s) [rowz] for demo 'jdbc'");
  }

  private static Map<String, String> run(String... args) throws Exception {
    ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    String line = Demo.run(args, new PrintStream(buffer, true, StandardCharsets.UTF_8));
    assertThat(buffer.toString(StandardCharsets.UTF_8)).contains(line);
    Matcher m = RESULT.matcher(line);
    assertThat(m.matches()).as("RESULT line: %s", line).isTrue();
    Map<String, String> fields = new LinkedHashMap<>();
    fields.put("demo", m.group(1));
    for (String pair : m.group(2).trim().split(" ")) {
      int eq = pair.indexOf('=');
      fields.put(pair.substring(0, eq), pair.substring(eq + 1));
    }
    return fields;
  }
}
