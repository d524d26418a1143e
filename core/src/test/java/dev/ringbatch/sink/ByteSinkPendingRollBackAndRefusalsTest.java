package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringbatch.OutcomeUnknownException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** A pending rollback after a rotation, a truncation before the first write call, and a closed FileChannel at build. */
@Timeout(60)
class ByteSinkPendingRollBackAndRefusalsTest {
  private static final String OTHER = "OTHER PROCESS WROTE THIS LINE, NOT THE SINK\n";

  @TempDir
  Path dir;

  @AfterEach
  void clearInterrupt() {
    Thread.interrupted();
  }

  /**
   * A rename rotation and an interrupt in the middle of a batch, while the path cannot be reopened yet (a directory
   * stands there for a moment): the rollback's reopen fails, so the rollback is pending. Then another process
   * creates a new file at the path. The commit promises a reopen that finds another file is "not cut"; the pending
   * rollback reopens it, sees it is another file (replaced), and truncates it anyway.
   */
  private ByteSink<String> sinkWithPendingRollBack(Path file) throws Exception {
    Path rotated = dir.resolve("log.1");
    ByteSink.Encoder<String> encoder = (line, buffer) -> {
      if (line.equals("rotate")) { // between the batch's two write calls
        try {
          Files.move(file, rotated);
          Files.createDirectory(file); // the reopen fails for now
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
        Thread.currentThread().interrupt(); // closes the channel at its next call
      }
      buffer.put((line + "\n").getBytes(StandardCharsets.UTF_8));
    };
    ByteSink<String> sink = ByteSink.toFile(file, encoder).bufferSize(8).build();
    sink.write(RecordingBatch.of("first"));
    RecordingBatch<String, Long> batch = RecordingBatch.of("y".repeat(20), "rotate");
    try {
      sink.write(batch);
    } catch (IOException expected) {
      // told below
    }
    Thread.interrupted();
    assertThat(batch.completed()).isEmpty();
    assertThat(batch.failed()).containsKey(0);
    assertThat(OutcomeUnknownException.isIn(batch.failed().get(0))).as("%s", batch.failed()).isTrue();
    // the directory goes, another process's file takes the path
    Files.delete(file);
    Files.writeString(file, OTHER);
    return sink;
  }

  @Test
  void pendingRollBack_reopensAReplacedFile_nextBatch_doesNotCutTheOtherFile() throws Exception {
    Path file = dir.resolve("log");
    try (ByteSink<String> sink = sinkWithPendingRollBack(file)) {
      RecordingBatch<String, Long> next = RecordingBatch.of("next");
      try {
        sink.write(next);
      } catch (IOException ignored) {
        // either way, the other file must stay whole
      }
    }
    assertThat(Files.readString(file)).as("the new file at the path, another process's").startsWith(OTHER);
  }

  @Test
  void pendingRollBack_reopensAReplacedFile_close_doesNotCutTheOtherFile() throws Exception {
    Path file = dir.resolve("log");
    ByteSink<String> sink = sinkWithPendingRollBack(file);
    try {
      sink.close();
    } catch (IOException ignored) {
      // either way, the other file must stay whole
    }
    assertThat(Files.readString(file)).as("the new file at the path, another process's").isEqualTo(OTHER);
  }

  /**
   * A closed FileChannel on a regular file, with fsync: build() used to throw ClosedChannelException; it now
   * takes the closed channel for a pipe and says "fsync needs a regular file, but the FileChannel is not one
   * (null)" about a regular file.
   */
  @Test
  void closedFileChannelOnARegularFile_withFsync_isNotCalledAPipe() throws Exception {
    Path file = dir.resolve("log");
    FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
        StandardOpenOption.APPEND);
    channel.close();
    assertThatThrownBy(() -> ByteSink.toChannel(channel, (String s, java.nio.ByteBuffer b) -> { }).fsync(true)
        .build())
        .isInstanceOf(ClosedChannelException.class);
  }

  /**
   * The file truncated (copytruncate) while the batch is encoded, before its first write call: the size check
   * before the call fails the batch and no write call is made, yet writeCalls() ("write calls made so far", every
   * call made, whether it returned or threw) counts one.
   */
  @Test
  void truncatedBeforeTheFirstWriteCall_noCallMade_butWriteCallsCountsOne() throws Exception {
    Path file = dir.resolve("log");
    ByteSink.Encoder<String> encoder = (line, buffer) -> {
      if (line.equals("truncate")) {
        try (FileChannel other = FileChannel.open(file, StandardOpenOption.WRITE)) {
          other.truncate(0);
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      }
      buffer.put((line + "\n").getBytes(StandardCharsets.UTF_8));
    };
    try (ByteSink<String> sink = ByteSink.toFile(file, encoder).build()) {
      sink.write(RecordingBatch.of("first"));
      long before = sink.writeCalls();
      RecordingBatch<String, Long> batch = RecordingBatch.of("truncate");
      Throwable thrown = null;
      try {
        sink.write(batch);
      } catch (IOException e) {
        thrown = e;
      }
      assertThat(Files.size(file)).as("nothing of the batch was written (thrown: %s)", thrown).isZero();
      assertThat(sink.writeCalls() - before).as("write calls made for a batch none of whose calls was made")
          .isZero();
    }
  }
}
