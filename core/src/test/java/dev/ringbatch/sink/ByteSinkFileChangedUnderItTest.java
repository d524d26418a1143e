package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
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
 * or truncated by logrotate's copytruncate, between batches or during one. Items told written are at their offsets;
 * a batch whose file changed while it was written is told its outcome is unknown, never failed with bytes in a file.
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

  /** copytruncate while a batch is being encoded: every item told written is at its offset. */
  @Test
  void copytruncateDuringABatch_itemsToldWrittenAreAtTheirOffsets() throws Exception {
    Path file = dir.resolve("log");
    ByteSink.Encoder<String> rotating = (line, buffer) -> {
      if (line.equals("a")) { // logrotate's copytruncate, while this batch is being encoded
        try (FileChannel rotate = FileChannel.open(file, StandardOpenOption.WRITE)) {
          rotate.truncate(0);
        } catch (java.io.IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      }
      buffer.put((line + "\n").getBytes(StandardCharsets.UTF_8));
    };
    RecordingBatch<String, Long> batch = RecordingBatch.of("a", "b");
    String content;
    try (ByteSink<String> sink = ByteSink.toFile(file, rotating).build()) {
      sink.write(RecordingBatch.of("kept"));
      try {
        sink.write(batch);
      } catch (Exception failedWhole) {
        // acceptable: then nothing is told written
      }
      content = Files.readString(file);
    }
    String[] records = {"a\n", "b\n"};
    for (Map.Entry<Integer, Long> told : batch.completed().entrySet()) {
      assertThat(content.startsWith(records[told.getKey()], told.getValue().intValue()))
          .as("item %s told written at offset %s; the file holds '%s'", told.getKey(), told.getValue(),
              content.replace("\n", "\\n"))
          .isTrue();
    }
  }

  /**
   * copytruncate while a batch is being encoded, and then the batch fails (a stray interrupt on its second write
   * call): a batch the sink says it rolled back has none of its bytes in the file.
   */
  @Test
  void copytruncateDuringABatchThatFails_noItemToldFailedIsInTheFile() throws Exception {
    Path file = dir.resolve("log");
    ByteSink.Encoder<String> rotating = (line, buffer) -> {
      byte[] bytes = (line + "\n").getBytes(StandardCharsets.UTF_8);
      if (buffer.remaining() < bytes.length) {
        throw new java.nio.BufferOverflowException();
      }
      if (line.equals("a")) { // logrotate's copytruncate, while this batch is being encoded
        try (FileChannel rotate = FileChannel.open(file, StandardOpenOption.WRITE)) {
          rotate.truncate(0);
        } catch (java.io.IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      }
      if (line.equals("c")) {
        Thread.currentThread().interrupt(); // a stray interrupt: the batch's second write call fails
      }
      buffer.put(bytes);
    };
    RecordingBatch<String, Long> batch = RecordingBatch.of("a", "bbbbbbbbbb", "c");
    Throwable thrown = null;
    String content;
    try (ByteSink<String> sink = ByteSink.toFile(file, rotating).bufferSize(13).build()) {
      sink.write(RecordingBatch.of("kept"));
      try {
        sink.write(batch);
      } catch (Exception failedWhole) {
        thrown = failedWhole;
      } finally {
        Thread.interrupted();
      }
      content = Files.readString(file);
    }
    java.util.List<String> toldFailedButInFile = new java.util.ArrayList<>();
    if (thrown != null) { // thrown: every item fails with it, "nothing of the batch is in the file"
      for (String item : batch.items()) {
        if (content.contains(item.substring(0, 1))) {
          toldFailedButInFile.add(item);
        }
      }
    }
    assertThat(toldFailedButInFile).as("write() threw %s (the batch 'rolled back'); the file holds '%s'", thrown,
        content.replace("\n", "\\n")).isEmpty();
  }
}
