package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * logrotate's copytruncate, run twice: the second rotated copy holds what was written since the first rotation (one
 * line), and no run of NULs: the file is appended to, never written past its end.
 */
@Timeout(30)
class ByteSinkCopytruncateRotationsTest {
  private static final ByteSink.Encoder<String> LINES =
      (line, buffer) -> buffer.put((line + "\n").getBytes(StandardCharsets.UTF_8));

  @TempDir
  Path dir;

  private static void copytruncate(Path file, Path to) throws Exception {
    Files.write(to, Files.readAllBytes(file)); // logrotate copies the bytes it reads (a hole reads as NULs)
    try (FileChannel f = FileChannel.open(file, StandardOpenOption.WRITE)) {
      f.truncate(0);
    }
  }

  @Test
  void twoCopytruncateRotations_secondCopyHoldsOnlyWhatWasWrittenSinceTheFirst() throws Exception {
    Path file = dir.resolve("log");
    try (ByteSink<String> sink = ByteSink.toFile(file, LINES).build()) {
      sink.write(RecordingBatch.of("x".repeat(100_000)));
      copytruncate(file, dir.resolve("log.1"));
      sink.write(RecordingBatch.of("after-first-rotation"));
      copytruncate(file, dir.resolve("log.2"));
    }
    byte[] second = Files.readAllBytes(dir.resolve("log.2"));
    assertThat(second.length).as("bytes in log.2, which got one line of 21 bytes since log.1").isLessThan(1_000);
  }
}
