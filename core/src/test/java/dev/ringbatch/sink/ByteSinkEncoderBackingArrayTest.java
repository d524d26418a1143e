package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An encoder that copies into {@code array()} at {@code position()} and forgets {@code arrayOffset()} (harmless on a
 * buffer from {@code ByteBuffer.allocate}) cannot write over the record before its own: the sink's buffer is direct.
 */
@Timeout(30)
class ByteSinkEncoderBackingArrayTest {
  /** Copies the line into the backing array, ignoring arrayOffset(): a common bug, latent with allocate(). */
  private static final ByteSink.Encoder<String> ARRAY_COPY = (line, buffer) -> {
    byte[] bytes = (line + "\n").getBytes(StandardCharsets.UTF_8);
    if (buffer.remaining() < bytes.length) {
      throw new java.nio.BufferOverflowException();
    }
    System.arraycopy(bytes, 0, buffer.array(), buffer.position(), bytes.length);
    buffer.position(buffer.position() + bytes.length);
  };

  @Test
  void encoderIgnoringArrayOffset_neverChangesARecordToldWritten() throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    RecordingBatch<String, Long> batch = RecordingBatch.of("aa", "bb", "cc");
    try (ByteSink<String> sink = ByteSink.toStream(out, ARRAY_COPY).build()) {
      sink.write(batch);
    }
    String written = out.toString(StandardCharsets.UTF_8);
    String[] records = {"aa\n", "bb\n", "cc\n"};
    assertThat(batch.completed().size() + batch.failed().size()).as("every item told something").isEqualTo(3);
    for (Map.Entry<Integer, Long> told : batch.completed().entrySet()) {
      assertThat(written.startsWith(records[told.getKey()], told.getValue().intValue()))
          .as("item %s told written at offset %s; the stream holds %s", told.getKey(), told.getValue(),
              written.replace("\n", "\\n"))
          .isTrue();
    }
  }
}
