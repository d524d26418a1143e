package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.BufferOverflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** What {@link ByteSink} does with careless encoders: each fails its own item and leaves no bytes behind. */
@Timeout(60)
class ByteSinkEncoderTest {
  private static final String MISUSED_LIMIT = "the encoder changed the buffer's limit, as flip() and limit(int)"
      + " do; an encoder must only put bytes at and after the position it is given, so the item was not written";
  private static final String MISUSED_POSITION = "the encoder moved the buffer's position back to before its"
      + " record, as flip(), rewind(), clear() and position(int) do; an encoder must only put bytes at and after"
      + " the position it is given, so the item was not written";

  /** A 4-byte length, then the text: the prefix goes in before the text may overflow. */
  private static final ByteSink.Encoder<String> PREFIXED = (text, buffer) -> {
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    buffer.putInt(bytes.length);
    buffer.put(bytes);
  };

  private static final ByteSink.Encoder<String> LINES =
      (line, buffer) -> buffer.put((line + "\n").getBytes(StandardCharsets.UTF_8));

  /** Where each test's stream sink writes. */
  private final ByteArrayOutputStream out = new ByteArrayOutputStream();

  /** {@link #LINES}, then {@code misuse} of the buffer for the line {@code culprit}. */
  private static ByteSink.Encoder<String> linesThen(String culprit, Consumer<ByteBuffer> misuse) {
    return (line, buffer) -> {
      LINES.encode(line, buffer);
      if (line.equals(culprit)) {
        misuse.accept(buffer);
      }
    };
  }

  /** Writes {@code items} as one batch through the sink {@code builder} makes, then closes it. */
  private static RecordingBatch<String, Long> write(ByteSink.Builder<String> builder, String... items)
      throws IOException {
    try (ByteSink<String> sink = builder.build()) {
      RecordingBatch<String, Long> batch = RecordingBatch.of(items);
      sink.write(batch);
      return batch;
    }
  }

  private static void assertOnlyFailure(RecordingBatch<String, Long> batch, int index,
      Class<? extends Throwable> type, String message) {
    assertThat(batch.failed()).containsOnlyKeys(index);
    assertThat(batch.failed().get(index)).isExactlyInstanceOf(type).hasMessage(message);
  }

  private static byte[] prefixed(String... texts) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (String text : texts) {
      byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
      out.writeBytes(ByteBuffer.allocate(4).putInt(bytes.length).array());
      out.writeBytes(bytes);
    }
    return out.toByteArray();
  }

  @Test
  void itemLargerThanBuffer_prefixWrittenBeforeOverflow_noStrayBytes() throws Exception {
    String big = "x".repeat(39);

    RecordingBatch<String, Long> batch = write(ByteSink.toStream(out, PREFIXED).bufferSize(16), "a", big, "b");

    assertThat(batch.completed()).containsExactly(Map.entry(0, 0L), Map.entry(1, 5L), Map.entry(2, 48L));
    assertThat(out.toByteArray()).isEqualTo(prefixed("a", big, "b")); // 53 bytes, no stray length prefix
  }

  @Test
  void itemLargerThanBuffer_encoderThenThrows_itsPrefixIsDropped() throws Exception {
    ByteSink.Encoder<String> failsWhenLarge = (text, buffer) -> {
      PREFIXED.encode(text, buffer);
      if (text.length() > 20) {
        throw new IllegalArgumentException("too long: " + text.length());
      }
    };

    RecordingBatch<String, Long> batch =
        write(ByteSink.toStream(out, failsWhenLarge).bufferSize(16), "a", "y".repeat(30), "b");

    assertOnlyFailure(batch, 1, IllegalArgumentException.class, "too long: 30");
    assertThat(batch.completed()).containsExactly(Map.entry(0, 0L), Map.entry(2, 5L));
    assertThat(out.toByteArray()).isEqualTo(prefixed("a", "b"));
  }

  @Test
  void encoderFlipsAfterPut_itemFailsSayingSo_othersWritten() throws Exception {
    RecordingBatch<String, Long> batch =
        write(ByteSink.toStream(out, linesThen("flip", ByteBuffer::flip)), "a", "flip", "b");

    assertOnlyFailure(batch, 1, IllegalStateException.class, MISUSED_LIMIT);
    assertThat(batch.completed()).containsExactly(Map.entry(0, 0L), Map.entry(2, 2L));
    assertThat(out.toString(StandardCharsets.UTF_8)).isEqualTo("a\nb\n");
  }

  @Test
  void encoderFlipsEveryItem_everyItemFails_nothingClaimedWritten() throws Exception {
    ByteSink.Encoder<String> flips = (line, buffer) -> {
      LINES.encode(line, buffer);
      buffer.flip();
    };

    RecordingBatch<String, Long> batch = write(ByteSink.toStream(out, flips), "a", "b", "c");

    assertThat(batch.completed()).isEmpty();
    assertThat(batch.failed()).containsOnlyKeys(0, 1, 2);
    assertThat(out.size()).isZero();
  }

  /**
   * Review finding: clear() then put. The limit did not change (it was the capacity) and the position ended
   * after the record's start, so the item was told written while its bytes had overwritten "good"'s.
   */
  @Test
  void encoderClearsThenPuts_itemFailsAlone_neighboursWrittenIntact() throws Exception {
    ByteSink.Encoder<String> clearsOnBad = (line, buffer) -> {
      if (line.equals("bad")) {
        buffer.clear();
        buffer.put("BADBADBAD\n".getBytes(StandardCharsets.US_ASCII));
      } else {
        LINES.encode(line, buffer);
      }
    };

    RecordingBatch<String, Long> batch = write(ByteSink.toStream(out, clearsOnBad), "good", "bad", "next");

    assertOnlyFailure(batch, 1, IllegalStateException.class, MISUSED_POSITION);
    assertThat(batch.completed()).containsExactly(Map.entry(0, 0L), Map.entry(2, 5L));
    assertThat(out.toString(StandardCharsets.US_ASCII)).isEqualTo("good\nnext\n");
  }

  /**
   * Review finding: rewind() then put bytes whose first equals the sentinel byte, which a check of that byte
   * alone cannot see. The neighbours must still be written intact, at the offsets they are told.
   */
  @Test
  void encoderRewindsThenPutsTheSentinelFirst_neighboursWrittenIntact() throws Exception {
    ByteSink.Encoder<String> rewindsOnBad = (line, buffer) -> {
      LINES.encode(line, buffer);
      if (line.equals("bad")) {
        buffer.rewind();
        buffer.put(RecordEncoder.SENTINEL).put("XXXXXXXXXXXX\n".getBytes(StandardCharsets.US_ASCII));
      }
    };

    RecordingBatch<String, Long> batch = write(ByteSink.toStream(out, rewindsOnBad), "good", "bad", "next");

    byte[] written = out.toByteArray();
    assertThat(new String(written, 0, 5, StandardCharsets.US_ASCII)).isEqualTo("good\n");
    assertThat(batch.completed()).containsEntry(0, 0L);
    long next = batch.completed().get(2);
    assertThat(new String(written, (int) next, 5, StandardCharsets.US_ASCII)).isEqualTo("next\n");
  }

  @Test
  void encoderRewindsFirstItemOfBuffer_itemFailsSayingSo() throws Exception {
    RecordingBatch<String, Long> batch =
        write(ByteSink.toStream(out, linesThen("rewind", ByteBuffer::rewind)), "rewind", "b");

    assertOnlyFailure(batch, 0, IllegalStateException.class, MISUSED_POSITION);
    assertThat(batch.completed()).containsExactly(Map.entry(1, 0L));
    assertThat(out.toString(StandardCharsets.UTF_8)).isEqualTo("b\n");
  }

  @Test
  void encoderAlwaysOverflows_defaultCap_failsOnlyThatItemWithoutGrowingPastIt() throws Exception {
    AtomicInteger largestBuffer = new AtomicInteger();
    ByteSink.Encoder<String> endless = (line, buffer) -> {
      largestBuffer.accumulateAndGet(buffer.capacity(), Math::max);
      if (line.equals("endless")) {
        throw new BufferOverflowException();
      }
      LINES.encode(line, buffer);
    };

    RecordingBatch<String, Long> batch = write(ByteSink.toStream(out, endless), "a", "endless", "b");

    assertOnlyFailure(batch, 1, IllegalArgumentException.class,
        "record too large: the encoder overflowed a buffer of maxRecordBytes (16777216) bytes");
    assertThat(batch.completed()).containsExactly(Map.entry(0, 0L), Map.entry(2, 2L));
    assertThat(largestBuffer.get()).isLessThanOrEqualTo(16 * 1024 * 1024 + 1);
    assertThat(out.toString(StandardCharsets.UTF_8)).isEqualTo("a\nb\n");
  }

  @Test
  void maxRecordBytes_recordLargerThanCapInBuffer_failsOnlyThatItem() throws Exception {
    RecordingBatch<String, Long> batch =
        write(ByteSink.toStream(out, LINES).maxRecordBytes(10), "a", "0123456789", "b");

    assertOnlyFailure(batch, 1, IllegalArgumentException.class,
        "record too large: the encoder wrote 11 bytes, more than maxRecordBytes (10)");
    assertThat(batch.completed()).containsExactly(Map.entry(0, 0L), Map.entry(2, 2L));
    assertThat(out.toString(StandardCharsets.UTF_8)).isEqualTo("a\nb\n");
  }

  @Test
  void maxRecordBytes_encoderAlwaysOverflows_bufferGrowsUpToTheCapOnly() throws Exception {
    List<Integer> capacities = new ArrayList<>();
    ByteSink.Encoder<String> endless = (line, buffer) -> {
      capacities.add(buffer.capacity());
      throw new BufferOverflowException();
    };

    RecordingBatch<String, Long> batch =
        write(ByteSink.toStream(out, endless).bufferSize(100).maxRecordBytes(1000), "endless");

    assertOnlyFailure(batch, 0, IllegalArgumentException.class,
        "record too large: the encoder overflowed a buffer of maxRecordBytes (1000) bytes");
    assertThat(capacities).containsExactly(101, 201, 401, 801, 1001); // each with the sink's one guard byte
  }

  @Test
  void encoderThrowsError_onlyThatItemFails() throws Exception {
    ByteSink.Encoder<String> asserting = (line, buffer) -> {
      buffer.put((byte) '!');
      if (line.equals("bad")) {
        throw new AssertionError("encoder bug");
      }
      LINES.encode(line, buffer);
    };

    RecordingBatch<String, Long> batch = write(ByteSink.toStream(out, asserting), "a", "bad", "b");

    assertOnlyFailure(batch, 1, AssertionError.class, "encoder bug");
    assertThat(batch.completed()).containsExactly(Map.entry(0, 0L), Map.entry(2, 3L));
    assertThat(out.toString(StandardCharsets.UTF_8)).isEqualTo("!a\n!b\n");
  }

  @Test
  void encoderThrowsSneakyCheckedException_onlyThatItemFails() throws Exception {
    ByteSink.Encoder<String> sneaky = (line, buffer) -> {
      if (line.equals("bad")) {
        ByteSinkEncoderTest.<RuntimeException>sneakyThrow(new IOException("lombok says no"));
      }
      LINES.encode(line, buffer);
    };

    RecordingBatch<String, Long> batch = write(ByteSink.toStream(out, sneaky).bufferSize(4), "a", "bad", "b");

    assertOnlyFailure(batch, 1, IOException.class, "lombok says no");
    assertThat(batch.completed()).containsExactly(Map.entry(0, 0L), Map.entry(2, 2L));
    assertThat(out.toString(StandardCharsets.UTF_8)).isEqualTo("a\nb\n");
  }

  @SuppressWarnings("unchecked")
  private static <E extends Throwable> void sneakyThrow(Throwable t) throws E {
    throw (E) t;
  }
}
