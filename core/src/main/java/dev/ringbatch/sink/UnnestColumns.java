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

  /** How a refusal names each column: its parameter's position and array type. */
  private final String[] labels;

  /** Each column's type, as its array type names it: where the text of a value depends on it. */
  private final PgValues.Target[] targets;

  private final List<Column<T>> columns;

  UnnestColumns(List<Column<T>> columns) {
    this.columns = List.copyOf(columns);
    this.labels = new String[columns.size()];
    this.targets = new PgValues.Target[columns.size()];
    for (int k = 0; k < labels.length; k++) {
      targets[k] = PgValues.Target.of(columns.get(k).sqlType());
      labels[k] = "parameter " + (k + 1) + " (" + columns.get(k).sqlType() + "[])";
    }
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

  /**
   * Puts the text of {@code item}'s value of every column at {@code at}, by the {@link PgValues} contract; throws
   * whatever a column function throws, or the contract's refusal. An array or a {@code List} is refused: unnest
   * takes one scalar per row and column, and would flatten it into rows.
   */
  void extract(T item, Object[][] values, int at) {
    for (int k = 0; k < values.length; k++) {
      Object value = columns.get(k).value().apply(item);
      String name = labels[k];
      if (PgValues.isArray(value)) {
        throw PgValues.refused(name, value, "an unnest sink binds one value per row, and an array or List would"
            + " be unnested into rows: write array columns with PgCopySink or a rows sink");
      }
      values[k][at] = PgValues.text(name, value, targets[k]);
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
        arrays[k] = c.createArrayOf(columns.get(k).sqlType(), java.util.Arrays.copyOf(values[k], rows, String[].class));
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
}
