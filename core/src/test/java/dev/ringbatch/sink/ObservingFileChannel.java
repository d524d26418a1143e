package dev.ringbatch.sink;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;

/**
 * A {@link FileChannel} that delegates to a real one, records writes, forces and truncations, and can fail them:
 * a disk that fills up after {@link #writeBudget} more bytes (the write that reaches the budget is cut short,
 * as on a real full disk, and the next one throws), a failing force, a failing truncate.
 */
final class ObservingFileChannel extends FileChannel {
  static final String DISK_FULL = "No space left on device";

  private final FileChannel delegate;
  final List<String> events = new CopyOnWriteArrayList<>();
  /** Evaluated on each force: what the test wants to know at that moment. */
  volatile BooleanSupplier onForce = () -> true;
  final List<Boolean> onForceResults = new CopyOnWriteArrayList<>();
  volatile boolean failWrites;
  /** Bytes the disk still takes; {@code Long.MAX_VALUE} for no limit. */
  volatile long writeBudget = Long.MAX_VALUE;
  /** How many of the next forces fail. */
  volatile int forceFailures;
  volatile boolean failTruncate;
  /** Run before each write and truncate: a test's fault injector. */
  volatile Runnable beforeChange = () -> { };

  ObservingFileChannel(FileChannel delegate) {
    this.delegate = delegate;
  }

  @Override
  public int write(ByteBuffer src) throws IOException {
    beforeChange.run();
    long budget = writeBudget;
    if (failWrites || budget == 0) {
      throw new IOException(DISK_FULL);
    }
    events.add("write " + src.remaining());
    if (src.remaining() <= budget) {
      int written = delegate.write(src);
      writeBudget = budget == Long.MAX_VALUE ? budget : budget - written;
      return written;
    }
    ByteBuffer part = src.duplicate();
    part.limit(part.position() + (int) budget);
    int written = delegate.write(part);
    src.position(src.position() + written);
    writeBudget = budget - written;
    return written;
  }

  @Override
  public void force(boolean metaData) throws IOException {
    events.add("force");
    onForceResults.add(onForce.getAsBoolean());
    if (forceFailures > 0) {
      forceFailures--;
      throw new IOException("Input/output error");
    }
    delegate.force(metaData);
  }

  @Override
  public int read(ByteBuffer dst) throws IOException {
    return delegate.read(dst);
  }

  @Override
  public long read(ByteBuffer[] dsts, int offset, int length) throws IOException {
    return delegate.read(dsts, offset, length);
  }

  @Override
  public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
    return delegate.write(srcs, offset, length);
  }

  @Override
  public long position() throws IOException {
    return delegate.position();
  }

  @Override
  public FileChannel position(long newPosition) throws IOException {
    delegate.position(newPosition);
    return this;
  }

  @Override
  public long size() throws IOException {
    return delegate.size();
  }

  @Override
  public FileChannel truncate(long size) throws IOException {
    beforeChange.run();
    events.add("truncate " + size);
    if (failTruncate) {
      throw new IOException("Read-only file system");
    }
    delegate.truncate(size);
    return this;
  }

  @Override
  public long transferTo(long position, long count, WritableByteChannel target) throws IOException {
    return delegate.transferTo(position, count, target);
  }

  @Override
  public long transferFrom(ReadableByteChannel src, long position, long count) throws IOException {
    return delegate.transferFrom(src, position, count);
  }

  @Override
  public int read(ByteBuffer dst, long position) throws IOException {
    return delegate.read(dst, position);
  }

  @Override
  public int write(ByteBuffer src, long position) throws IOException {
    return delegate.write(src, position);
  }

  @Override
  public MappedByteBuffer map(MapMode mode, long position, long size) throws IOException {
    return delegate.map(mode, position, size);
  }

  @Override
  public FileLock lock(long position, long size, boolean shared) throws IOException {
    return delegate.lock(position, size, shared);
  }

  @Override
  public FileLock tryLock(long position, long size, boolean shared) throws IOException {
    return delegate.tryLock(position, size, shared);
  }

  @Override
  protected void implCloseChannel() throws IOException {
    delegate.close();
  }
}
