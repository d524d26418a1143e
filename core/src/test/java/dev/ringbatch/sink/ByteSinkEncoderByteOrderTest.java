package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The byte order an encoder sets is its own item's: the items after it start big-endian, as one encoded alone does. */
@Timeout(30)
class ByteSinkEncoderByteOrderTest {
  /** "le" writes 1 little-endian, as its format says; any other item writes 258 in the buffer's order (default). */
  private static final ByteSink.Encoder<String> MIXED = (item, buffer) -> {
    if (item.equals("le")) {
      buffer.order(ByteOrder.LITTLE_ENDIAN).putInt(1);
    } else {
      buffer.putInt(258);
    }
  };

  private static final byte[] BE_258 = {0, 0, 1, 2};

  @Test
  void orderSetForOneItem_doesNotChangeTheBytesOfTheNextItemOrOfLaterBatches() throws Exception {
    ByteArrayOutputStream alone = new ByteArrayOutputStream();
    try (ByteSink<String> sink = ByteSink.toStream(alone, MIXED).build()) {
      sink.write(RecordingBatch.of("be"));
    }
    assertThat(alone.toByteArray()).as("'be' written alone").containsExactly(BE_258);

    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (ByteSink<String> sink = ByteSink.toStream(out, MIXED).build()) {
      RecordingBatch<String, Long> first = RecordingBatch.of("le", "be");
      sink.write(first);
      RecordingBatch<String, Long> later = RecordingBatch.of("be");
      sink.write(later);
      assertThat(first.completed()).hasSize(2);
      assertThat(later.completed()).hasSize(1);
    }
    byte[] bytes = out.toByteArray();
    assertThat(bytes).hasSize(12);
    assertThat(java.util.Arrays.copyOfRange(bytes, 4, 8)).as("'be' after 'le' in the same batch")
        .containsExactly(BE_258);
    assertThat(java.util.Arrays.copyOfRange(bytes, 8, 12)).as("'be' in the next batch").containsExactly(BE_258);
  }
}
