package dev.ringbatch.postgresql;

import dev.ringbatch.sink.BatchConnection;
import dev.ringbatch.sink.JdbcFailures;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Locale;
import org.jspecify.annotations.Nullable;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyIn;
import org.postgresql.util.PSQLException;
import org.postgresql.util.ServerErrorMessage;

/**
 * What a {@link PgCopySink} sends for one attempt, and how it reads the server's answer: the {@code COPY} into the
 * table, or, in idempotent mode, the {@code COPY} into a temporary staging table and the
 * {@code INSERT ... ON CONFLICT DO NOTHING} that moves it, returning which rows it inserted.
 */
final class CopyStatements<T> {
  /** The staging table's column holding each row's index in the batch. */
  private static final String ROW_COLUMN = "ringbatch_row";

  private final String table;
  private final List<CopyColumn<T>> columns;
  private final List<String> keys;
  private final String copySql;
  private final @Nullable String stageSql;
  private final @Nullable String insertSql;
  private final @Nullable String presentSql;
  /**
   * How the server's error context names a line of this COPY: {@code "COPY " + relation name + ", line "}, the
   * relation name as the server prints it (unqualified, unquoted), so that a table named {@code "ev, line 1"} or a
   * value containing {@code ", line 2"} cannot be mistaken for the line number.
   */
  private final String linePrefix;

  CopyStatements(String table, List<CopyColumn<T>> columns, List<String> keys) {
    this.table = table;
    this.columns = columns;
    this.keys = keys;
    String names = String.join(", ", columns.stream().map(CopyColumn::name).toList());
    if (keys.isEmpty()) {
      copySql = "COPY " + table + " (" + names + ") FROM STDIN WITH (ENCODING 'UTF8')";
      linePrefix = "COPY " + relationName(table) + ", line ";
      stageSql = null;
      insertSql = null;
      presentSql = null;
    } else {
      // A staging table per transaction, made from the table as it is now (one kept for the session would keep
      // column types an ALTER TABLE has since changed), dropped by the COMMIT or the rollback.
      // Always named in pg_temp, the session's own schema: with a search_path that lists pg_temp after public, an
      // unqualified name would find a table another session planted in public under the same name.
      String stageName = "ringbatch_stage_" + Integer.toUnsignedString((table + '(' + names + ')').hashCode(), 36);
      String stage = "pg_temp." + stageName;
      String keyList = String.join(", ", keys);
      copySql = "COPY " + stage + " (" + names + ", " + ROW_COLUMN + ") FROM STDIN WITH (ENCODING 'UTF8')";
      linePrefix = "COPY " + stageName + ", line ";
      stageSql = "CREATE TEMP TABLE " + stage + " ON COMMIT DROP AS SELECT " + names + ", 0 AS " + ROW_COLUMN
          + " FROM " + table + " WITH NO DATA";
      // Of the rows with one key only the first of the batch is offered, so a returned key names the row inserted.
      // OVERRIDING SYSTEM VALUE: a GENERATED ALWAYS identity column stores the value given, as COPY stores it.
      // ORDER BY the row: inserted in the batch's order (serials, triggers), not in the key order DISTINCT ON sorts by.
      insertSql = "WITH offered AS (SELECT DISTINCT ON (" + keyList + ") * FROM " + stage + " ORDER BY " + keyList
          + ", " + ROW_COLUMN + "), inserted AS (INSERT INTO " + table + " (" + names + ")"
          + " OVERRIDING SYSTEM VALUE SELECT " + names + " FROM offered ORDER BY " + ROW_COLUMN
          + " ON CONFLICT (" + keyList + ") DO NOTHING RETURNING " + keyList + ")"
          + " SELECT o." + ROW_COLUMN + " FROM offered o JOIN inserted i ON " + equal(keys, "o", "i");
      // A statement of its own, so that under READ COMMITTED it sees a row another transaction committed while the
      // move waited for it: that row's key is there.
      presentSql = "SELECT s." + ROW_COLUMN + " FROM " + stage + " s WHERE EXISTS (SELECT 1 FROM " + table + " t"
          + " WHERE " + equal(keys, "t", "s") + ")";
    }
  }

  /**
   * Each column's type where the text of a value depends on it ({@link PgValues.Target}), read once from the
   * catalog ({@code pg_attribute} of {@code table::regclass}, domains followed to their base type: readable
   * without any privilege on the table) in the connection's transaction. A column the catalog does not list is
   * {@link PgValues.Target#UNKNOWN} (the COPY meets the same problem and reports it). A read that fails throws,
   * rolled back, a connection it finds lost discarded: values are never encoded without the types the catalog
   * has, and the next batch reads again; a connection found dead before it answered is replaced, up to
   * {@code replaceDead} times.
   *
   * @throws SQLException (or the driver's or pool's unchecked exception) if the read failed
   */
  PgValues.Target[] targets(BatchConnection connection, int replaceDead) throws SQLException {
    for (int dead = 0; ; dead++) {
      try {
        return readTargets(connection);
      } catch (SQLException | RuntimeException e) {
        Connection c = connection.borrowed();
        if (c != null && (!BatchConnection.rollback(c, e) || JdbcFailures.connectionLost(c, e))) {
          boolean deadOnArrival = connection.unanswered(); // ended while idle in the pool: another may be borrowed
          connection.discard();
          if (deadOnArrival && dead < replaceDead) {
            continue;
          }
        }
        throw e;
      }
    }
  }

  private PgValues.Target[] readTargets(BatchConnection connection) throws SQLException {
    PgValues.Target[] targets = new PgValues.Target[columns.size()];
    java.util.Arrays.fill(targets, PgValues.Target.UNKNOWN);
    Connection c = connection.get();
    try (PreparedStatement ps = c.prepareStatement(TYPES_SQL)) {
      ps.setString(1, table);
      try (ResultSet rs = ps.executeQuery()) {
        connection.answered();
        while (rs.next()) {
          String name = rs.getString(1);
          PgValues.Target target = "A".equals(rs.getString(3))
              ? PgValues.Target.arrayOf(PgValues.Target.of(rs.getString(4))) : PgValues.Target.of(rs.getString(2));
          for (int i = 0; i < targets.length; i++) {
            if (relationName(columns.get(i).name()).equals(name)) {
              targets[i] = target;
            }
          }
        }
      }
    }
    return targets;
  }

  /**
   * A table's columns with the name and category of each one's type (domains followed to their base type), and
   * an array's element type.
   */
  private static final String TYPES_SQL = "WITH RECURSIVE c(name, typ) AS (SELECT a.attname::text, a.atttypid"
      + " FROM pg_catalog.pg_attribute a"
      + " WHERE a.attrelid OPERATOR(pg_catalog.=) ?::text::pg_catalog.regclass"
      + " AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped"
      + " UNION ALL SELECT c.name, t.typbasetype FROM c"
      + " JOIN pg_catalog.pg_type t ON t.oid OPERATOR(pg_catalog.=) c.typ"
      + " WHERE t.typtype OPERATOR(pg_catalog.=) 'd')"
      + " SELECT c.name, t.typname::text, t.typcategory::text,"
      // an array's element type, a domain followed to its base type as the column's own type is
      + " (WITH RECURSIVE e(typ) AS (SELECT t.typelem UNION ALL SELECT b.typbasetype FROM e"
      + " JOIN pg_catalog.pg_type b ON b.oid OPERATOR(pg_catalog.=) e.typ WHERE b.typtype OPERATOR(pg_catalog.=) 'd')"
      + " SELECT x.typname::text FROM e JOIN pg_catalog.pg_type x ON x.oid OPERATOR(pg_catalog.=) e.typ"
      + " WHERE x.typtype OPERATOR(pg_catalog.<>) 'd')"
      + " FROM c JOIN pg_catalog.pg_type t ON t.oid OPERATOR(pg_catalog.=) c.typ"
      + " WHERE t.typtype OPERATOR(pg_catalog.<>) 'd'";

  /**
   * {@code a.k OPERATOR(pg_catalog.=) b.k AND ...}: an unqualified {@code =} would be looked up on the session's
   * search_path, where a role that may create in an earlier schema could plant one that decides the outcomes.
   */
  private static String equal(List<String> keys, String a, String b) {
    return String.join(" AND ",
        keys.stream().map(k -> a + "." + k + " OPERATOR(pg_catalog.=) " + b + "." + k).toList());
  }

  static void requireArgument(boolean condition, String format, Object value) {
    if (!condition) {
      throw new IllegalArgumentException(String.format(Locale.ROOT, format, value));
    }
  }

  String table() {
    return table;
  }

  List<CopyColumn<T>> columns() {
    return columns;
  }

  boolean idempotent() {
    return !keys.isEmpty();
  }

  /** Which columns are keys, in column order. */
  boolean[] keyFlags() {
    boolean[] flags = new boolean[columns.size()];
    for (int i = 0; i < flags.length; i++) {
      flags[i] = keys.contains(columns.get(i).name());
    }
    return flags;
  }

  /** The statement {@link BatchConnection#statement()} prepares: the idempotent move, else never used. */
  String insertSql() {
    return insertSql != null ? insertSql : copySql;
  }

  /**
   * Opens the {@code COPY} (after the staging table, in idempotent mode) and sends the lines of {@code attempt}: all
   * but the end, which {@link #end} sends. On a connection in auto-commit only outside idempotent mode.
   */
  CopyIn send(Connection c, BatchConnection connection, CopyRows<T> rows, int[] attempt, boolean autoCommit)
      throws SQLException {
    PgSession.arrayNullsOn(c, autoCommit);
    if (stageSql != null) {
      try (Statement s = c.createStatement()) {
        s.execute(stageSql);
      }
      connection.answered();
    }
    CopyIn copy = c.unwrap(PGConnection.class).getCopyAPI().copyIn(copySql);
    connection.answered();
    try {
      rows.send(copy, attempt);
    } catch (Throwable e) {
      cancel(copy, e);
      throw e;
    }
    return copy;
  }

  /**
   * Ends a {@code COPY} {@link #send} opened and waits for the server's answer: in auto-commit, the answer that its
   * transaction committed.
   *
   * @return the server's count of rows written
   */
  static long end(CopyIn copy) throws SQLException {
    try {
      return copy.endCopy();
    } catch (Throwable e) {
      cancel(copy, e);
      throw e;
    }
  }

  /**
   * Whether the server answered the end of a {@code COPY} in auto-commit with an error of its own (in {@code e}'s
   * chain) and no {@code CommandComplete} came before it (the caller checks that): then its transaction did not
   * commit, whatever its SQLState (an error after the commit record is a PANIC, which ends the session). pgjdbc
   * throws the server's error from the end only once the server's ReadyForQuery came; a connection lost before it
   * throws the loss alone, which leaves the outcome unknown. An error that ends a session ({@code 08}, {@code 57P}),
   * should one reach here, leaves it unknown too.
   */
  static boolean refusedByServer(Throwable e) {
    java.util.ArrayDeque<Throwable> chain = new java.util.ArrayDeque<>(List.of(e));
    for (int seen = 0; !chain.isEmpty() && seen < 64; seen++) {
      Throwable t = chain.poll();
      ServerErrorMessage server = t instanceof PSQLException psql ? psql.getServerErrorMessage() : null;
      if (server != null) {
        String state = server.getSQLState();
        return state != null && !state.startsWith("08") && !state.startsWith("57P");
      }
      if (t instanceof SQLException sql && sql.getNextException() != null) {
        chain.add(sql.getNextException());
      }
      if (t.getCause() != null) {
        chain.add(t.getCause());
      }
    }
    return false;
  }

  /** Ends with a {@code CopyFail} a {@code COPY} still open after {@code e} (what that throws added to it). */
  private static void cancel(CopyIn copy, Throwable e) {
    if (copy.isActive()) {
      try {
        copy.cancelCopy();
      } catch (Throwable cancel) {
        e.addSuppressed(cancel);
      }
    }
  }

  /**
   * Copies the lines of {@code attempt} in the connection's open transaction, without committing. In idempotent
   * mode, puts each row's result in {@code results}: 1 inserted, 0 a row with its key is there, SUCCESS_NO_INFO
   * neither (a {@code BEFORE} trigger skipped it, or changed its key).
   *
   * @return the server's count of rows written
   */
  long copy(Connection c, BatchConnection connection, CopyRows<T> rows, int[] attempt,
      int @Nullable [] results) throws SQLException {
    long count = end(send(c, connection, rows, attempt, false));
    if (results == null) {
      return count;
    }
    for (int row : attempt) {
      results[row] = Statement.SUCCESS_NO_INFO; // neither inserted nor its key there: a BEFORE trigger skipped it
    }
    long inserted = 0;
    try (ResultSet rs = connection.statement().executeQuery()) {
      while (rs.next()) {
        results[rs.getInt(1)] = 1;
        inserted++;
      }
    }
    if (inserted < attempt.length) {
      try (PreparedStatement present = c.prepareStatement(presentSql); ResultSet rs = present.executeQuery()) {
        while (rs.next()) {
          int row = rs.getInt(1);
          if (results[row] != 1) {
            results[row] = 0; // a row with its key is there: from before, or from an earlier item of the batch
          }
        }
      }
    }
    return inserted;
  }

  /**
   * The line of the COPY the server blames for {@code e} (1 for the first line sent), or -1 when its error
   * names none (a deferred constraint, a foreign key, an {@code AFTER} trigger, the idempotent move), or when the
   * line it names is not the row's: an error in the bulk insert of up to 1,000 buffered rows (a row too big for a
   * page, class {@code 54}; resources, system or internal errors, classes {@code 53}, {@code 58}, {@code XX})
   * carries the line last read, not the line at fault. Read from the line of the error's context that starts with
   * exactly this COPY's {@code "COPY <relation>, line "}, the number right after it: never a pattern that a table,
   * column or value could imitate.
   */
  int refusedLine(Throwable e) {
    String state = JdbcFailures.state(e);
    if (state != null && (state.startsWith("54") || state.startsWith("53") || state.startsWith("58")
        || state.startsWith("XX"))) {
      return -1;
    }
    int depth = 0;
    for (Throwable t = e; t != null && depth < 64; t = t.getCause(), depth++) {
      if (t instanceof PSQLException psql) {
        ServerErrorMessage message = psql.getServerErrorMessage();
        String where = message == null ? null : message.getWhere();
        if (where != null) {
          // The last such line: the COPY's own context comes after those of what it ran (a trigger's dynamic
          // SQL, whose context line can hold a row's value, "COPY <relation>, line 1" included)
          String[] contexts = where.split("\n", -1);
          for (int i = contexts.length - 1; i >= 0; i--) {
            if (contexts[i].startsWith(linePrefix)) {
              return lineNumber(contexts[i], linePrefix.length());
            }
          }
        }
      }
    }
    return -1;
  }

  /** The digits at {@code from}, ended by the end of the context, a comma or a colon; else -1. */
  private static int lineNumber(String context, int from) {
    int end = from;
    while (end < context.length() && end - from < 10 && Character.isDigit(context.charAt(end))
        && context.charAt(end) < 128) {
      end++;
    }
    if (end == from || end < context.length() && context.charAt(end) != ',' && context.charAt(end) != ':') {
      return -1;
    }
    long line = Long.parseLong(context.substring(from, end));
    return line > Integer.MAX_VALUE ? -1 : (int) line;
  }

  /**
   * The name the server prints for {@code table} in an error context: its last part, a quoted one unquoted, an
   * unquoted one folded to lower case (ASCII, as PostgreSQL folds identifiers), cut to 63 bytes. A name this reads
   * wrongly only costs a halving: the context then matches no line.
   */
  static String relationName(String table) {
    StringBuilder part = new StringBuilder();
    boolean quoted = false;
    boolean wasQuoted = false;
    for (int i = 0; i < table.length(); i++) {
      char ch = table.charAt(i);
      if (quoted) {
        if (ch == '"' && i + 1 < table.length() && table.charAt(i + 1) == '"') {
          part.append('"');
          i++;
        } else if (ch == '"') {
          quoted = false;
        } else {
          part.append(ch);
        }
      } else if (ch == '"') {
        quoted = true;
        wasQuoted = true;
      } else if (ch == '.') {
        part.setLength(0);
        wasQuoted = false;
      } else if (!Character.isWhitespace(ch)) {
        part.append(ch >= 'A' && ch <= 'Z' && !wasQuoted ? (char) (ch + 32) : ch);
      }
    }
    String last = part.toString();
    byte[] utf8 = last.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    if (utf8.length <= 63) {
      return last;
    }
    int cut = 63;
    while (cut > 0 && (utf8[cut] & 0xC0) == 0x80) {
      cut--; // never in the middle of a character
    }
    return new String(utf8, 0, cut, java.nio.charset.StandardCharsets.UTF_8);
  }

  @Override
  public String toString() {
    return "table=" + table + ", columns=" + columns.stream().map(CopyColumn::name).toList()
        + (keys.isEmpty() ? "" : ", idempotentOn=" + keys);
  }
}
