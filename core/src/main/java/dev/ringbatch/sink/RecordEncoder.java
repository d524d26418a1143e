package dev.ringbatch.sink;

import static java.util.Objects.requireNonNull;

import java.nio.BufferOverflowException;
import java.nio.ByteBuffer;
import org.jspecify.annotations.Nullable;

/**
 * Runs a {@link ByteSink.Encoder} on one item and checks what it did to the buffer, so that a careless encoder
 * fails its own item and never the batch or its neighbours' bytes. Called on the sink's (consumer) thread only.
 *
 * <p>Every buffer starts with a {@link #GUARD} byte holding {@link #SENTINEL}, and ends with a guard byte
 * beyond its limit; neither is ever written. An encoder is always handed a position of at least 1, so that
 * {@code flip()} or {@code rewind()} shows as a position moved back even for the first record of a buffer; its
 * {@code clear()} or {@code compact()} shows as a limit raised to the capacity; and an encoder that moved back to
 * 0 and then put bytes shows as a sentinel overwritten. The last two may have put bytes over the records before
 * its own, so they return {@link #OVERWROTE}: the caller must not write those records.
 */
final class RecordEncoder<T> {
  static final int GUARD = 1;
  /** {@link #encode}: the record does not fit in the room left. */
  static final int NEEDS_ROOM = -1;
  /** {@link #encode}: the item fails with {@link #takeFailure()}. */
  static final int FAILED = -2;
  /**
   * {@link #encode}: the item fails with {@link #takeFailure()}, and the encoder may have put bytes over the
   * records before its own in the buffer, which is now empty ({@link #ready}).
   */
  static final int OVERWROTE = -3;
  /** The leading guard byte's value. */
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

  /** A heap buffer with room for {@code bytes} between its guard bytes, {@link #ready}. */
  static ByteBuffer heap(int bytes) {
    return ready(ByteBuffer.allocate(bytes + 2 * GUARD));
  }

  /** A direct buffer with room for {@code bytes} between its guard bytes, {@link #ready}. */
  static ByteBuffer direct(int bytes) {
    return ready(ByteBuffer.allocateDirect(bytes + 2 * GUARD));
  }

  /** Empties a buffer made here: positioned after the leading guard, its limit before the trailing one. */
  static ByteBuffer ready(ByteBuffer buffer) {
    buffer.clear().put(0, SENTINEL);
    return buffer.limit(buffer.capacity() - GUARD).position(GUARD);
  }

  /** The bytes a buffer made here holds for records. */
  static int room(ByteBuffer buffer) {
    return buffer.capacity() - 2 * GUARD;
  }

  /**
   * Encodes {@code item} at the buffer's position. Returns the record's length, with the buffer's position just
   * after it; or {@link #NEEDS_ROOM} or {@link #FAILED}, with the buffer's position and limit as they were.
   */
  int encode(T item, ByteBuffer buffer) {
    int start = buffer.position();
    int limit = buffer.limit();
    Throwable thrown = null;
    try {
      encoder.encode(item, buffer);
    } catch (Throwable t) { // anything, errors and sneaky checked exceptions too, fails this item alone
      thrown = t;
    }
    int end = buffer.position();
    if (buffer.limit() > limit || buffer.get(0) != SENTINEL) {
      failure = new IllegalStateException("the encoder moved the buffer's position back to its start, as clear(),"
          + " compact() and rewind() do, and may have put bytes over the records before its own" + ONLY_PUT, thrown);
      ready(buffer);
      return OVERWROTE;
    }
    if (buffer.limit() != limit || end < start) {
      failure = new IllegalStateException(buffer.limit() != limit
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
      if (length != NEEDS_ROOM) {
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
