package dev.ringbatch.sink;

import static java.util.Objects.requireNonNull;

import dev.ringbatch.Batch;
import dev.ringbatch.BatchSink;
import dev.ringbatch.internal.Checks;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.BufferOverflowException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.jspecify.annotations.Nullable;

/**
 * Writes each batch as bytes: items are encoded one after the other into one reusable buffer, and the
 * buffer goes out in a single write call whenever it fills and once at the end of the batch. With
 * {@link Builder#fsync(boolean) fsync}, a file is forced to disk once per batch (group commit), so that
 * every item's future completes only after its bytes are durable, at the price of one {@code fsync} for
 * the whole batch instead of one per item.
 *
 * <p>Each item's result is the offset of its first byte in the file (or, for a stream or channel, in
 * everything this sink has written).
 *
 * <h2>Failures</h2>
 * An encoder that throws fails its item alone; the bytes it had written are discarded. An item too large
 * for the buffer is encoded into a larger buffer of its own and written alone, never stuck. An
 * {@link IOException} while writing or forcing fails the whole batch; part of the batch may be in the file.
 *
 * <p>Not thread-safe: the sink of one batcher, called on its consumer thread. {@link #close()} it after the
 * batcher is closed.
 *
 * @param <T> the item type
 */
public final class ByteSink<T> implements BatchSink<T, Long>, AutoCloseable {

  /** The default buffer size: 128 KiB, one underlying write per 128 KiB of items. */
  public static final int DEFAULT_BUFFER_SIZE = 128 * 1024;

  private static final int MAX_ITEM_BYTES = 1 << 30;

  /**
   * Encodes one item into the buffer at its position. If the item does not fit in the remaining space, the
   * encoder lets {@link BufferOverflowException} escape (as the {@code put} methods of {@link ByteBuffer}
   * do) and is called again with more room.
   *
   * @param <T> the item type
   */
  @FunctionalInterface
  public interface Encoder<T> {
    /** Puts the bytes of {@code item} into {@code buffer}. */
    void encode(T item, ByteBuffer buffer);
  }

  private final @Nullable WritableByteChannel channel;
  private final @Nullable FileChannel file;
  private final @Nullable OutputStream stream;
  private final Encoder<? super T> encoder;
  private final boolean fsync;
  private final ByteBuffer buffer;
  private long position;
  private long writeCalls;
  private long forces;

  private ByteSink(Builder<T> builder) throws IOException {
    this.encoder = builder.encoder;
    this.fsync = builder.fsync;
    // A stream is written from the heap array in one call per buffer; a channel from a direct buffer.
    this.buffer = builder.stream != null
        ? ByteBuffer.allocate(builder.bufferSize) : ByteBuffer.allocateDirect(builder.bufferSize);
    if (builder.path != null) {
      FileChannel opened = FileChannel.open(builder.path,
          StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.APPEND);
      this.file = opened;
      this.channel = opened;
      this.stream = null;
      this.position = opened.size();
    } else if (builder.stream != null) {
      this.stream = builder.stream;
      this.channel = null; // not Channels.newChannel: it would split each buffer into 8 KiB writes
      this.file = null;
    } else {
      this.channel = requireNonNull(builder.channel, "channel");
      this.file = channel instanceof FileChannel fc ? fc : null;
      this.stream = null;
    }
  }

  /** Starts a sink that appends to {@code path}, creating the file if needed. */
  public static <T> Builder<T> toFile(Path path, Encoder<? super T> encoder) {
    return new Builder<T>(encoder).path(requireNonNull(path, "path"));
  }

  /** Starts a sink that writes to {@code stream} and flushes it once per batch. */
  public static <T> Builder<T> toStream(OutputStream stream, Encoder<? super T> encoder) {
    return new Builder<T>(encoder).stream(requireNonNull(stream, "stream"));
  }

  /** Starts a sink that writes to {@code channel}. */
  public static <T> Builder<T> toChannel(WritableByteChannel channel, Encoder<? super T> encoder) {
    return new Builder<T>(encoder).channel(requireNonNull(channel, "channel"));
  }

  /** Builds a {@link ByteSink}. */
  public static final class Builder<T> {
    private final Encoder<? super T> encoder;
    private @Nullable Path path;
    private @Nullable OutputStream stream;
    private @Nullable WritableByteChannel channel;
    private int bufferSize = DEFAULT_BUFFER_SIZE;
    private boolean fsync;

    private Builder(Encoder<? super T> encoder) {
      this.encoder = requireNonNull(encoder, "encoder");
    }

    private Builder<T> path(Path path) {
      this.path = path;
      return this;
    }

    private Builder<T> stream(OutputStream stream) {
      this.stream = stream;
      return this;
    }

    private Builder<T> channel(WritableByteChannel channel) {
      this.channel = channel;
      return this;
    }

    /**
     * Sets the size of the coalescing buffer: the sink writes at most this many bytes per call.
     *
     * @throws IllegalArgumentException if {@code bufferSize} is not positive
     */
    public Builder<T> bufferSize(int bufferSize) {
      this.bufferSize = Checks.requirePositive("bufferSize", bufferSize);
      return this;
    }

    /** Forces the file to disk once per batch, before the batch's futures complete. Default off. */
    public Builder<T> fsync(boolean fsync) {
      this.fsync = fsync;
      return this;
    }

    /**
     * Opens the file (if any) and returns the sink.
     *
     * @throws IllegalStateException if {@code fsync} is set but the target is not a file
     * @throws IOException if the file cannot be opened
     */
    public ByteSink<T> build() throws IOException {
      Checks.requireState(!fsync || path != null || channel instanceof FileChannel,
          "fsync needs a file or a FileChannel, but the target is %s",
          stream != null ? "an OutputStream" : "a " + (channel == null ? "channel" : channel.getClass().getSimpleName()));
      return new ByteSink<>(this);
    }
  }

  @Override
  public void write(Batch<T, Long> batch) throws IOException {
    for (int i = 0; i < batch.size(); i++) {
      T item = batch.item(i);
      int mark = buffer.position();
      try {
        encoder.encode(item, buffer);
        batch.complete(i, position + mark);
      } catch (BufferOverflowException full) {
        buffer.position(mark);
        drain();
        writeAlone(batch, i, item);
      } catch (RuntimeException e) {
        buffer.position(mark);
        batch.fail(i, e);
      }
    }
    drain();
    if (stream != null) {
      stream.flush();
    }
    if (fsync) {
      requireNonNull(file, "file").force(false);
      forces++;
    }
  }

  /** The buffer was drained: encode into it again, or into a larger buffer of its own if it does not fit. */
  private void writeAlone(Batch<T, Long> batch, int index, T item) throws IOException {
    ByteBuffer target = buffer;
    while (true) {
      try {
        encoder.encode(item, target);
        break;
      } catch (BufferOverflowException full) {
        if (target.capacity() >= MAX_ITEM_BYTES) {
          batch.fail(index, new IllegalArgumentException("item does not fit in " + MAX_ITEM_BYTES + " bytes"));
          return;
        }
        target = ByteBuffer.allocate(Math.min(MAX_ITEM_BYTES, target.capacity() * 2));
      } catch (RuntimeException e) {
        target.clear();
        batch.fail(index, e);
        return;
      }
    }
    batch.complete(index, position);
    if (target != buffer) {
      target.flip();
      writeFully(target);
    }
  }

  private void drain() throws IOException {
    if (buffer.position() > 0) {
      buffer.flip();
      try {
        writeFully(buffer);
      } finally {
        buffer.clear();
      }
    }
  }

  private void writeFully(ByteBuffer source) throws IOException {
    if (stream != null) {
      int length = source.remaining();
      if (source.hasArray()) {
        stream.write(source.array(), source.arrayOffset() + source.position(), length);
      } else {
        byte[] copy = new byte[length];
        source.get(copy);
        stream.write(copy);
      }
      source.position(source.limit());
      position += length;
      writeCalls++;
      return;
    }
    WritableByteChannel target = requireNonNull(channel, "channel");
    while (source.hasRemaining()) {
      position += target.write(source);
      writeCalls++;
    }
  }

  /** Write calls made so far; with a 128 KiB buffer, about one per 128 KiB of items. */
  public long writeCalls() {
    return writeCalls;
  }

  /** {@code fsync}s made so far: one per batch when enabled. */
  public long forces() {
    return forces;
  }

  /** Closes the file, stream or channel. Call it after the batcher that uses this sink is closed. */
  @Override
  public void close() throws IOException {
    if (stream != null) {
      stream.close();
    } else {
      requireNonNull(channel, "channel").close();
    }
  }
}
