package dev.ringbatch.postgresql;

import static java.util.Objects.requireNonNull;

import dev.ringbatch.sink.ArrayBinder;
import dev.ringbatch.sink.JdbcBatchSink;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * A {@link JdbcBatchSink} that binds each batch as one PostgreSQL statement whose parameters are whole columns,
 * for example {@code INSERT INTO t (id, name) SELECT * FROM unnest(?::bigint[], ?::text[])}. It may return rows
 * ({@code RETURNING}, or a bulk function {@code SELECT f(?::bigint[], ?::text[])}): they are read to the end. Each
 * item's result is 1 when the statement reported one row per item, else {@link Statement#SUCCESS_NO_INFO}. Each
 * value is sent as its text by the {@link PgValues} contract, the one {@code PgCopySink} uses. Failures, retries
 * and idempotent mode are {@link JdbcBatchSink}'s; an idempotent unnest statement runs in autocommit.
 *
 * @param <T> the item type
 */
public final class PgUnnest<T> implements ArrayBinder<T> {
  private final List<Function<? super T, ?>> values;
  /** Each column's element type for {@link Connection#createArrayOf}. */
  private final String[] sqlTypes;
  /** How a refusal names each column: its parameter's position and array type. */
  private final String[] labels;
  /** Each column's type, as its array type names it: where the text of a value depends on it. */
  private final PgValues.Target[] targets;
  /**
   * The same, with a name {@link PgValues.Target#of} does not know (a domain) followed to its base type in the
   * catalog, once, on the first statement's connection; null until then.
   */
  private volatile PgValues.Target @Nullable [] resolved;

  private PgUnnest(List<String> sqlTypes, List<Function<? super T, ?>> values) {
    this.values = List.copyOf(values);
    this.sqlTypes = sqlTypes.toArray(String[]::new);
    this.labels = new String[this.sqlTypes.length];
    this.targets = new PgValues.Target[this.sqlTypes.length];
    for (int k = 0; k < labels.length; k++) {
      targets[k] = PgValues.Target.of(this.sqlTypes[k]);
      labels[k] = "parameter " + (k + 1) + " (" + this.sqlTypes[k] + "[])";
    }
  }

  /**
   * Starts a sink that binds each batch as one array per column: {@code sql} has one array parameter per
   * {@link Builder#column column}, in order.
   *
   * @throws NullPointerException if an argument is null
   */
  public static <T> Builder<T> sink(DataSource dataSource, String sql) {
    return new Builder<>(dataSource, sql);
  }

  /** Builds an unnest sink; see {@link PgUnnest#sink}. */
  public static final class Builder<T> {
    private final DataSource dataSource;
    private final String sql;
    private final List<String> sqlTypes = new ArrayList<>();
    private final List<Function<? super T, ?>> values = new ArrayList<>();

    private Builder(DataSource dataSource, String sql) {
      this.dataSource = requireNonNull(dataSource, "dataSource");
      this.sql = requireNonNull(sql, "sql");
    }

    /**
     * Adds the next array parameter. Each value is turned into its text by the contract of {@link PgValues} (the
     * table is in {@code docs/sinks.md}) and the column passed to {@link Connection#createArrayOf} as a
     * {@code String[]}, which the server reads with {@code sqlType}'s input function. A value the contract refuses,
     * or an array or {@code List} (unnest would flatten it into rows), fails its item alone with an error naming
     * the parameter, the Java type and the reason.
     *
     * @param sqlType the element type for {@link Connection#createArrayOf}, e.g. {@code "bigint"}, {@code "text"}
     * @param value extracts the column's value from an item (boxed; {@code null} for SQL NULL)
     * @throws IllegalArgumentException if {@code sqlType} is blank
     */
    public Builder<T> column(String sqlType, Function<? super T, ?> value) {
      requireNonNull(sqlType, "sqlType");
      requireNonNull(value, "value"); // both checked before either is kept: a refused column leaves no half behind
      if (sqlType.isBlank()) {
        throw new IllegalArgumentException("sqlType of parameter " + (sqlTypes.size() + 1)
            + " must not be blank but was '" + sqlType + "'");
      }
      sqlTypes.add(sqlType);
      values.add(value);
      return this;
    }

    /**
     * Returns the sink.
     *
     * @throws IllegalStateException if no column was added
     * @throws IllegalArgumentException if {@code sql} is blank
     */
    public JdbcBatchSink<T> build() {
      if (sqlTypes.isEmpty()) {
        throw new IllegalStateException("an unnest sink needs at least one column");
      }
      return JdbcBatchSink.ofArrays(dataSource, sql, new PgUnnest<>(sqlTypes, values));
    }
  }

  /**
   * A domain's base type, by name (as {@link Connection#createArrayOf} resolves the name): no row when the name is
   * not a type the session sees. Operators qualified, as the COPY sink's catalog query is.
   */
  private static final String BASE_TYPE_SQL = "WITH RECURSIVE d(typ) AS (SELECT"
      + " pg_catalog.to_regtype(?::text)::pg_catalog.oid UNION ALL SELECT t.typbasetype FROM d"
      + " JOIN pg_catalog.pg_type t ON t.oid OPERATOR(pg_catalog.=) d.typ WHERE t.typtype OPERATOR(pg_catalog.=) 'd')"
      + " SELECT x.typname::text FROM d JOIN pg_catalog.pg_type x ON x.oid OPERATOR(pg_catalog.=) d.typ"
      + " WHERE x.typtype OPERATOR(pg_catalog.<>) 'd'";

  /** Reads the base type of each column named by a name the contract does not know, once per sink. */
  @Override
  public Rows<T> rows(Connection c, int capacity) throws SQLException {
    PgValues.Target[] known = resolved;
    if (known == null) {
      known = targets.clone();
      try (PreparedStatement ps = c.prepareStatement(BASE_TYPE_SQL)) {
        for (int k = 0; k < known.length; k++) {
          if (known[k] != PgValues.Target.OTHER) {
            continue;
          }
          ps.setString(1, sqlTypes[k]);
          try (ResultSet rs = ps.executeQuery()) {
            if (rs.next()) {
              known[k] = PgValues.Target.of(rs.getString(1));
            }
          }
        }
      }
      resolved = known;
    }
    return rows(capacity, known);
  }

  @Override
  public Rows<T> rows(int capacity) {
    PgValues.Target[] known = resolved;
    return rows(capacity, known != null ? known : targets);
  }

  private Rows<T> rows(int capacity, PgValues.Target[] columnTargets) {
    String[][] texts = new String[sqlTypes.length][capacity];
    return new Rows<>() {
      private int count;

      /**
       * Puts the text of {@code item}'s value of every column in the next row, by the {@link PgValues} contract;
       * throws whatever a column function throws, or the contract's refusal. An array or a {@code List} is refused:
       * unnest takes one scalar per row and column, and would flatten it into rows.
       */
      @Override
      public void add(T item) {
        for (int k = 0; k < texts.length; k++) {
          Object value = values.get(k).apply(item);
          if (PgValues.isArray(value)) {
            throw PgValues.refused(labels[k], value, "an unnest sink binds one value per row, and an array or List"
                + " would be unnested into rows: write array columns with PgCopySink or a rows sink");
          }
          texts[k][count] = PgValues.text(labels[k], value, columnTargets[k]);
        }
        count++;
      }

      /** pgjdbc's arrays hold no server resource: they are not freed, the garbage collector takes them. */
      @Override
      public void bind(Connection c, PreparedStatement ps, boolean autoCommit) throws SQLException {
        PgSession.arrayNullsOn(c, autoCommit); // every null of a column is an array literal's NULL
        for (int k = 0; k < texts.length; k++) {
          ps.setArray(k + 1, c.createArrayOf(sqlTypes[k], Arrays.copyOf(texts[k], count)));
        }
      }
    };
  }

  @Override
  public String toString() {
    return "PgUnnest" + Arrays.toString(sqlTypes);
  }
}
