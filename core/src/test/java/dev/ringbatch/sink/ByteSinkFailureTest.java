package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.OutcomeUnknownException;
import dev.ringbatch.RetryPolicy;
import dev.ringbatch.stats.StatsRecorder;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.Pipe;
import java.nio.channels.WritableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * What callers of a {@link ByteSink} are told when the target fails part-way through a batch: a file is
 * rolled back and the batch thrown (retryable); what cannot be rolled back is reported as outcome unknown.
 */
@Timeout(60)
class ByteSinkFailureTest {
  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final ByteSink.Encoder<String> LINES =
      (line, buffer) -> buffer.put((line + "\n").getBytes(StandardCharsets.UTF_8));

  @TempDir
  Path dir;

  private ObservingFileChannel channel(String name) throws IOException {
    return new ObservingFileChannel(FileChannel.open(dir.resolve(name), StandardOpenOption.CREATE,
        StandardOpenOption.WRITE, StandardOpenOption.APPEND));
  }

  @Test
  void diskFillsMidBatch_fileRolledBackAndBatchThrown_nextBatchAtTheSameOffset() throws Exception {
    ObservingFileChannel channel = channel("full");
    try (ByteSink<String> sink = ByteSink.toChannel(channel, LINES).bufferSize(8).build()) {
      channel.writeBudget = 10; // the first buffer fits, the second is cut short, then the disk is full
      assertThatThrownBy(() -> sink.write(RecordingBatch.of("abc", "def", "ghi", "jkl", "mno")))
          .isExactlyInstanceOf(IOException.class).hasMessage(ObservingFileChannel.DISK_FULL);
      assertThat(Files.size(dir.resolve("full"))).isZero();

      channel.writeBudget = Long.MAX_VALUE;
      RecordingBatch<String, Long> next = RecordingBatch.of("xyz");
      sink.write(next);
      assertThat(next.completed()).containsExactly(Map.entry(0, 0L));
    }
    assertThat(Files.readString(dir.resolve("full"))).isEqualTo("xyz\n");
    assertThat(channel.events).containsSubsequence("write 8", "write 8", "truncate 0", "write 4");
  }

  @Test
  void diskFillsAndTruncateFails_writtenItemsOutcomeUnknown_restFailed_nextBatchTruncatesFirst() throws Exception {
    ObservingFileChannel channel = channel("stuck");
    try (ByteSink<String> sink = ByteSink.toChannel(channel, LINES).bufferSize(8).build()) {
      channel.writeBudget = 10;
      channel.failTruncate = true;
      RecordingBatch<String, Long> batch = RecordingBatch.of("abc", "def", "ghi", "jkl", "mno", "pqr");

      sink.write(batch);

      assertThat(batch.completed()).isEmpty();
      assertThat(batch.failed()).containsOnlyKeys(0, 1, 2, 3, 4, 5);
      for (int i = 0; i < 4; i++) { // handed to the file: whole (0, 1), in part (2), maybe (3)
        assertThat(batch.failed().get(i)).isExactlyInstanceOf(OutcomeUnknownException.class)
            .hasMessage("writing the batch failed (java.io.IOException: No space left on device) after this item's"
                + " bytes were handed to the file, and rolling the file back to offset 0, where the batch began,"
                + " failed too (java.io.IOException: Read-only file system): the item may be in the file, wholly or"
                + " in part; the sink truncates the file back to that offset before it writes anything else")
            .cause().hasMessage(ObservingFileChannel.DISK_FULL);
      }
      for (int i = 4; i < 6; i++) { // never handed to the file
        assertThat(batch.failed().get(i)).isExactlyInstanceOf(IOException.class)
            .hasMessage(ObservingFileChannel.DISK_FULL);
      }
      assertThat(Files.size(dir.resolve("stuck"))).isEqualTo(10);

      channel.writeBudget = Long.MAX_VALUE;
      channel.failTruncate = false;
      RecordingBatch<String, Long> next = RecordingBatch.of("xyz");
      sink.write(next);
      assertThat(next.completed()).containsExactly(Map.entry(0, 0L));
    }
    assertThat(Files.readString(dir.resolve("stuck"))).isEqualTo("xyz\n");
  }

  @Test
  void rollBackStillFailing_nextBatchThrownUnwritten_closeTruncates() throws Exception {
    ObservingFileChannel channel = channel("pending");
    ByteSink<String> sink = ByteSink.toChannel(channel, LINES).build();
    sink.write(RecordingBatch.of("kept"));
    channel.writeBudget = 3;
    channel.failTruncate = true;
    RecordingBatch<String, Long> torn = RecordingBatch.of("torn");
    sink.write(torn);
    assertThat(torn.failed().get(0)).isExactlyInstanceOf(OutcomeUnknownException.class);
    channel.writeBudget = Long.MAX_VALUE;

    assertThatThrownBy(() -> sink.write(RecordingBatch.of("next")))
        .isExactlyInstanceOf(IOException.class)
        .hasMessage("cannot truncate the file back to offset 5, where a failed batch began, which the sink must do"
            + " before it writes again: java.io.IOException: Read-only file system");
    assertThat(Files.readString(dir.resolve("pending"))).isEqualTo("kept\ntor");

    channel.failTruncate = false;
    sink.close();
    assertThat(Files.readString(dir.resolve("pending"))).isEqualTo("kept\n");
    assertThat(channel.isOpen()).isFalse();
  }

  @Test
  void fsync_forceFails_fileRolledBackAndBatchThrown() throws Exception {
    ObservingFileChannel channel = channel("wal");
    try (ByteSink<String> sink = ByteSink.toChannel(channel, LINES).fsync(true).build()) {
      sink.write(RecordingBatch.of("kept"));
      channel.forceFailures = 1;
      assertThatThrownBy(() -> sink.write(RecordingBatch.of("lost", "too")))
          .isExactlyInstanceOf(IOException.class).hasMessage("Input/output error");
      assertThat(Files.readString(dir.resolve("wal"))).isEqualTo("kept\n");

      RecordingBatch<String, Long> next = RecordingBatch.of("next");
      sink.write(next);
      assertThat(next.completed()).containsExactly(Map.entry(0, 5L));
    }
    assertThat(Files.readString(dir.resolve("wal"))).isEqualTo("kept\nnext\n");
    assertThat(channel.events).containsExactly("write 5", "force", "write 9", "force", "truncate 5", "force",
        "write 5", "force");
  }

  @Test
  void fsync_forceKeepsFailing_everyItemOutcomeUnknown() throws Exception {
    ObservingFileChannel channel = channel("eio");
    try (ByteSink<String> sink = ByteSink.toChannel(channel, LINES).fsync(true).build()) {
      channel.forceFailures = 2; // the batch's force, then the rollback's
      RecordingBatch<String, Long> batch = RecordingBatch.of("a", "b");

      sink.write(batch);

      assertThat(batch.failed()).containsOnlyKeys(0, 1);
      assertThat(batch.failed().values()).allSatisfy(e -> assertThat(e)
          .isExactlyInstanceOf(OutcomeUnknownException.class).cause().hasMessage("Input/output error"));
    }
  }

  @Test
  void retryOnDiskFull_everyRecordOnceAtItsOffset() throws Exception {
    ObservingFileChannel channel = channel("retried");
    List<String> lines = new ArrayList<>();
    List<CompletableFuture<Long>> futures = new ArrayList<>();
    RetryPolicy retry = RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ofMillis(1)).build();
    try (ByteSink<String> sink = ByteSink.toChannel(channel, LINES).bufferSize(64).build();
         Batcher<String, Long> batcher = Batcher.of("retried", BatcherConfig.builder().maxBatchSize(50)
             .linger(Duration.ofMinutes(1)).retryPolicy(retry).build(), sink)) {
      batcher.addStatsRecorder(new StatsRecorder() {
        @Override
        public void recordRetry(int attempt, Throwable cause) {
          channel.writeBudget = Long.MAX_VALUE; // the disk has room again for the retry
        }
      });
      channel.writeBudget = 200; // about a third of the batch
      for (int i = 0; i < 50; i++) {
        lines.add("record " + i);
        futures.add(batcher.submit("record " + i));
      }
      for (CompletableFuture<Long> future : futures) {
        assertThat(future).succeedsWithin(WAIT);
      }
    }
    String content = Files.readString(dir.resolve("retried"));
    assertThat(content.lines()).containsExactlyElementsOf(lines);
    for (int i = 0; i < lines.size(); i++) {
      int offset = futures.get(i).join().intValue();
      assertThat(content.startsWith(lines.get(i) + "\n", offset)).as("line %s at offset %s", i, offset).isTrue();
    }
  }

  @Test
  void toStream_failsMidWrite_handedItemsUnknown_laterBatchesRefused() throws Exception {
    CuttingStream out = new CuttingStream(14);
    try (ByteSink<String> sink = ByteSink.toStream(out, LINES).bufferSize(8).build()) {
      sink.write(RecordingBatch.of("ok"));
      RecordingBatch<String, Long> batch = RecordingBatch.of("abc", "def", "ghi", "jkl", "mno");

      sink.write(batch);

      assertThat(batch.completed()).isEmpty(); // a stream holds nothing for sure until flush() returns
      for (int i = 0; i < 4; i++) {
        assertThat(batch.failed().get(i)).isExactlyInstanceOf(OutcomeUnknownException.class)
            .hasMessage("the write to the OutputStream failed (java.io.IOException: No space left on device)"
                + " after this item's bytes were handed to it: they may have gone out, wholly or in part");
      }
      assertThat(batch.failed().get(4)).hasMessage("No space left on device");

      out.room = Integer.MAX_VALUE;
      RecordingBatch<String, Long> later = RecordingBatch.of("later");
      sink.write(later);
      assertThat(later.completed()).isEmpty();
      assertThat(later.failed().get(0)).isExactlyInstanceOf(IllegalStateException.class)
          .hasMessage("ByteSink is broken: a write to its OutputStream failed (java.io.IOException: No space left on"
              + " device) after bytes of a batch may have gone out, so the offset of every later item is unknown;"
              + " close this sink and build a new one")
          .hasCauseInstanceOf(IOException.class);
    }
    assertThat(out.written.toString(StandardCharsets.UTF_8)).isEqualTo("ok\nabc\ndef\nghi");
  }

  @Test
  void toChannel_plainChannelFailsMidBatch_completedWritesSucceed_restUnknownOrFailed() throws Exception {
    CuttingStream target = new CuttingStream(7);
    WritableByteChannel channel = new WritableByteChannel() {
      @Override
      public int write(ByteBuffer src) throws IOException {
        byte[] bytes = new byte[Math.min(src.remaining(), 6)]; // short writes, as a socket may do
        src.get(bytes);
        target.write(bytes, 0, bytes.length);
        return bytes.length;
      }

      @Override
      public boolean isOpen() {
        return true;
      }

      @Override
      public void close() {
        // nothing to release
      }
    };
    try (ByteSink<String> sink = ByteSink.toChannel(channel, LINES).bufferSize(8).build()) {
      RecordingBatch<String, Long> batch = RecordingBatch.of("abc", "def", "ghi", "jkl", "mno");

      sink.write(batch);

      assertThat(batch.completed()).containsExactly(Map.entry(0, 0L)); // bytes 0-3, in a write that returned
      assertThat(batch.failed().get(1)).isExactlyInstanceOf(OutcomeUnknownException.class) // bytes 4-7: in part
          .hasMessage("the write to the WritableByteChannel failed (java.io.IOException: No space left on device)"
              + " after this item's bytes were handed to it: they may have gone out, wholly or in part");
      for (int i = 2; i < 5; i++) {
        assertThat(batch.failed().get(i)).isExactlyInstanceOf(IOException.class);
      }
      RecordingBatch<String, Long> later = RecordingBatch.of("later");
      sink.write(later);
      assertThat(later.failed().get(0)).isExactlyInstanceOf(IllegalStateException.class)
          .hasMessageStartingWith("ByteSink is broken: a write to its WritableByteChannel failed");
    }
  }

  @Test
  void toChannel_channelAcceptsNothing_failsInsteadOfSpinning() throws Exception {
    AtomicInteger calls = new AtomicInteger();
    WritableByteChannel stalled = new WritableByteChannel() {
      @Override
      public int write(ByteBuffer src) throws IOException {
        if (calls.incrementAndGet() > 1_000_000) {
          throw new IOException("spun a million times");
        }
        return 0;
      }

      @Override
      public boolean isOpen() {
        return true;
      }

      @Override
      public void close() {
        // nothing to release
      }
    };
    try (ByteSink<String> sink = ByteSink.toChannel(stalled, LINES).build()) {
      assertThatThrownBy(() -> sink.write(RecordingBatch.of("a", "b")))
          .isExactlyInstanceOf(IOException.class)
          .hasMessage("the channel accepted 0 of 4 bytes: ByteSink needs a blocking channel, whose write waits"
              + " until it can take bytes");
    }
    assertThat(calls).hasValue(1);
  }

  @Test
  void toChannel_nonBlockingChannel_rejected() throws Exception {
    Pipe pipe = Pipe.open();
    try (Pipe.SinkChannel sink = pipe.sink()) {
      pipe.source().close();
      sink.configureBlocking(false);
      assertThatThrownBy(() -> ByteSink.toChannel(sink, LINES))
          .isExactlyInstanceOf(IllegalArgumentException.class)
          .hasMessage("channel must be in blocking mode but was a non-blocking " + sink.getClass().getName()
              + ": ByteSink writes on the consumer thread and cannot wait for it; call configureBlocking(true) first");
    }
  }

  /** Takes {@link #room} bytes, then writes what still fits of the next call and throws, as a full disk does. */
  private static final class CuttingStream extends OutputStream {
    final ByteArrayOutputStream written = new ByteArrayOutputStream();
    volatile int room;

    CuttingStream(int room) {
      this.room = room;
    }

    @Override
    public void write(int b) throws IOException {
      write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      int fits = Math.min(len, room);
      written.write(b, off, fits);
      room -= fits;
      if (fits < len) {
        throw new IOException(ObservingFileChannel.DISK_FULL);
      }
    }
  }
}
