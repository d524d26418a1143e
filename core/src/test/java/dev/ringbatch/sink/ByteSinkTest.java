package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ByteSinkTest {
  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final ByteSink.Encoder<String> LINES =
      (line, buffer) -> buffer.put((line + "\n").getBytes(StandardCharsets.UTF_8));

  @TempDir
  Path dir;

  @Test
  void toFile_manyCallers_everyLineOnceInProducerOrderAtItsOffset() throws Exception {
    Path file = dir.resolve("log.txt");
    List<CompletableFuture<Long>> futures = new ArrayList<>();
    List<String> lines = new ArrayList<>();
    try (ByteSink<String> sink = ByteSink.toFile(file, LINES).bufferSize(256).build();
         Batcher<String, Long> batcher = Batcher.of("log", BatcherConfig.ofDefaults(), sink)) {
      List<Thread> threads = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        int producer = t;
        List<CompletableFuture<Long>> mine = new ArrayList<>();
        List<String> myLines = new ArrayList<>();
        Thread thread = new Thread(() -> {
          for (int i = 0; i < 500; i++) {
            String line = "p" + producer + " line " + i;
            myLines.add(line);
            mine.add(batcher.submit(line));
          }
          synchronized (futures) {
            futures.addAll(mine);
            lines.addAll(myLines);
          }
        });
        threads.add(thread);
        thread.start();
      }
      for (Thread thread : threads) {
        thread.join(WAIT.toMillis());
      }
      batcher.close(WAIT);
    }

    byte[] content = Files.readAllBytes(file);
    List<String> written = Files.readAllLines(file);
    assertThat(written).hasSize(2000).containsExactlyInAnyOrderElementsOf(lines);
    for (int p = 0; p < 4; p++) {
      String prefix = "p" + p + " ";
      List<String> own = written.stream().filter(l -> l.startsWith(prefix)).toList();
      for (int i = 0; i < own.size(); i++) {
        assertThat(own.get(i)).isEqualTo(prefix + "line " + i);
      }
    }
    for (int i = 0; i < futures.size(); i++) {
      int offset = futures.get(i).join().intValue();
      String expected = lines.get(i) + "\n";
      assertThat(new String(content, offset, expected.length(), StandardCharsets.UTF_8)).isEqualTo(expected);
    }
  }

  @Test
  void toFile_appendsAfterExistingContent() throws Exception {
    Path file = dir.resolve("existing.txt");
    Files.writeString(file, "old\n");
    try (ByteSink<String> sink = ByteSink.toFile(file, LINES).build()) {
      RecordingBatch<String, Long> batch = RecordingBatch.of("new");
      sink.write(batch);
      assertThat(batch.completed()).containsEntry(0, 4L);
    }
    assertThat(Files.readString(file)).isEqualTo("old\nnew\n");
  }

  @Test
  void fsync_forcesOncePerBatchBeforeTheFutureCompletes() throws Exception {
    ObservingFileChannel channel = new ObservingFileChannel(FileChannel.open(dir.resolve("wal"),
        StandardOpenOption.CREATE, StandardOpenOption.WRITE));
    AtomicReference<CompletableFuture<Long>> pending = new AtomicReference<>();
    channel.onForce = () -> pending.get() != null && !pending.get().isDone();
    try (ByteSink<String> sink = ByteSink.toChannel(channel, LINES).fsync(true).build();
         Batcher<String, Long> batcher = Batcher.of("wal", BatcherConfig.ofDefaults(), sink)) {
      for (int i = 0; i < 3; i++) {
        CompletableFuture<Long> future = new CompletableFuture<>();
        pending.set(future);
        batcher.submit("record " + i).whenComplete((offset, error) -> future.complete(offset));
        assertThat(future).succeedsWithin(WAIT);
      }
      assertThat(sink.forces()).isEqualTo(3);
    }
    assertThat(channel.onForceResults).containsExactly(true, true, true); // not yet complete when forced
    assertThat(channel.events).containsExactly("write 9", "force", "write 9", "force", "write 9", "force");
  }

  @Test
  void itemLargerThanBuffer_writtenAloneNeverStuck() throws Exception {
    ObservingFileChannel channel = new ObservingFileChannel(FileChannel.open(dir.resolve("big"),
        StandardOpenOption.CREATE, StandardOpenOption.WRITE));
    String big = "x".repeat(39);
    try (ByteSink<String> sink = ByteSink.toChannel(channel, LINES).bufferSize(16).build()) {
      RecordingBatch<String, Long> batch = RecordingBatch.of("aaa", big, "bb");

      sink.write(batch);

      assertThat(batch.completed()).containsEntry(0, 0L).containsEntry(1, 4L).containsEntry(2, 44L);
      assertThat(sink.writeCalls()).isEqualTo(3);
    }
    assertThat(Files.readString(dir.resolve("big"))).isEqualTo("aaa\n" + big + "\nbb\n");
    assertThat(channel.events).containsExactly("write 4", "write 40", "write 3");
  }

  @Test
  void encoderThrows_onlyThatItemFailsAndItsPartialBytesAreDropped() throws Exception {
    ByteSink.Encoder<String> encoder = (line, buffer) -> {
      buffer.put(line.getBytes(StandardCharsets.UTF_8));
      if (line.equals("boom")) {
        throw new IllegalArgumentException("cannot encode " + line);
      }
      buffer.put((byte) '\n');
    };
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (ByteSink<String> sink = ByteSink.toStream(out, encoder).build()) {
      RecordingBatch<String, Long> batch = RecordingBatch.of("a", "boom", "b");

      sink.write(batch);

      assertThat(batch.failed()).containsOnlyKeys(1);
      assertThat(batch.failed().get(1)).hasMessage("cannot encode boom");
      assertThat(batch.completed()).containsEntry(0, 0L).containsEntry(2, 2L);
    }
    assertThat(out.toString(StandardCharsets.UTF_8)).isEqualTo("a\nb\n");
  }

  @Test
  void writeError_failsTheWholeBatchAndLaterBatchesProceed() throws Exception {
    ObservingFileChannel channel = new ObservingFileChannel(FileChannel.open(dir.resolve("full"),
        StandardOpenOption.CREATE, StandardOpenOption.WRITE));
    try (ByteSink<String> sink = ByteSink.toChannel(channel, LINES).build();
         Batcher<String, Long> batcher = Batcher.of("disk", BatcherConfig.ofDefaults(), sink)) {
      channel.failWrites = true;
      assertThat(batcher.submit("lost")).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
          .withCauseInstanceOf(IOException.class).withMessageContaining("No space left on device");
      channel.failWrites = false;
      assertThat(batcher.submit("kept")).succeedsWithin(WAIT).isEqualTo(0L);
    }
    assertThat(Files.readString(dir.resolve("full"))).isEqualTo("kept\n");
  }

  @Test
  void toStream_flushesOncePerBatch() throws Exception {
    AtomicInteger flushes = new AtomicInteger();
    OutputStream counting = new OutputStream() {
      @Override
      public void write(int b) {
        // bytes are not needed here
      }

      @Override
      public void write(byte[] b, int off, int len) {
        // bytes are not needed here
      }

      @Override
      public void flush() {
        flushes.incrementAndGet();
      }
    };
    try (ByteSink<String> sink = ByteSink.toStream(counting, LINES).build()) {
      sink.write(RecordingBatch.of("a", "b", "c"));
      sink.write(RecordingBatch.of("d"));
    }
    assertThat(flushes).hasValue(2);
  }

  @Test
  void toStream_oneWriteCallPerBuffer() throws Exception {
    List<Integer> writes = new ArrayList<>();
    OutputStream recording = new OutputStream() {
      @Override
      public void write(int b) {
        writes.add(1);
      }

      @Override
      public void write(byte[] b, int off, int len) {
        writes.add(len);
      }
    };
    String line = "x".repeat(999); // 1,000 bytes with the newline
    try (ByteSink<String> sink = ByteSink.toStream(recording, LINES).bufferSize(32 * 1024).build()) {
      List<String> lines = new ArrayList<>();
      for (int i = 0; i < 40; i++) {
        lines.add(line);
      }
      sink.write(RecordingBatch.of(lines.toArray(new String[0])));
    }
    assertThat(writes).containsExactly(32_000, 8_000); // 32 lines fill the buffer, 8 more at the end
  }

  @Test
  void bufferSize_zero_rejected() {
    assertThatThrownBy(() -> ByteSink.toStream(new ByteArrayOutputStream(), LINES).bufferSize(0))
        .isExactlyInstanceOf(IllegalArgumentException.class)
        .hasMessage("bufferSize must be positive but was 0");
  }

  @Test
  void fsync_onStream_rejected() {
    assertThatThrownBy(() -> ByteSink.toStream(new ByteArrayOutputStream(), LINES).fsync(true).build())
        .isExactlyInstanceOf(IllegalStateException.class)
        .hasMessage("fsync needs a file or a FileChannel, but the target is an OutputStream");
  }

  @Test
  void bufferSize_aboveOneGibibyte_rejected() {
    assertThatThrownBy(() -> ByteSink.toStream(new ByteArrayOutputStream(), LINES).bufferSize(Integer.MAX_VALUE))
        .isExactlyInstanceOf(IllegalArgumentException.class)
        .hasMessage("bufferSize must be at most 1073741824 but was 2147483647");
  }

  @Test
  void maxRecordBytes_zero_rejected() {
    assertThatThrownBy(() -> ByteSink.toStream(new ByteArrayOutputStream(), LINES).maxRecordBytes(0))
        .isExactlyInstanceOf(IllegalArgumentException.class)
        .hasMessage("maxRecordBytes must be from 1 to 1073741824 but was 0");
  }

  @Test
  void maxRecordBytes_aboveOneGibibyte_rejected() {
    assertThatThrownBy(() -> ByteSink.toStream(new ByteArrayOutputStream(), LINES).maxRecordBytes((1 << 30) + 1))
        .isExactlyInstanceOf(IllegalArgumentException.class)
        .hasMessage("maxRecordBytes must be from 1 to 1073741824 but was 1073741825");
  }

  @Test
  void toChannel_fileChannelBeforeItsEnd_rejected() throws Exception {
    Path file = dir.resolve("existing");
    Files.writeString(file, "old\n");
    try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
      assertThatThrownBy(() -> ByteSink.toChannel(channel, LINES).build())
          .isExactlyInstanceOf(IllegalArgumentException.class)
          .hasMessage("channel must be positioned at the end of its file, where ByteSink appends, but is at 0 of 4"
              + " bytes: open it with StandardOpenOption.APPEND or position it at its size");
    }
    assertThat(Files.readString(file)).isEqualTo("old\n");
  }

  @Test
  void toChannel_fileChannel_resultsAreFileOffsets() throws Exception {
    Path file = dir.resolve("appended");
    Files.writeString(file, "old\n");
    try (ByteSink<String> sink = ByteSink.toChannel(FileChannel.open(file, StandardOpenOption.WRITE,
        StandardOpenOption.APPEND), LINES).build()) {
      RecordingBatch<String, Long> batch = RecordingBatch.of("new");
      sink.write(batch);
      assertThat(batch.completed()).containsEntry(0, 4L);
    }
    assertThat(Files.readString(file)).isEqualTo("old\nnew\n");
  }

  @Test
  void encoder_usingByteBufferDirectly_works() throws Exception {
    ByteSink.Encoder<Long> longs = (value, buffer) -> buffer.putLong(value);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (ByteSink<Long> sink = ByteSink.toStream(out, longs).bufferSize(8).build()) {
      sink.write(RecordingBatch.of(1L, 2L));
    }
    ByteBuffer written = ByteBuffer.wrap(out.toByteArray());
    assertThat(written.getLong()).isEqualTo(1L);
    assertThat(written.getLong()).isEqualTo(2L);
  }
}
