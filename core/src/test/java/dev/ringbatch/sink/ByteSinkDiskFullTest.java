package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.OutcomeUnknownException;
import dev.ringbatch.RetryPolicy;
import dev.ringbatch.stats.StatsRecorder;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@link ByteSink} on a real 1 MiB tmpfs that fills up in the middle of a batch (root only; skipped otherwise). */
@Timeout(60)
class ByteSinkDiskFullTest {
  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final ByteSink.Encoder<String> LINES =
      (line, buffer) -> buffer.put((line + "\n").getBytes(StandardCharsets.UTF_8));

  private static TmpfsMount disk;

  @BeforeAll
  static void mount() throws Exception {
    disk = TmpfsMount.mount("bytesink", "1m");
    disk.assumeMounted();
  }

  @AfterAll
  static void unmount() throws Exception {
    if (disk != null) {
      disk.unmount();
    }
  }

  @AfterEach
  void emptyDisk() throws IOException {
    try (var files = Files.list(disk.dir)) {
      for (Path file : files.toList()) {
        Files.delete(file);
      }
    }
  }

  /** 64 lines of 256 bytes: 16 KiB, four 4 KiB buffers. */
  private static List<String> lines(String prefix) {
    List<String> lines = new ArrayList<>();
    for (int i = 0; i < 64; i++) {
      String head = prefix + " " + i + " ";
      lines.add(head + "x".repeat(255 - head.length()));
    }
    return lines;
  }

  @Test
  void toFile_diskFullMidBatch_retried_everyRecordOnceAtItsOffset() throws Exception {
    Path file = disk.dir.resolve("log");
    List<String> lines = lines("line");
    List<CompletableFuture<Long>> futures = new ArrayList<>();
    RetryPolicy retry = RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ofMillis(1)).build();
    try (ByteSink<String> sink = ByteSink.toFile(file, LINES).bufferSize(4096).fsync(true).build();
         Batcher<String, Long> batcher = Batcher.of("disk-full", BatcherConfig.builder().maxBatchSize(64)
             .linger(Duration.ofMinutes(1)).retryPolicy(retry).build(), sink)) {
      batcher.addStatsRecorder(new StatsRecorder() {
        @Override
        public void recordRetry(int attempt, Throwable cause) {
          try {
            disk.release(); // room again for the second attempt
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
        }
      });
      disk.fill();
      disk.free(2); // two of the four buffers fit
      for (String line : lines) {
        futures.add(batcher.submit(line));
      }
      for (CompletableFuture<Long> future : futures) {
        assertThat(future).succeedsWithin(WAIT);
      }
    }
    String content = Files.readString(file);
    assertThat(content.lines()).containsExactlyElementsOf(lines); // once each: the first attempt was rolled back
    for (int i = 0; i < lines.size(); i++) {
      int offset = futures.get(i).join().intValue();
      assertThat(content.startsWith(lines.get(i) + "\n", offset)).as("line %s at offset %s", i, offset).isTrue();
    }
  }

  @Test
  void toStream_diskFullMidWrite_noLaterItemToldAWrongOffset() throws Exception {
    Path file = disk.dir.resolve("stream");
    try (ByteSink<String> sink = ByteSink.toStream(new FileOutputStream(file.toFile(), true), LINES)
        .bufferSize(16 * 1024).build()) {
      disk.fill();
      disk.free(2); // 8 KiB of the 16 KiB write go out, then the write fails
      RecordingBatch<String, Long> full = RecordingBatch.of(lines("full").toArray(new String[0]));
      sink.write(full);

      assertThat(full.completed()).isEmpty();
      assertThat(full.failed().values()).allSatisfy(e -> assertThat(e)
          .isExactlyInstanceOf(OutcomeUnknownException.class).cause().hasMessageContaining("No space left"));
      assertThat(Files.size(file)).isEqualTo(8192);

      disk.release();
      RecordingBatch<String, Long> later = RecordingBatch.of(lines("later").toArray(new String[0]));
      sink.write(later);

      String content = Files.readString(file);
      for (Map.Entry<Integer, Long> told : later.completed().entrySet()) { // wrong offsets before: 8 KiB off
        int offset = told.getValue().intValue();
        assertThat(content.startsWith(later.item(told.getKey()) + "\n", offset)).as("at %s", offset).isTrue();
      }
      assertThat(later.completed()).isEmpty();
      assertThat(later.failed().values()).allSatisfy(e -> assertThat(e)
          .isExactlyInstanceOf(IllegalStateException.class).hasMessageStartingWith("ByteSink is broken"));
    }
  }

  @Test
  void toFile_diskFullWithoutRetry_batchFailsWhole_fileAsBefore() throws Exception {
    Path file = disk.dir.resolve("plain");
    try (ByteSink<String> sink = ByteSink.toFile(file, LINES).bufferSize(4096).build()) {
      sink.write(RecordingBatch.of("first"));
      disk.fill();
      disk.free(1);
      RecordingBatch<String, Long> full = RecordingBatch.of(lines("full").toArray(new String[0]));
      assertThatThrownBy(() -> sink.write(full))
          .isInstanceOf(IOException.class).hasMessageContaining("No space left on device");
      assertThat(Files.readString(file)).isEqualTo("first\n");

      disk.release();
      RecordingBatch<String, Long> next = RecordingBatch.of("next");
      sink.write(next);
      assertThat(next.completed()).containsExactly(Map.entry(0, 6L));
    }
    assertThat(Files.readString(file)).isEqualTo("first\nnext\n");
  }
}
