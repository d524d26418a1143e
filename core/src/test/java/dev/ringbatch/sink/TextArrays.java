package dev.ringbatch.sink;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;
import javax.sql.DataSource;

/**
 * An {@link ArrayBinder} for the arrays sink's own tests: each column's values as their {@code String.valueOf}
 * texts in one SQL array (ringbatch-postgresql's {@code PgUnnest} binds by PostgreSQL's value contract, which its
 * own tests cover). Values here are numbers and plain strings.
 */
public final class TextArrays<T> implements ArrayBinder<T> {
  private final List<String> sqlTypes = new ArrayList<>();
  private final List<Function<? super T, ?>> values = new ArrayList<>();
  private final DataSource dataSource;
  private final String sql;

  private TextArrays(DataSource dataSource, String sql) {
    this.dataSource = dataSource;
    this.sql = sql;
  }

  public static <T> TextArrays<T> sink(DataSource dataSource, String sql) {
    return new TextArrays<>(dataSource, sql);
  }

  public TextArrays<T> column(String sqlType, Function<? super T, ?> value) {
    sqlTypes.add(sqlType);
    values.add(value);
    return this;
  }

  public JdbcBatchSink<T> build() {
    return JdbcBatchSink.ofArrays(dataSource, sql, this);
  }

  @Override
  public Rows<T> rows(int capacity) {
    String[][] texts = new String[sqlTypes.size()][capacity];
    return new Rows<>() {
      private int count;

      @Override
      public void add(T item) {
        for (int k = 0; k < texts.length; k++) {
          Object value = values.get(k).apply(item);
          texts[k][count] = value == null ? null : String.valueOf(value);
        }
        count++;
      }

      @Override
      public void bind(Connection c, PreparedStatement ps, boolean autoCommit) throws SQLException {
        for (int k = 0; k < texts.length; k++) {
          ps.setArray(k + 1, c.createArrayOf(sqlTypes.get(k), Arrays.copyOf(texts[k], count)));
        }
      }
    };
  }

  @Override
  public String toString() {
    return "TextArrays" + Objects.toString(sqlTypes);
  }
}
