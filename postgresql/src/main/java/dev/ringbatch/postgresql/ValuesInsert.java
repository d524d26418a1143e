package dev.ringbatch.postgresql;

import dev.ringbatch.sink.BatchConnection;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;
import org.postgresql.PGStatement;

/**
 * A small batch of a {@link PgCopySink} as one {@code INSERT INTO table (columns) VALUES (...), (...)}: in a
 * transaction, pgjdbc sends a {@code COPY} only after a {@code BEGIN} of its own and waits for the server's
 * {@code CopyInResponse} before the data, two round trips an {@code INSERT} (its {@code BEGIN} sent with it) does
 * not pay. Not prepared on the server (see {@link #insert}), it is parsed for each batch, at a cost that grows
 * with its rows: up to 32 rows it is the cheaper (measured with the JDBC demo, docs/results/issue35-values-insert.txt). The values are the
 * text the {@code COPY} line holds, bound with no type of their own, so the server reads each with its column
 * type's input function, as {@code COPY} does: the same value either way. But without the column's type modifier,
 * which {@code COPY} hands the input function too, and which changes how an interval is read ({@code interval day}
 * reads '3' as 3 days, a parameter is 3 seconds cut to 0 days): a table with such a column is always copied
 * ({@link CopyStatements#insertable}). Used only while no row is refused: the sink copies the rows of a refused
 * {@code INSERT} again with {@code COPY}, whose error names the line at fault.
 */
final class ValuesInsert {
  /**
   * Batches of up to this many rows are inserted; larger ones copied. Within PostgreSQL's 65,535 parameters a
   * statement for any table (at most 1,600 columns).
   */
  static final int MAX_ROWS = 32;

  private final String head;
  private final String row;
  /** The statement for n rows, made on first use. */
  private final String[] sql;

  ValuesInsert(String table, List<? extends CopyColumn<?>> columns) {
    String names = String.join(", ", columns.stream().map(CopyColumn::name).toList());
    // OVERRIDING SYSTEM VALUE: a GENERATED ALWAYS identity column stores the value given, as COPY stores it
    head = "INSERT INTO " + table + " (" + names + ") OVERRIDING SYSTEM VALUE VALUES ";
    row = "(" + String.join(", ", java.util.Collections.nCopies(columns.size(), "?")) + ")";
    sql = new String[MAX_ROWS + 1];
  }

  /**
   * Inserts the rows of {@code attempt} in {@code c}'s open transaction, without committing.
   *
   * @return the server's count of rows inserted
   */
  long insert(Connection c, BatchConnection connection, CopyRows<?> rows, int[] attempt) throws SQLException {
    PgSession.arrayNullsOn(c, false);
    try (PreparedStatement ps = c.prepareStatement(sql(attempt.length))) {
      // Never a statement prepared on the server (pgjdbc's prepareThreshold): it keeps the parameter types the
      // server inferred when it was prepared, and after an ALTER TABLE it would read a value as the column's old
      // type and cast it (12345678901234567.89 read as a float8 into what is now a numeric column)
      ps.unwrap(PGStatement.class).setPrepareThreshold(0);
      rows.bind(ps, attempt);
      long count = ps.executeLargeUpdate();
      connection.answered();
      return count;
    }
  }

  private String sql(int n) {
    String s = sql[n];
    if (s == null) {
      StringBuilder b = new StringBuilder(head.length() + n * (row.length() + 2)).append(head);
      for (int i = 0; i < n; i++) {
        b.append(i == 0 ? "" : ", ").append(row);
      }
      s = b.toString();
      sql[n] = s;
    }
    return s;
  }
}
