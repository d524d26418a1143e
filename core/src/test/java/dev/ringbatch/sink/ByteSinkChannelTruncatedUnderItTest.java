package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** A FileChannel given to toChannel, truncated under the sink between batches: the next offsets are true. */
@Timeout(30)
class ByteSinkChannelTruncatedUnderItTest {
  private static final ByteSink.Encoder<String> LINES =
      (line, buffer) -> buffer.put((line + "\n").getBytes(StandardCharsets.UTF_8));

  @TempDir
  Path dir;

  @Test
  void appendingFileChannelTruncatedBetweenBatches_itemToldWrittenIsAtItsOffset() throws Exception {
    Path file = dir.resolve("log");
    try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
        StandardOpenOption.APPEND);
        ByteSink<String> sink = ByteSink.toChannel(channel, LINES).build()) {
      RecordingBatch<String, Long> kept = RecordingBatch.of("kept");
      sink.write(kept);
      assertThat(kept.completed()).containsExactly(Map.entry(0, 0L));

      try (FileChannel rotate = FileChannel.open(file, StandardOpenOption.WRITE)) {
        rotate.truncate(0); // copytruncate, after the copy
      }

      RecordingBatch<String, Long> next = RecordingBatch.of("next");
      sink.write(next);
      String content = Files.readString(file);
      assertThat(next.completed()).hasSize(1);
      long told = next.completed().get(0);
      assertThat(content.startsWith("next\n", (int) Math.min(told, content.length())))
          .as("'next' told written at offset %s; the file holds '%s'", told, content.replace("\n", "\\n"))
          .isTrue();
    }
  }
}
