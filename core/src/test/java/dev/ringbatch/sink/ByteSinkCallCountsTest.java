package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** writeCalls() and forces() count every call made, whether it returned or threw. */@Timeout(30)
class ByteSinkCallCountsTest {
  private static final ByteSink.Encoder<String> LINES =
      (line, buffer) -> buffer.put((line + "\n").getBytes(StandardCharsets.UTF_8));

  @TempDir
  Path dir;

  private static void writeIgnoringFailure(ByteSink<String> sink) {
    try {
      sink.write(RecordingBatch.of("a"));
    } catch (Exception expected) {
      // the batch fails: only the counts are under test
    }
  }

  @Test
  void everyCallMadeIsCounted_whetherItReturnedOrThrew() throws Exception {
    WritableByteChannel zero = new WritableByteChannel() {
      @Override
      public int write(ByteBuffer src) {
        return 0;
      }

      @Override
      public boolean isOpen() {
        return true;
      }

      @Override
      public void close() {
      }
    };
    WritableByteChannel throwing = new WritableByteChannel() {
      @Override
      public int write(ByteBuffer src) throws IOException {
        throw new IOException("No space left on device");
      }

      @Override
      public boolean isOpen() {
        return true;
      }

      @Override
      public void close() {
      }
    };
    OutputStream throwingStream = new OutputStream() {
      @Override
      public void write(int b) throws IOException {
        throw new IOException("No space left on device");
      }
    };
    ObservingFileChannel file = new ObservingFileChannel(FileChannel.open(dir.resolve("f"),
        StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.APPEND));
    file.forceFailures = 1;

    long zeroCalls;
    long throwingCalls;
    long streamCalls;
    long forces;
    try (ByteSink<String> a = ByteSink.toChannel(zero, LINES).build();
         ByteSink<String> b = ByteSink.toChannel(throwing, LINES).build();
         ByteSink<String> c = ByteSink.toStream(throwingStream, LINES).build();
         ByteSink<String> d = ByteSink.toChannel(file, LINES).fsync(true).build()) {
      writeIgnoringFailure(a);
      writeIgnoringFailure(b);
      writeIgnoringFailure(c);
      writeIgnoringFailure(d);
      zeroCalls = a.writeCalls();
      throwingCalls = b.writeCalls();
      streamCalls = c.writeCalls();
      forces = d.forces();
    }
    assertThat(file.events).containsExactly("write 2", "force", "truncate 0", "force");
    assertThat(new long[] {zeroCalls, throwingCalls, streamCalls, forces})
        .as("write calls (channel returning 0, channel throwing, stream throwing), then fsyncs made")
        .containsExactly(1, 1, 1, 2);
  }
}
