package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A file changed under the sink: rotated away by a rename and then reopened at its path after a stray interrupt,
 * or truncated by logrotate's copytruncate. The sink takes the new file's end as its position.
 */
@Timeout(30)
class ByteSinkFileChangedUnderItTest {
  private static final ByteSink.Encoder<String> LINES = (line, buffer) -> {
    if (line.equals("poke")) {
      Thread.currentThread().interrupt(); // a stray interrupt, as in ByteSinkInterruptTest
    }
    buffer.put((line + "\n").getBytes(StandardCharsets.UTF_8));
  };

  @TempDir
  Path dir;

  @AfterEach
  void clearInterrupt() {
    Thread.interrupted();
  }

  @Test
  void fileRotatedAway_thenStrayInterrupt_sinkCarriesOnInTheNewFile() throws Exception {
    Path file = dir.resolve("log");
    ByteSink<String> sink = ByteSink.toFile(file, LINES).build();
    RecordingBatch<String, Long> kept = RecordingBatch.of("kept");
    sink.write(kept);
    assertThat(kept.completed()).containsExactly(Map.entry(0, 0L));

    Files.move(file, dir.resolve("log.1"), StandardCopyOption.ATOMIC_MOVE); // log rotation by rename
    try {
      sink.write(RecordingBatch.of("poke"));
    } catch (Exception expected) {
      // the interrupted batch fails; what matters is the sink after it
    } finally {
      Thread.interrupted(); // as the batcher does before its next sink call
    }

    RecordingBatch<String, Long> next = RecordingBatch.of("c");
    Throwable thrown = null;
    try {
      sink.write(next);
    } catch (Exception e) {
      thrown = e;
    }
    Throwable closeThrown = null;
    try {
      sink.close();
    } catch (Exception e) {
      closeThrown = e;
    }

    assertThat(thrown).as("the batch after the interrupt").isNull();
    assertThat(next.completed()).containsExactly(Map.entry(0, 0L));
    assertThat(Files.readString(file)).isEqualTo("c\n");
    assertThat(closeThrown).as("close()").isNull();
  }

  /** logrotate's copytruncate, the one rotation a sink that never reopens its path can live with. */
  @Test
  void fileTruncatedByCopytruncateRotation_nextOffsetsAreFileOffsets() throws Exception {
    Path file = dir.resolve("log");
    try (ByteSink<String> sink = ByteSink.toFile(file, LINES).build()) {
      sink.write(RecordingBatch.of("kept"));
      Files.copy(file, dir.resolve("log.1"));
      try (java.nio.channels.FileChannel rotate = java.nio.channels.FileChannel.open(file,
          java.nio.file.StandardOpenOption.WRITE)) {
        rotate.truncate(0);
      }
      RecordingBatch<String, Long> next = RecordingBatch.of("next");
      sink.write(next);
      assertThat(Files.readString(file)).isEqualTo("next\n");
      assertThat(next.completed()).as("the offset of 'next' in the file").containsExactly(Map.entry(0, 0L));
    }
  }
}
