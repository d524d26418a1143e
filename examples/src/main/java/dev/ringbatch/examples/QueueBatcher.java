package dev.ringbatch.examples;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import javax.sql.DataSource;

/**
 * What a user would otherwise write, the baseline the JDBC demo measures ringbatch against: callers {@code put}
 * their row into an {@link ArrayBlockingQueue} and wait for its future; one writer thread {@code take}s the first,
 * {@code drainTo}s up to {@code maxBatch - 1} more, writes them in one transaction on one connection and completes
 * the futures. A failed batch fails all of its callers: a bad row takes the good rows of its batch with it.
 *
 * @param <T> the row type
 */
final class QueueBatcher<T> implements AutoCloseable {

  /** Writes one batch of rows on {@code connection}, inside the batcher's transaction. */
  @FunctionalInterface
  interface Writer<T> {
    void write(Connection connection, List<T> rows) throws SQLException;
  }

  private record Entry<T>(T row, CompletableFuture<Void> written) {}

  private final BlockingQueue<Entry<T>> queue;
  private final int maxBatch;
  private final DataSource dataSource;
  private final Writer<T> writer;
  private final Thread thread;
  private volatile boolean closed;
  private long batches;
  private long rows;

  QueueBatcher(String name, int capacity, int maxBatch, DataSource dataSource, Writer<T> writer) {
    this.queue = new ArrayBlockingQueue<>(capacity);
    this.maxBatch = maxBatch;
    this.dataSource = dataSource;
    this.writer = writer;
    this.thread = new Thread(this::run, name);
    thread.setDaemon(true);
    thread.start();
  }

  /** Queues {@code row} and waits until its batch is committed; throws what failed the batch. */
  void submitAndWait(T row) throws Exception {
    Entry<T> entry = new Entry<>(row, new CompletableFuture<>());
    queue.put(entry);
    try {
      entry.written().get();
    } catch (ExecutionException e) {
      throw e.getCause() instanceof Exception cause ? cause : e;
    }
  }

  private void run() {
    List<Entry<T>> batch = new ArrayList<>(maxBatch);
    List<T> batchRows = new ArrayList<>(maxBatch);
    while (!closed) {
      try {
        batch.add(queue.take());
      } catch (InterruptedException e) {
        break; // close()
      }
      queue.drainTo(batch, maxBatch - 1);
      for (Entry<T> entry : batch) {
        batchRows.add(entry.row());
      }
      Exception failure = write(batchRows);
      synchronized (this) {
        batches++;
        rows += batch.size();
      }
      for (Entry<T> entry : batch) {
        if (failure == null) {
          entry.written().complete(null);
        } else {
          entry.written().completeExceptionally(failure);
        }
      }
      batch.clear();
      batchRows.clear();
    }
  }

  /** One transaction; returns what failed it, or null. */
  private Exception write(List<T> batchRows) {
    try (Connection connection = dataSource.getConnection()) {
      connection.setAutoCommit(false);
      try {
        writer.write(connection, batchRows);
        connection.commit();
        return null;
      } catch (SQLException | RuntimeException e) {
        connection.rollback();
        return e;
      }
    } catch (SQLException | RuntimeException e) {
      return e;
    }
  }

  /** The mean number of rows per batch so far. */
  synchronized double meanBatchSize() {
    return batches == 0 ? 0 : (double) rows / batches;
  }

  @Override
  public void close() {
    closed = true;
    thread.interrupt();
    try {
      thread.join(10_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
