package dev.ringbatch.sink;

import static dev.ringbatch.sink.RecordEncoder.FAILED;
import static dev.ringbatch.sink.RecordEncoder.GUARD;
import static dev.ringbatch.sink.RecordEncoder.NEEDS_ROOM;
import static java.util.Objects.requireNonNull;

import dev.ringbatch.Batch;
import dev.ringbatch.BatchSink;
import dev.ringbatch.OutcomeUnknownException;
import dev.ringbatch.internal.shared.Checks;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.BufferOverflowException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SelectableChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.jspecify.annotations.Nullable;

/**
 * Writes each batch as bytes: items are encoded one after the other into one reusable buffer, and the
 * buffer goes out in a single write call whenever it fills and once at the end of the batch. With
 * {@link Builder#fsync(boolean) fsync}, a file is forced to disk once per batch (group commit), so that
 * every item's future completes only after its bytes are durable, at the price of one {@code fsync} for
 * the whole batch instead of one per item. A file's {@code fsync} does not make the name of a new file durable:
 * when {@code toFile} creates the file (or creates it again, reopening it after an interrupt), the sink also
 * forces its parent directory, once, before any item is told written; not on Windows, which cannot open a
 * directory to force it ({@link #directoryForces()}).
 *
 * <p>Each item's result is the offset of its first byte: in the file for {@link #toFile toFile} and for a
 * {@link FileChannel} given to {@link #toChannel toChannel}; for a stream or another channel, in everything
 * this sink has written.
 *
 * <h2>Encoders</h2>
 * An encoder that throws (anything: errors and sneaky checked exceptions too) fails its item alone, and the
 * bytes it had put are discarded. So does an encoder that moves the buffer's position back or changes its
 * limit ({@code flip()}, {@code rewind()}, {@code clear()}), whether or not it puts bytes after: it is handed
 * a view of the buffer that cannot reach the records before its own. A record larger than the buffer is encoded into a
 * buffer of its own, doubled up to {@link Builder#maxRecordBytes maxRecordBytes}, and written alone; a record
 * that needs more fails its item with {@link IllegalArgumentException}.
 *
 * <h2>Write failures</h2>
 * An item told written is at its offset; an item told failed is not in the target; where the sink cannot
 * know, the item fails with {@link OutcomeUnknownException}, which no {@link dev.ringbatch.RetryPolicy} retries.
 * <ul>
 *   <li><b>Files</b> ({@code toFile}, or a {@code FileChannel}): a batch is all or nothing. If a write or the
 *       {@code fsync} fails, the sink truncates the file back to where the batch began (and forces that, with
 *       fsync) and throws the exception: every item fails with it, nothing of the batch is in the file, and a
 *       {@code RetryPolicy} may write the batch again without duplicating a record. If that rollback fails
 *       too, the items whose bytes were handed to the file fail with {@code OutcomeUnknownException} and the
 *       rest with the exception; the sink then truncates the file back before it writes anything else (while
 *       that fails, each batch fails with it, unwritten, and {@link #close()} tries once more).
 *   <li><b>Streams and other channels</b> cannot be rolled back, and a failed write does not say how much of
 *       it went out. Items whose bytes all went out in write calls that returned succeed (channels only: a
 *       stream holds nothing for sure until its {@code flush()} returns); items with bytes in the failed call,
 *       or whose stream was not flushed, fail with {@code OutcomeUnknownException}; items not yet handed over
 *       fail with the exception. The sink no longer knows its position, so it is <em>broken</em>: every item of
 *       every later batch fails (without retry) with an {@link IllegalStateException} saying why. Close it and
 *       build a new one.
 *   <li>A failure before any byte of the batch was handed over is thrown, and the sink carries on.
 * </ul>
 * A channel write that accepts no bytes counts as a failed write: the sink needs blocking channels.
 *
 * <h2>Threads and closing</h2>
 * The sink must be the only writer of its file, stream or channel. A file truncated under it (as {@code logrotate}'s
 * {@code copytruncate} does) takes the next batch at its new end, at true offsets: the sink reads a file's position
 * at each batch, and checks it before each write call and the force. A file that changed during a batch's writes
 * tells the items of that batch whose bytes went out {@link OutcomeUnknownException} (their bytes are in it, at
 * offsets the sink cannot tell), and is not cut; so is a file reopened after an interrupt that is another file at the path.
 * A path that is not a regular file (a named pipe, a device such as {@code /dev/stdout}), or a {@code FileChannel}
 * that cannot seek (a pipe), is written as another channel is: nothing to position or roll back, no fsync (refused),
 * and a failed write (an interrupt's too) breaks the sink. Give a device by its path: a {@code FileChannel} on one
 * is taken for a regular file.
 * The sink of one batcher, called on its consumer thread; one sink given to several (the shards of a sharded
 * batcher) writes one batch at a time. Close it after the batcher. A batcher's close that times out
 * abandons the batch in the sink but cannot stop its consumer, which goes on once the encoder (or a blocked write)
 * returns, so {@code close()} may run in the middle of a batch: it waits for a file write or {@code fsync} in
 * progress (a stream or other channel is closed at once), truncates a file back to where that batch began, and
 * closes. From then on the sink never writes to, truncates or reopens its file, where a new sink may be writing: the
 * rest of that batch, and any later one, fails unwritten with an {@link IllegalStateException} saying it is closed.
 *
 * @param <T> the item type
 */
public final class ByteSink<T> implements BatchSink<T, Long>, AutoCloseable {

  /** The default buffer size: 128 KiB, one underlying write per 128 KiB of items. */
  public static final int DEFAULT_BUFFER_SIZE = 128 * 1024;

  /** The default {@link Builder#maxRecordBytes maxRecordBytes}: 16 MiB. */
  public static final int DEFAULT_MAX_RECORD_BYTES = 16 * 1024 * 1024;

  /** The largest {@code bufferSize} and {@code maxRecordBytes}: 1 GiB. */
  public static final int MAX_BYTES = 1 << 30;

  private static final long ENCODE_FAILED = -1;

  /**
   * Encodes one item into the buffer at its position, with relative {@code put}s (or absolute ones at or after
   * the position it was given, as for a length prefix written last). The position is not necessarily 0, and the
   * encoder must not move it back or change the limit: no {@code flip()}, {@code rewind()} or {@code clear()}.
   * If the item does not fit in the remaining space, the encoder lets {@link BufferOverflowException} escape (as
   * the {@code put} methods of {@link ByteBuffer} do) and is called again with more room. The buffer, big-endian
   * for each item, is the encoder's during the call only: it must not keep it.
   *
   * @param <T> the item type
   */
  @FunctionalInterface
  public interface Encoder<T> {
    /** Puts the bytes of {@code item} into {@code buffer}. */
    void encode(T item, ByteBuffer buffer);
  }

  private final ByteTarget target;
  private final RecordEncoder<T> records;
  private final ByteBuffer buffer;
  /** Per item of the batch: its record's offset (or ENCODE_FAILED) and end; set for items below placed. */
  private long[] starts = new long[16];
  private long[] ends = new long[16];
  private int placed;

  private ByteSink(Builder<T> builder) throws IOException {
    this.records = new RecordEncoder<>(builder.encoder, builder.maxRecordBytes);
    // Direct for every target: a heap buffer's array() would hand an encoder the records before its own
    this.buffer = RecordEncoder.direct(builder.bufferSize);
    if (builder.path != null) {
      this.target = ByteTarget.appendTo(builder.path, builder.fsync, builder.directories);
    } else if (builder.stream != null) {
      this.target = ByteTarget.of(builder.stream);
    } else {
      this.target = ByteTarget.of(requireNonNull(builder.channel, "channel"), builder.fsync);
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

  /**
   * Starts a sink that writes to {@code channel}, which must be blocking. A {@link FileChannel} must be
   * positioned at the end of its file (opened with {@link StandardOpenOption#APPEND}, say): {@link Builder#build()}
   * checks it, since a failed batch is rolled back by truncating the file.
   *
   * @throws IllegalArgumentException if {@code channel} is a {@link SelectableChannel} in non-blocking mode
   */
  public static <T> Builder<T> toChannel(WritableByteChannel channel, Encoder<? super T> encoder) {
    requireNonNull(channel, "channel");
    Checks.requireArgument(!(channel instanceof SelectableChannel selectable) || selectable.isBlocking(),
        "channel must be in blocking mode but was a non-blocking %s: ByteSink writes on the consumer thread and"
            + " cannot wait for it; call configureBlocking(true) first", channel.getClass().getName());
    return new Builder<T>(encoder).channel(channel);
  }

  /** Builds a {@link ByteSink}. */
  public static final class Builder<T> {
    private final Encoder<? super T> encoder;
    private @Nullable Path path;
    private @Nullable OutputStream stream;
    private @Nullable WritableByteChannel channel;
    private int bufferSize = DEFAULT_BUFFER_SIZE;
    private int maxRecordBytes = DEFAULT_MAX_RECORD_BYTES;
    private boolean fsync;
    private OwnedFile.DirectoryOpener directories = OwnedFile.READ_DIRECTORY;

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
     * Sets the size of the coalescing buffer: the sink writes at most this many bytes per call. Default
     * {@link ByteSink#DEFAULT_BUFFER_SIZE}.
     *
     * @throws IllegalArgumentException if {@code bufferSize} is not from 1 to {@link ByteSink#MAX_BYTES}
     */
    public Builder<T> bufferSize(int bufferSize) {
      Checks.requirePositive("bufferSize", bufferSize);
      Checks.requireArgument(bufferSize <= MAX_BYTES, "bufferSize must be at most %s but was %s", MAX_BYTES,
          bufferSize);
      this.bufferSize = bufferSize;
      return this;
    }

    /**
     * Sets the largest record, in bytes, that the encoder may write for one item; default
     * {@link ByteSink#DEFAULT_MAX_RECORD_BYTES}. A larger record fails its item (and only it) with an
     * {@link IllegalArgumentException}. It also bounds the heap an item may take: a record that overflows the
     * buffer is encoded again into heap buffers of its own, doubled until it fits or reaches this size, so an
     * encoder that always overflows costs at most about twice this much before its item fails.
     *
     * @throws IllegalArgumentException if {@code maxRecordBytes} is not from 1 to {@link ByteSink#MAX_BYTES}
     */
    public Builder<T> maxRecordBytes(int maxRecordBytes) {
      Checks.requireArgument(maxRecordBytes > 0 && maxRecordBytes <= MAX_BYTES,
          "maxRecordBytes must be from 1 to %s but was %s", MAX_BYTES, maxRecordBytes);
      this.maxRecordBytes = maxRecordBytes;
      return this;
    }

    /** Forces the file once per batch (a new file's directory once) before its futures complete. Default off. */
    public Builder<T> fsync(boolean fsync) {
      this.fsync = fsync;
      return this;
    }

    /** Test seam: how the directory of a file the sink created is opened, to be forced. */
    Builder<T> directoryOpener(OwnedFile.DirectoryOpener directories) {
      this.directories = requireNonNull(directories, "directories");
      return this;
    }

    /**
     * Opens the file (if any) and returns the sink.
     *
     * @throws IllegalStateException if {@code fsync} is set but the target is not a file
     * @throws IllegalArgumentException if the target is a {@link FileChannel} not positioned at its end
     * @throws IOException if the file cannot be opened, or the channel's position read
     */
    public ByteSink<T> build() throws IOException {
      Checks.requireState(!fsync || path != null || channel instanceof FileChannel,
          "fsync needs a file or a FileChannel, but the target is %s",
          stream != null ? "an OutputStream"
              : "a " + (channel == null ? "channel" : channel.getClass().getSimpleName()));
      return new ByteSink<>(this);
    }
  }

  /**
   * Writes the batch: see the class comment for what each item is told when the target fails.
   *
   * @throws IOException (or the unchecked exception the target threw) only when nothing of the batch is in the
   *     target: nothing was handed over yet, or the file was rolled back
   */
  @Override
  public synchronized void write(Batch<T, Long> batch) throws IOException {
    int size = batch.size();
    IllegalStateException refused = target.refusal();
    if (refused != null) {
      for (int i = 0; i < size; i++) {
        batch.fail(i, refused);
      }
      return;
    }
    target.beginBatch();
    if (starts.length < size) {
      starts = new long[Math.max(size, 2 * starts.length)];
      ends = new long[starts.length];
    }
    long batchStart = target.position();
    placed = 0;
    buffer.clear().position(GUARD);
    try {
      for (int i = 0; i < size; i++) {
        place(batch, i);
      }
      drain();
      target.endBatch();
    } catch (Throwable failure) { // a write, flush or force failed: encoders' throwables fail their items alone
      failed(batch, batchStart, failure);
      return;
    }
    for (int i = 0; i < size; i++) {
      if (starts[i] != ENCODE_FAILED) {
        batch.complete(i, starts[i]);
      }
    }
  }

  /** Encodes item {@code index} into the buffer (draining it first if full), or alone; or fails it. */
  private void place(Batch<T, Long> batch, int index) throws IOException {
    T item = batch.item(index);
    long offset = target.position() + buffer.position() - GUARD;
    int length = records.encode(item, buffer);
    if (length == NEEDS_ROOM && buffer.position() > GUARD) {
      drain();
      offset = target.position();
      length = records.encode(item, buffer);
    }
    if (length == NEEDS_ROOM) { // the buffer is empty and still too small
      ByteBuffer own = records.encodeAlone(item, buffer.capacity() - GUARD);
      if (own != null) {
        starts[index] = target.position();
        ends[index] = starts[index] + own.remaining();
        placed = index + 1;
        target.write(own);
        return;
      }
      length = FAILED;
    }
    placed = index + 1;
    if (length == FAILED) {
      starts[index] = ENCODE_FAILED;
      batch.fail(index, records.takeFailure());
    } else {
      starts[index] = offset;
      ends[index] = offset + length;
    }
  }

  private void drain() throws IOException {
    if (buffer.position() > GUARD) {
      buffer.flip().position(GUARD);
      try {
        target.write(buffer);
      } finally {
        buffer.clear().position(GUARD);
      }
    }
  }

  /**
   * Tells each item what became of it after {@code failure}, or throws {@code failure} when nothing of the batch
   * is in the target.
   */
  private void failed(Batch<T, Long> batch, long batchStart, Throwable failure) throws IOException {
    long handedEnd = target.handedEnd();
    if (handedEnd == batchStart) {
      throw rethrow(failure); // nothing handed over: the position is known, and the batch may be retried
    }
    OutcomeUnknownException unknown = target.afterFailure(batchStart, failure);
    if (unknown == null) {
      throw rethrow(failure); // rolled back: nothing of the batch is in the file, and it may be retried
    }
    // a file not rolled back is truncated before the next write; a stream holds nothing for sure unflushed
    long certainEnd = target.isFile() || target.isStream() ? batchStart : target.position();
    for (int i = 0; i < batch.size(); i++) {
      if (i >= placed) {
        batch.fail(i, failure); // never handed over
      } else if (starts[i] != ENCODE_FAILED) {
        if (ends[i] <= certainEnd) {
          batch.complete(i, starts[i]);
        } else {
          batch.fail(i, starts[i] < handedEnd ? unknown : failure);
        }
      }
    }
  }

  /** Returns {@code failure} to throw if it is an IOException; throws it if unchecked; else wraps it. */
  private static IOException rethrow(Throwable failure) {
    if (failure instanceof IOException io) {
      return io;
    }
    if (failure instanceof RuntimeException unchecked) {
      throw unchecked;
    }
    if (failure instanceof Error error) {
      throw error;
    }
    return new IOException(failure); // a checked exception thrown sneakily by a stream or channel
  }

  /** Write calls made so far; with a 128 KiB buffer, about one per 128 KiB of items. */
  public long writeCalls() {
    return target.writeCalls();
  }

  /**
   * {@code fsync}s made so far (those that failed included), when enabled: one per batch that wrote bytes, and one
   * per rollback of a failed batch.
   */
  public long forces() {
    return target.forces();
  }

  /**
   * Directory {@code fsync}s made so far (those that failed included, as for {@link #forces()}), when enabled: one
   * after the sink created its file (or created it again, reopening it after an interrupt), before the next batch is
   * told written, and one more per failed try; always 0 on Windows.
   */
  public long directoryForces() {
    return target.directoryForces();
  }

  /**
   * Closes the file, stream or channel; for a file whose rollback failed earlier, or which a batch in progress has
   * written to, truncates it back first. Call it after the batcher that uses this sink is closed; any thread may,
   * even while a batch is being written (see the class comment). Idempotent.
   *
   * @throws IOException if that truncation or the close fails (the target is closed in any case)
   */
  @Override
  public void close() throws IOException {
    target.close();
  }
}
