package dev.ringbatch.sink;

import static java.util.Objects.requireNonNull;

import java.nio.BufferOverflowException;
import java.nio.ByteBuffer;
import org.jspecify.annotations.Nullable;

/**
 * Runs a {@link ByteSink.Encoder} on one item and checks what it did to the buffer, so that a careless encoder
 * fails its own item and never the batch or its neighbours' bytes. Called on the sink's (consumer) thread only.
 *
 * <p>The encoder is handed a view of the buffer that begins one byte before its record: the last byte of the
 * record before, or, for a buffer's first record, the {@link #GUARD} byte every buffer starts with. So it can
 * never reach a neighbour's bytes but that one, which holds a {@link #SENTINEL} while the encoder runs and is
 * put back after, whatever the encoder did. A {@code flip()} or {@code limit(int)} shows as a limit changed; a
 * {@code rewind()}, {@code clear()} or {@code position(int)} as a position before the record, or, if bytes were
 * put after it, as the sentinel overwritten (unless the first of them happens to equal it: that item's own
 * record is then what it wrote, less its first byte; its neighbours are intact either way).
 */
final class RecordEncoder<T> {
  static final int GUARD = 1;
  /** {@link #encode}: the record does not fit in the room left. */
  static final int NEEDS_ROOM = -1;
  /** {@link #encode}: the item fails with {@link #takeFailure()}. */
  static final int FAILED = -2;
  /** What the byte before a record holds while its encoder runs. */
  static final byte SENTINEL = (byte) 0xA5;

  private static final String ONLY_PUT = "; an encoder must only put bytes at and after the position it is given,"
      + " so the item was not written";

  private final ByteSink.Encoder<? super T> encoder;
  private final int maxRecordBytes;
  private @Nullable Throwable failure;

  RecordEncoder(ByteSink.Encoder<? super T> encoder, int maxRecordBytes) {
    this.encoder = encoder;
    this.maxRecordBytes = maxRecordBytes;
  }

  /** A heap buffer with room for {@code bytes} after the guard byte, positioned after it. */
  static ByteBuffer heap(int bytes) {
    return ByteBuffer.allocate(bytes + GUARD).position(GUARD);
  }

  /** A direct buffer with room for {@code bytes} after the guard byte, positioned after it. */
  static ByteBuffer direct(int bytes) {
    return ByteBuffer.allocateDirect(bytes + GUARD).position(GUARD);
  }

  /**
   * Encodes {@code item} at the buffer's position. Returns the record's length, with the buffer's position just
   * after it; or {@link #NEEDS_ROOM} or {@link #FAILED}, with the buffer's position and limit as they were.
   */
  int encode(T item, ByteBuffer buffer) {
    int start = buffer.position();
    int limit = buffer.limit();
    int before = start - GUARD;
    byte kept = buffer.get(before);
    buffer.put(before, SENTINEL);
    ByteBuffer view = buffer.slice(before, limit - before).position(GUARD); // no further back; big-endian
    Throwable thrown = null;
    try {
      encoder.encode(item, view);
    } catch (Throwable t) { // anything, errors and sneaky checked exceptions too, fails this item alone
      thrown = t;
    }
    boolean overwrote = buffer.get(before) != SENTINEL;
    buffer.put(before, kept); // the neighbour's last byte (or the guard) stays, whatever the encoder did
    boolean limitChanged = view.limit() != limit - before;
    int end = before + view.position();
    if (limitChanged || end < start || overwrote) {
      failure = new IllegalStateException(limitChanged
          ? "the encoder changed the buffer's limit, as flip() and limit(int) do" + ONLY_PUT
          : "the encoder moved the buffer's position back to before its record, as flip(), rewind(), clear() and"
              + " position(int) do" + ONLY_PUT, thrown);
      return reset(buffer, start, limit, FAILED);
    }
    if (thrown instanceof BufferOverflowException) {
      return reset(buffer, start, limit, NEEDS_ROOM);
    }
    if (thrown != null) {
      failure = thrown;
      return reset(buffer, start, limit, FAILED);
    }
    if (end - start > maxRecordBytes) {
      failure = new IllegalArgumentException(String.format(
          "record too large: the encoder wrote %s bytes, more than maxRecordBytes (%s)", end - start, maxRecordBytes));
      return reset(buffer, start, limit, FAILED);
    }
    buffer.position(end); // an order the encoder set stays in its view: the next item's starts big-endian
    return end - start;
  }

  /**
   * Encodes an item that did not fit in {@code tried} bytes into a heap buffer of its own, doubling it up to
   * {@code maxRecordBytes}. Returns that buffer ready to be written (from after the guard byte to the record's end),
   * or null if the item fails with {@link #takeFailure()}.
   */
  @Nullable ByteBuffer encodeAlone(T item, int tried) {
    int capacity = tried;
    while (capacity < maxRecordBytes) {
      capacity = (int) Math.min(maxRecordBytes, 2L * capacity);
      ByteBuffer own = heap(capacity);
      int length = encode(item, own);
      if (length >= 0) {
        return own.flip().position(GUARD);
      }
      if (length == FAILED) {
        return null;
      }
    }
    failure = new IllegalArgumentException(String.format(
        "record too large: the encoder overflowed a buffer of maxRecordBytes (%s) bytes", maxRecordBytes));
    return null;
  }

  /** The failure of the item {@link #encode} or {@link #encodeAlone} last failed; forgets it. */
  Throwable takeFailure() {
    Throwable taken = requireNonNull(failure, "failure");
    failure = null;
    return taken;
  }

  private static int reset(ByteBuffer buffer, int start, int limit, int result) {
    buffer.limit(limit).position(start);
    return result;
  }
}
