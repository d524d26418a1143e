package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Hostile review of the issue-20 ByteSink change, on real files. */
@Timeout(60)
class ByteSinkFsyncAndTruncateTest {
  private static final ByteSink.Encoder<String> LINES =
      (line, buffer) -> buffer.put((line + "\n").getBytes(StandardCharsets.UTF_8));

  @TempDir
  Path dir;

  private final List<Path> forced = new CopyOnWriteArrayList<>();

  private FileChannel observe(Path directory) throws IOException {
    forced.add(directory);
    return FileChannel.open(directory, StandardOpenOption.READ);
  }

  /**
   * toFile on a symbolic link whose target does not exist yet: CREATE_NEW refuses the link, the fallback CREATE
   * creates the target file, and the sink never counts it as created, so no directory is forced: with fsync(true)
   * the records are told durable while the new file's name is not.
   */
  @Test
  void fsync_fileCreatedThroughASymbolicLink_itsDirectoryIsForced() throws Exception {
    Path logs = Files.createDirectory(dir.resolve("logs"));
    Path link = Files.createSymbolicLink(dir.resolve("current"), logs.resolve("wal-0001"));
    assertThat(Files.exists(logs.resolve("wal-0001"))).isFalse();

    try (ByteSink<String> sink = ByteSink.toFile(link, LINES).fsync(true).directoryOpener(this::observe).build()) {
      RecordingBatch<String, Long> batch = RecordingBatch.of("a", "b");
      sink.write(batch);

      assertThat(batch.completed()).hasSize(2);
      assertThat(Files.readString(logs.resolve("wal-0001"))).as("the sink created the target").isEqualTo("a\nb\n");
      assertThat(sink.directoryForces()).as("directory forces after creating a file, told durable").isEqualTo(1);
    }
  }

  /**
   * close() from a thread with a pending interrupt (a shutdown path that was interrupted) while a batch is in the
   * sink: rollBack() sets a pending interrupt aside so that the truncation is not lost to ClosedByInterruptException,
   * but close() does not. The truncation fails, the abandoned batch's bytes stay in the file, and a new sink appends
   * after them.
   */
  @Test
  void closeFromAnInterruptedThread_stillTruncatesTheUnfinishedBatch() throws Exception {
    Path file = dir.resolve("log");
    CountDownLatch encoding = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    ByteSink.Encoder<String> waiting = (line, buffer) -> {
      if (line.equals("wait")) {
        encoding.countDown();
        try {
          release.await(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      LINES.encode(line, buffer);
    };
    ByteSink<String> sink = ByteSink.toFile(file, waiting).bufferSize(8).fsync(true).build();
    sink.write(RecordingBatch.of("kept"));
    String big = "x".repeat(20); // larger than the buffer: written alone, before "wait" is encoded
    RecordingBatch<String, Long> late = RecordingBatch.of(big, "wait");
    CompletableFuture<Void> writing = CompletableFuture.runAsync(() -> {
      try {
        sink.write(late);
      } catch (Throwable ignored) {
        // what the late batch is told is not the point here
      }
    });
    assertThat(encoding.await(10, TimeUnit.SECONDS)).isTrue();

    Throwable closeFailure = null;
    Thread.currentThread().interrupt();
    try {
      sink.close();
    } catch (IOException e) {
      closeFailure = e;
    } finally {
      Thread.interrupted();
    }
    release.countDown();
    writing.get(10, TimeUnit.SECONDS);

    assertThat(Files.readString(file)).as("file after close(); close threw %s; late batch told %s", String.valueOf(closeFailure), late.failed())
        .isEqualTo("kept\n");
  }
}
