package dev.ringbatch.sink;

import java.sql.PreparedStatement;
import java.sql.SQLException;

/**
 * Sets one item's values as the parameters of a prepared statement. Called on the batcher's consumer thread.
 * An exception fails that item alone; the rest of the batch is written.
 *
 * @param <T> the item type
 */
@FunctionalInterface
public interface StatementBinder<T> {

  /** Binds {@code item} to the parameters of {@code statement}. */
  void bind(PreparedStatement statement, T item) throws SQLException;
}
