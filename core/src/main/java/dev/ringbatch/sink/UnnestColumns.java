package dev.ringbatch.sink;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.function.Function;

/**
 * The columns of an unnest {@link JdbcBatchSink}: each column's values gathered into one SQL array, bound as
 * one parameter, and the statement run as whatever it is (an update, or a query such as
 * {@code INSERT ... RETURNING} or {@code SELECT f(?::bigint[], ...)}). Consumer thread only.
 *
 * @param <T> the item type
 */
final class UnnestColumns<T> {

  record Column<T>(String sqlType, Function<? super T, ?> value) {}

  private final List<Column<T>> columns;

  UnnestColumns(List<Column<T>> columns) {
    this.columns = List.copyOf(columns);
  }

  List<Column<T>> columns() {
    return columns;
  }

  /** Room for {@code rows} values of every column. */
  Object[][] newValues(int rows) {
    Object[][] values = new Object[columns.size()][];
    for (int k = 0; k < values.length; k++) {
      values[k] = new Object[rows];
    }
    return values;
  }

  /** Puts {@code item}'s value of every column at {@code at}; throws whatever a column function throws. */
  void extract(T item, Object[][] values, int at) {
    for (int k = 0; k < values.length; k++) {
      values[k][at] = columns.get(k).value().apply(item);
    }
  }

  /**
   * Binds the first {@code rows} values of each column as one array and runs the statement.
   *
   * @return each row's result: 1 when the statement reported exactly one row per item (an update count, or the
   *     rows of a {@code RETURNING}), else {@link Statement#SUCCESS_NO_INFO}
   */
  int execute(Connection c, PreparedStatement ps, Object[][] values, int rows) throws SQLException {
    Array[] arrays = new Array[values.length];
    try {
      for (int k = 0; k < values.length; k++) {
        arrays[k] = c.createArrayOf(columns.get(k).sqlType(), typed(values[k], rows));
        ps.setArray(k + 1, arrays[k]);
      }
      return reported(ps, ps.execute()) == rows ? 1 : Statement.SUCCESS_NO_INFO;
    } finally {
      for (Array array : arrays) {
        if (array != null) {
          array.free();
        }
      }
    }
  }

  /**
   * Reads every result of an executed statement: update counts and result sets (read to their end, so that a
   * statement returning rows is finished, never left half-read). Returns the count or row count of a statement with
   * one result, or -1.
   */
  private static long reported(PreparedStatement ps, boolean isResultSet) throws SQLException {
    long reported = -1;
    int results = 0;
    for (boolean resultSet = isResultSet; ; resultSet = ps.getMoreResults()) {
      if (resultSet) {
        long rows = 0;
        try (ResultSet rs = ps.getResultSet()) {
          while (rs.next()) {
            rows++;
          }
        }
        reported = rows;
      } else {
        long count = ps.getUpdateCount();
        if (count == -1) {
          return results == 1 ? reported : -1; // several results: which one counts the items is unknown
        }
        reported = count;
      }
      results++;
    }
  }

  /**
   * The first {@code n} values, in a {@code byte[][]} when every non-null one is a {@code byte[]}: pgjdbc refuses a
   * {@code byte[]} inside an {@code Object[]}, but encodes a {@code byte[][]} as {@code bytea[]}. Every other column
   * stays an {@code Object[]}, whose elements the driver writes as text, whatever their class: a typed array would
   * change how some are written (pgjdbc writes a {@code Boolean[]} as 1 and 0 for any type but {@code bool}).
   */
  static Object[] typed(Object[] values, int n) {
    boolean bytes = false;
    for (int i = 0; i < n; i++) {
      Object value = values[i];
      if (value != null) {
        if (!(value instanceof byte[])) {
          return java.util.Arrays.copyOf(values, n);
        }
        bytes = true;
      }
    }
    Object[] typed = bytes ? new byte[n][] : new Object[n];
    System.arraycopy(values, 0, typed, 0, n);
    return typed;
  }

}
