package dev.ringbatch.sink;

import static java.util.Objects.requireNonNull;

import dev.ringbatch.OutcomeUnknownException;
import dev.ringbatch.internal.shared.Checks;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.channels.NonWritableChannelException;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.locks.ReentrantLock;
import org.jspecify.annotations.Nullable;

/**
 * The stream, channel or file a {@link ByteSink} writes to. It writes whole buffers, knows the offset where the
 * next byte lands and how far the current batch was handed over, and rolls a file back to an offset. Called on
 * the sink's consumer thread, and by {@link #close()} on any thread, possibly while the consumer is still in a
 * batch: a batcher's close that timed out abandons the batch, but its consumer goes on when the sink returns.
 *
 * <p>So every operation on the target runs under {@link #lock} and first checks {@link #closed}. {@code close()}
 * of a file takes the lock too: it waits for a write, force or truncation in progress, truncates away what an
 * unfinished batch had handed over, and closes. After that nothing writes to, truncates or reopens the file (where
 * another sink may be writing by then): a late operation throws an {@link IllegalStateException} instead. A stream
 * or other channel is closed without the lock, so that a write blocked in it fails rather than holds the close.
 */
final class ByteTarget {
  private final ReentrantLock lock = new ReentrantLock();
  /**
   * Set by {@link #close()}. For a file it is written under the lock, which each operation holds while it checks the
   * flag and acts; volatile for a stream or other channel, whose close does not take the lock.
   */
  private volatile boolean closed;
  /** Replaced only when an owned file's channel was closed by an interrupt and is reopened. */
  private @Nullable WritableByteChannel channel;
  private @Nullable FileChannel file;
  /** The file, when the sink opened it ({@code ByteSink.toFile}) and may therefore reopen it. */
  private final @Nullable OwnedFile owned;
  private final @Nullable OutputStream stream;
  private final boolean fsync;
  /** Where the next byte lands: bytes taken by write calls that returned (for a file, its offset). */
  private long position;
  /** The end of the bytes handed to write calls since {@link #beginBatch}, whether the calls returned or not. */
  private long handedEnd;
  private boolean rollBackPending;
  /** A write found the file's end elsewhere than where the sink's own bytes end: the rollback cuts nothing. */
  private boolean changedUnderSink;
  /** What the close's rollback of an unfinished batch found: null if it cut the batch away. */
  private @Nullable Throwable closeVerdict;
  /** Where the current batch began; in a batch from {@link #beginBatch} until it is written or rolled back. */
  private long batchStart;
  private boolean inBatch;
  /** Why a stream or other channel no longer takes batches: a write failed after bytes may have gone out. */
  private @Nullable Throwable broken;
  private long writeCalls;
  private long forces;
  /** A stream's bytes, copied out of the sink's direct buffer. */
  private byte[] copy = new byte[0];

  private ByteTarget(@Nullable WritableByteChannel channel, @Nullable OwnedFile owned, @Nullable OutputStream stream,
      boolean fsync, long position, boolean regularFile) {
    this.channel = channel;
    this.owned = owned;
    this.file = regularFile && channel instanceof FileChannel fc ? fc : null;
    this.stream = stream;
    this.fsync = fsync;
    this.position = position;
  }

  static ByteTarget appendTo(Path path, boolean fsync, OwnedFile.DirectoryOpener directories) throws IOException {
    OwnedFile owned = new OwnedFile(path, fsync, directories);
    FileChannel opened = owned.open();
    if (!Files.isRegularFile(path)) { // a named pipe or a device: a channel with nothing to position, cut or force
      if (fsync) {
        opened.close();
        throw new IllegalStateException("fsync needs a regular file, but " + path + " is not one (a pipe or a"
            + " device?)");
      }
      return new ByteTarget(opened, null, null, false, 0, false);
    }
    return new ByteTarget(opened, owned, null, fsync, opened.size(), true);
  }

  static ByteTarget of(OutputStream stream) {
    // not Channels.newChannel(stream): it would split each buffer into 8 KiB writes
    return new ByteTarget(null, null, stream, false, 0, false);
  }

  /** A channel; a {@link FileChannel} must be at its end, since a rollback truncates the file. */
  static ByteTarget of(WritableByteChannel channel, boolean fsync) throws IOException {
    long position = 0;
    if (channel instanceof FileChannel file) {
      try {
        position = file.position();
      } catch (IOException notSeekable) { // a pipe ("Illegal seek"): a channel with no position to keep
        if (notSeekable instanceof ClosedChannelException) {
          throw notSeekable;
        }
        Checks.requireState(!fsync, "fsync needs a regular file, but the FileChannel is not one (%s)",
            notSeekable.getMessage());
        return new ByteTarget(channel, null, null, false, 0, false);
      }
      long size = file.size();
      Checks.requireArgument(position == size, "channel must be positioned at the end of its file, where ByteSink"
          + " appends, but is at %s of %s bytes: open it with StandardOpenOption.APPEND or position it at its"
          + " size", position, size);
    }
    return new ByteTarget(channel, null, null, fsync, position, true);
  }

  boolean isStream() {
    return stream != null;
  }

  boolean isFile() {
    return file != null;
  }

  /** What the target is, for messages: "file", "OutputStream" or "WritableByteChannel". */
  String kind() {
    return file != null ? "file" : stream != null ? "OutputStream" : "WritableByteChannel";
  }

  /** Why the sink takes no more batches (closed, or a stream or channel broken), or null if it takes them. */
  @Nullable IllegalStateException refusal() {
    Throwable brokenBy = broken;
    if (closed) {
      return closedFailure();
    }
    return brokenBy == null ? null : new IllegalStateException("ByteSink is broken: a write to its " + kind()
        + " failed (" + brokenBy + ") after bytes of a batch may have gone out, so the offset of every later item is"
        + " unknown; close this sink and build a new one", brokenBy);
  }

  /**
   * After the batch that began at {@code batchStart} failed with {@code failure} once bytes of it were handed
   * over: rolls a file back, and returns null if that worked; else returns what each item whose bytes were handed
   * over is told. A stream or other channel cannot be rolled back: it is broken, and later batches are refused.
   */
  @Nullable OutcomeUnknownException afterFailure(long batchStart, Throwable failure) {
    if (file == null) {
      broken = failure;
      return new OutcomeUnknownException("the write to the " + kind() + " failed (" + failure + ") after this"
          + " item's bytes were handed to it: they may have gone out, wholly or in part", failure);
    }
    Throwable rollBackFailure = rollBack(batchStart);
    if (rollBackFailure == null) {
      return null;
    }
    if (rollBackFailure != failure) {
      failure.addSuppressed(rollBackFailure);
    }
    return new OutcomeUnknownException("writing the batch failed (" + failure + ") after this item's bytes were"
        + " handed to the file, and rolling the file back to offset " + batchStart + ", where the batch began,"
        + " failed too (" + rollBackFailure + "): the item may be in the file, wholly or in part"
        + (rollBackPending ? "; the sink truncates the file back to that offset before it writes anything else"
            : ""), failure);
  }

  private IllegalStateException closedFailure() {
    return new IllegalStateException("ByteSink is closed: it writes nothing more to its " + kind());
  }

  /** Throws if the sink is closed; called holding the lock, before the target is touched. */
  private void requireOpen() {
    if (closed) {
      throw closedFailure();
    }
  }

  long position() {
    return position;
  }

  long handedEnd() {
    return handedEnd;
  }

  long writeCalls() {
    return writeCalls;
  }

  long forces() {
    return forces;
  }

  long directoryForces() {
    return owned == null ? 0 : owned.directoryForces();
  }

  /**
   * Starts a batch at {@link #position()}; first truncates a file whose earlier rollback failed. A file's position
   * is read from its channel (an appending one's is its size): a file truncated under the sink between batches (as
   * {@code logrotate}'s {@code copytruncate} does) takes the next records at its new end, at their offsets.
   */
  void beginBatch() throws IOException {
    lock.lock();
    try {
      requireOpen();
      if (rollBackPending) {
        finishPendingRollBack();
      }
      if (file != null) {
        try {
          FileChannel f = openFile(); // reopened first if an interrupt closed it after its batch was written
          position = f.size();
          if (owned == null) {
            f.position(position); // a channel given without APPEND writes there too (the sink's own file appends)
          }
          changedUnderSink = false; // whatever the file is now, the batch begins at its end
        } catch (ClosedChannelException closed) {
          throw new IOException("the channel is closed: nothing of the batch was written", closed);
        }
      }
      batchStart = position;
      handedEnd = position;
      inBatch = true;
    } finally {
      lock.unlock();
    }
  }

  /** Writes all of {@code source}, from its position to its limit. */
  void write(ByteBuffer source) throws IOException {
    lock.lock();
    try {
      requireOpen();
      writeAll(source);
    } finally {
      lock.unlock();
    }
  }

  private void writeAll(ByteBuffer source) throws IOException {
    int length = source.remaining();
    handedEnd = position + length;
    if (stream != null) {
      writeCalls++;
      if (source.hasArray()) { // an item's own buffer
        stream.write(source.array(), source.arrayOffset() + source.position(), length);
      } else {
        if (copy.length < length) {
          copy = new byte[length];
        }
        source.duplicate().get(copy, 0, length);
        stream.write(copy, 0, length);
      }
      source.position(source.limit());
      position += length;
      return;
    }
    WritableByteChannel target = requireNonNull(channel, "channel");
    while (source.hasRemaining()) {
      try {
        requireUnchanged(); // a truncation between two calls: the next would leave a hole (or land elsewhere)
      } catch (IOException changed) {
        handedEnd = position; // this call was not made
        throw changed;
      }
      writeCalls++;
      int written;
      try {
        written = target.write(source);
      } catch (NonWritableChannelException | ClosedChannelException refused) {
        if (refused instanceof AsynchronousCloseException) {
          throw refused; // closed while the call ran (an interrupt, say): its bytes may have gone out
        }
        handedEnd = position; // refused before the call wrote anything
        throw new IOException("the channel " + (refused instanceof NonWritableChannelException
            ? "is not open for writing" : "is closed") + ": this write call wrote nothing", refused);
      }
      if (written <= 0) {
        handedEnd = position; // the call returned: none of its bytes went out
        throw new IOException("the channel accepted 0 of " + source.remaining() + " bytes: ByteSink needs a"
            + " blocking channel, whose write waits until it can take bytes");
      }
      position += written;
    }
  }

  /** Throws if the file does not end where the sink's bytes end: it changed under the sink during the batch. */
  private void requireUnchanged() throws IOException {
    if (file != null && file.size() != position) {
      changedUnderSink = true;
      throw new IOException("the file changed under the sink (truncated, or written by another) while it wrote"
          + " a batch" + (position == batchStart ? ", before any of it went out"
              : ": the batch's bytes are in it, or in a copy, at offsets the sink cannot tell"));
    }
  }

  /** Ends a batch that began at {@code batchStart}: flushes a stream, forces a file with fsync, if it wrote. */
  void endBatch() throws IOException {
    lock.lock();
    try {
      requireOpen(); // a closed sink's late batch fails whole, even one that wrote nothing
      if (position != batchStart) {
        requireUnchanged();
        if (stream != null) {
          stream.flush();
        }
        if (fsync) {
          forces++;
          requireNonNull(file, "file").force(false);
        }
      }
      if (owned != null) {
        owned.syncDirectory(); // with fsync, once after the sink created the file: before any item is told written
      }
      inBatch = false;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Truncates the file back to {@code offset} (and forces that, with fsync). Returns null if done; else what
   * failed, and then the next batch (or {@link #close()}) tries again before it writes. A pending interrupt is
   * set aside meanwhile (and restored): on an interruptible channel it would close the channel instead. After
   * {@link #close()}, truncates nothing: the close truncated the batch away, or returns why it could not.
   */
  private @Nullable Throwable rollBack(long offset) {
    lock.lock();
    boolean interrupted = Thread.interrupted();
    try {
      if (closed) {
        return closeVerdict; // the close rolled the unfinished batch back already, as below
      }
      return cutBack(offset);
    } catch (Throwable t) { // the caller reports it to each item whose outcome it leaves unknown
      rollBackPending = true;
      return t;
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
      lock.unlock();
    }
  }

  /**
   * Cuts the file back to {@code offset}, where the batch began, and returns null; or, if the file changed under
   * the sink, cuts nothing and returns why. Throws if the cut fails (then pending). Holding the lock.
   */
  private @Nullable Throwable cutBack(long offset) throws IOException {
    // Bytes of returned calls end at returnedEnd; a failed call may have put some of its own, up to handedEnd. A
    // file of another size changed under the sink (truncated, replaced on a reopen): nothing is cut, unknown
    long returnedEnd = position;
    position = offset; // where a truncation that fails below is finished later
    long size = openFile().size();
    boolean changed = changedUnderSink || size < returnedEnd || size > handedEnd;
    changedUnderSink = false;
    inBatch = false;
    if (changed) {
      return new IOException("the file is " + size + " bytes long where this batch's bytes would end between "
          + returnedEnd + " and " + handedEnd + ": it changed under the sink, so where the batch's bytes went is"
          + " unknown");
    }
    truncate();
    return null;
  }

  /**
   * An interrupt of the writing thread closes a {@link FileChannel} ({@code ClosedByInterruptException}): a
   * file the sink opened itself is opened again, at the same path, so one stray interrupt does not end it.
   */
  private FileChannel openFile() throws IOException {
    FileChannel target = requireNonNull(file, "file");
    if (!target.isOpen() && owned != null) {
      target = owned.open();
      file = target;
      channel = target;
      changedUnderSink |= owned.replaced(); // the path names another file now: the batch's bytes are not in it
    }
    return target;
  }

  /**
   * Truncates the file back to {@link #position}; cuts nothing if it is shorter already (truncated under the sink,
   * or created again at its path on a reopen): the next batch starts at its end.
   */
  private void truncate() throws IOException {
    FileChannel target = openFile();
    if (changedUnderSink || target.size() < position) { // another file now (a reopen), or shorter: nothing to cut
      rollBackPending = false;
      return;
    }
    target.truncate(position);
    long size = target.size();
    if (size > position) {
      throw new IOException("the file is " + size + " bytes long after truncating it to " + position
          + "; is another process writing to it?");
    }
    if (fsync) {
      forces++;
      target.force(false);
    }
    rollBackPending = false;
  }

  private void finishPendingRollBack() throws IOException {
    try {
      truncate();
    } catch (IOException e) {
      throw new IOException("cannot truncate the file back to offset " + position + ", where a failed batch began,"
          + " which the sink must do before it writes again: " + e, e);
    }
  }

  /**
   * Closes the target, at once; a file first truncated back to where an unfinished batch began (whose items will
   * fail as closed) or where a failed rollback left it. Idempotent; the target is closed in any case.
   */
  void close() throws IOException {
    if (file == null) {
      closed = true;
      if (stream != null) {
        stream.close();
      } else {
        requireNonNull(channel, "channel").close();
      }
      return;
    }
    lock.lock();
    // A pending interrupt would close the channel under the truncation (ClosedByInterruptException): set aside
    boolean interrupted = Thread.interrupted();
    try {
      if (!closed && inBatch && handedEnd > batchStart) {
        try {
          closeVerdict = cutBack(batchStart); // what the consumer's rollback of that batch reports
        } catch (IOException | RuntimeException e) {
          closeVerdict = e;
          throw e;
        }
      } else if (!closed && rollBackPending) {
        finishPendingRollBack();
      }
    } finally {
      closed = true;
      try {
        requireNonNull(channel, "channel").close();
      } finally {
        lock.unlock();
        if (interrupted) {
          Thread.currentThread().interrupt();
        }
      }
    }
  }
}
