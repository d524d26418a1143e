package dev.ringbatch.postgresql;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * The one value-encoding contract of ringbatch's PostgreSQL sinks: each Java value becomes the text PostgreSQL's
 * input function of the column's type reads back as that same value, or is refused with an
 * {@link IllegalArgumentException} naming the column, the Java type and the reason (the item then fails alone,
 * before anything is sent). {@code PgCopySink} sends this text in COPY's text format, the unnest sink
 * ({@link PgUnnest}) sends each column as an array of these texts, and a rows sink's binder can bind one value
 * with {@link #set}: the same value is stored the same way whichever sink or mode. The table of types is in
 * {@code docs/sinks.md}. Never a {@code toString()} of a type PostgreSQL would read differently: a type not listed
 * is refused (an enum is sent by its {@code toString()}, its label).
 */
public final class PgValues {
  /** numeric's limits: 131072 digits before the decimal point, 16383 after. */
  private static final int NUMERIC_INTEGER_DIGITS = 131_072;
  private static final int NUMERIC_SCALE = 16_383;
  private static final char[] HEX = "0123456789abcdef".toCharArray();

  private PgValues() {}

  /**
   * What a sink knows of the type a value goes to, where the text depends on it: a {@code java.util.Date} or
   * {@code Timestamp} into {@code timestamptz} is its instant, into {@code timestamp} the wall time it shows; an
   * offset date-time into {@code timestamp} is its wall time; a {@code Double} into {@code float4} must be a float;
   * a {@code date} takes no time of day. An array type's elements follow the same rules ({@link #element()}).
   * {@link #UNKNOWN} when the sink cannot know it (a rows sink's parameter).
   */
  public enum Target {
    /** Not known: a {@code Date} or {@code Timestamp} is sent as pgjdbc's {@code setTimestamp} sends it. */
    UNKNOWN,
    /** {@code timestamp} (without time zone). */
    TIMESTAMP,
    /** {@code timestamptz}. */
    TIMESTAMPTZ,
    /** {@code date}: a value with a time of day is refused (the column would drop it). */
    DATE,
    /** {@code float4}: a {@code Double} or an integer a float cannot hold exactly is refused. */
    FLOAT4,
    /** {@code float8}: an integer a double cannot hold exactly is refused. */
    FLOAT8,
    /** {@code time}: a value with a date is refused (the column would drop it). */
    TIME,
    /** {@code timetz}: a value with a date is refused (the column would drop it). */
    TIMETZ,
    /** Any other type. */
    OTHER,
    /** An array type (or a domain over one) whose elements are of another type than those above. */
    ARRAY,
    /** {@code timestamp[]}. */
    TIMESTAMP_ARRAY,
    /** {@code timestamptz[]}. */
    TIMESTAMPTZ_ARRAY,
    /** {@code date[]}. */
    DATE_ARRAY,
    /** {@code float4[]}. */
    FLOAT4_ARRAY,
    /** {@code float8[]}. */
    FLOAT8_ARRAY,
    /** {@code time[]}. */
    TIME_ARRAY,
    /** {@code timetz[]}. */
    TIMETZ_ARRAY;

    /** Whether this is an array type. */
    public boolean isArray() {
      return ordinal() >= ARRAY.ordinal();
    }

    /** The target of an array type's elements ({@link #OTHER} for {@link #ARRAY}); this target if not an array. */
    public Target element() {
      return switch (this) {
        case ARRAY -> OTHER;
        case TIMESTAMP_ARRAY -> TIMESTAMP;
        case TIMESTAMPTZ_ARRAY -> TIMESTAMPTZ;
        case DATE_ARRAY -> DATE;
        case FLOAT4_ARRAY -> FLOAT4;
        case FLOAT8_ARRAY -> FLOAT8;
        case TIME_ARRAY -> TIME;
        case TIMETZ_ARRAY -> TIMETZ;
        default -> this;
      };
    }

    /** The target of an array type whose elements are of {@code element}'s type. */
    public static Target arrayOf(Target element) {
      return switch (element) {
        case TIMESTAMP -> TIMESTAMP_ARRAY;
        case TIMESTAMPTZ -> TIMESTAMPTZ_ARRAY;
        case DATE -> DATE_ARRAY;
        case FLOAT4 -> FLOAT4_ARRAY;
        case FLOAT8 -> FLOAT8_ARRAY;
        case TIME -> TIME_ARRAY;
        case TIMETZ -> TIMETZ_ARRAY;
        default -> ARRAY;
      };
    }

    /** The target of a PostgreSQL type as a sink names it ({@code timestamptz}, {@code pg_catalog.float4[]}...). */
    public static Target of(String sqlType) {
      String t = sqlType.strip().toLowerCase(Locale.ROOT).replace("\"", "");
      if (t.startsWith("pg_catalog.")) {
        t = t.substring("pg_catalog.".length());
      }
      if (t.endsWith("[]")) {
        return arrayOf(of(t.substring(0, t.length() - 2)));
      }
      return switch (t) {
        case "timestamptz", "timestamp with time zone" -> TIMESTAMPTZ;
        case "timestamp", "timestamp without time zone" -> TIMESTAMP;
        case "date" -> DATE;
        case "float4", "real" -> FLOAT4;
        case "float8", "double precision", "float", "double" -> FLOAT8; // pgjdbc's createArrayOf reads both so
        case "time", "time without time zone" -> TIME;
        case "timetz", "time with time zone" -> TIMETZ;
        default -> OTHER;
      };
    }
  }

  /**
   * Binds {@code value} as parameter {@code index} of a rows sink's statement by this contract: its text, with no
   * type of its own (PostgreSQL reads it as the parameter's type, as COPY reads it as the column's).
   *
   * @throws IllegalArgumentException if the value has no exact encoding (see {@link #text})
   */
  public static void set(PreparedStatement ps, int index, String column, @Nullable Object value) throws SQLException {
    String text = text(column, value);
    if (text != null && isArray(value) && text.contains("NULL")) { // may hold a null element: needs array_nulls on
      java.sql.Connection c = ps.getConnection();
      PgSession.arrayNullsOn(c, c.getAutoCommit());
    }
    if (text == null) {
      ps.setNull(index, Types.OTHER);
    } else {
      ps.setObject(index, text, Types.OTHER);
    }
  }

  /**
   * The text PostgreSQL reads back as {@code value}, or null for SQL NULL.
   *
   * @param column the column's name, for the message of a refused value
   * @throws IllegalArgumentException if the value has no exact encoding: a type not in the table, text with a NUL
   *     character or a lone surrogate, a date or time outside PostgreSQL's range
   */
  public static @Nullable String text(String column, @Nullable Object value) {
    return text(column, value, Target.UNKNOWN);
  }

  /**
   * The text PostgreSQL reads back as {@code value} in a column of {@code target}'s type, or null for SQL NULL.
   *
   * @throws IllegalArgumentException if the value has no exact encoding (see {@link #text(String, Object)})
   */
  public static @Nullable String text(String column, @Nullable Object value, Target target) {
    if (value == null) {
      return null;
    }
    if (value instanceof List<?> || value.getClass().isArray() && !(value instanceof byte[])
        && !(value instanceof char[])) {
      StringBuilder out = new StringBuilder();
      array(column, value, value, out, target.element()); // UNKNOWN stays UNKNOWN (a rows sink's array parameter)
      return out.toString();
    }
    return scalar(column, value, value, target);
  }

  /** A value that is not an array: {@code whole} is what the column function returned, for messages. */
  private static String scalar(String column, Object whole, Object value, Target target) {
    if (value instanceof CharSequence text) {
      String s = string(column, whole, text);
      checkText(column, whole, s);
      return s;
    }
    if (value instanceof Boolean b) {
      return b ? "true" : "false"; // also what a text or jsonb column should hold
    }
    if (value instanceof Integer || value instanceof Long || value instanceof Short || value instanceof Byte
        || value instanceof BigInteger) {
      requireExactFloat(column, whole, (Number) value, target);
      return value.toString();
    }
    if (value instanceof UUID || value instanceof Float) {
      return value.toString(); // Float: NaN, Infinity and -Infinity as PostgreSQL spells them
    }
    if (value instanceof Double d) {
      if (target == Target.FLOAT4 && !d.isNaN() && (double) d.floatValue() != d) {
        throw refused(column, whole, "float4 cannot hold " + d + " exactly (it would store the float "
            + (double) d.floatValue() + "): pass a Float, or use a float8 column");
      }
      return d.toString(); // NaN, Infinity and -Infinity as PostgreSQL spells them
    }
    if (value instanceof BigDecimal decimal) {
      // Not checked against a float column: its digits are read by the column's type as it is now, so that after an
      // ALTER TABLE ... TYPE numeric (types are read once) it is stored exactly (PgCopyInsertPathIT)
      long integerDigits = (long) decimal.precision() - decimal.scale();
      if (decimal.signum() != 0 && integerDigits > NUMERIC_INTEGER_DIGITS || decimal.scale() > NUMERIC_SCALE) {
        throw refused(column, whole, "outside PostgreSQL's numeric (at most 131072 digits before the decimal point"
            + " and 16383 after): " + integerDigits + " before, " + Math.max(0, decimal.scale()) + " after");
      }
      // Plain digits: PostgreSQL refuses an exponent beyond +-1000 that the same number written out fits in
      return Math.abs((long) decimal.scale()) <= 140_000 ? decimal.toPlainString() : decimal.toString();
    }
    if (value instanceof Character ch) {
      return scalar(column, whole, String.valueOf(ch), target);
    }
    if (value instanceof char[] chars) {
      return scalar(column, whole, new String(chars), target);
    }
    if (value instanceof byte[] data) {
      return bytea(data);
    }
    if (value instanceof Enum<?> e) {
      // the label it gives itself (a PostgreSQL enum's label), its name by default
      return scalar(column, whole, string(column, whole, e), target);
    }
    String time;
    try {
      time = PgTimes.time(column, whole, value, target);
    } catch (java.time.DateTimeException e) { // beyond what java.time itself can convert: far outside the range
      throw PgTimes.outOfRange(column, whole, value);
    }
    if (time != null) {
      return time;
    }
    throw refused(column, whole, "no exact PostgreSQL encoding for this type; convert it in the column function"
        + " (a String for JSON or a custom type)");
  }

  /** {@code bytea} in hex: {@code \x0aff}. */
  private static String bytea(byte[] data) {
    char[] out = new char[2 + 2 * data.length];
    out[0] = '\\';
    out[1] = 'x';
    for (int i = 0; i < data.length; i++) {
      out[2 + 2 * i] = HEX[(data[i] >> 4) & 0xF];
      out[3 + 2 * i] = HEX[data[i] & 0xF];
    }
    return new String(out);
  }

  /**
   * An array literal: {@code {"a",NULL,"b \"q\""}}, each element quoted with its backslashes and quotes escaped, a
   * null element as {@code NULL}, a nested array or list as a nested literal (PostgreSQL needs them rectangular).
   */
  private static void array(String column, Object whole, Object array, StringBuilder out, Target target) {
    out.append('{');
    int n = array instanceof List<?> list ? list.size() : java.lang.reflect.Array.getLength(array);
    if (n == 0 && array != whole) {
      throw refused(column, whole, "an empty array inside an array: PostgreSQL keeps no dimensions of an empty"
          + " array (it would store {}, one-dimensional)");
    }
    for (int i = 0; i < n; i++) {
      if (i > 0) {
        out.append(',');
      }
      Object element = array instanceof List<?> list ? list.get(i) : java.lang.reflect.Array.get(array, i);
      if (element == null) {
        out.append("NULL");
      } else if (element instanceof List<?> || element.getClass().isArray() && !(element instanceof byte[])
          && !(element instanceof char[])) {
        array(column, whole, element, out, target);
      } else {
        String text = scalar(column, whole, element, target);
        out.append('"');
        for (int k = 0; k < text.length(); k++) {
          char ch = text.charAt(k);
          if (ch == '"' || ch == '\\') {
            out.append('\\');
          }
          out.append(ch);
        }
        out.append('"');
      }
    }
    out.append('}');
  }

  /** Whether {@code value} is written as an array literal (a Java array other than byte[] and char[], or a List). */
  public static boolean isArray(@Nullable Object value) {
    return value instanceof List<?> || value != null && value.getClass().isArray() && !(value instanceof byte[])
        && !(value instanceof char[]);
  }

  /** {@code value.toString()}, refused naming the column and type when it throws or returns null. */
  private static String string(String column, Object whole, Object value) {
    String s;
    try {
      s = value.toString();
    } catch (RuntimeException e) {
      IllegalArgumentException refusal = refused(column, whole, "its toString() threw " + e);
      refusal.initCause(e);
      throw refusal;
    }
    if (s == null) {
      throw refused(column, whole, "its toString() returned null");
    }
    return s;
  }

  private static void checkText(String column, Object whole, String s) {
    for (int i = 0, n = s.length(); i < n; i++) {
      char ch = s.charAt(i);
      if (ch == 0) {
        throw nul(column, whole, i);
      }
      if (Character.isSurrogate(ch)) {
        if (Character.isHighSurrogate(ch) && i + 1 < n && Character.isLowSurrogate(s.charAt(i + 1))) {
          i++;
        } else {
          throw loneSurrogate(column, whole, ch, i);
        }
      }
    }
  }

  /** The refusal of text with a NUL character at {@code index}. */
  public static IllegalArgumentException nul(String column, Object value, int index) {
    return refused(column, value, "text contains a NUL character (U+0000) at index " + index
        + ", which PostgreSQL cannot store in text");
  }

  /** The refusal of text with a lone surrogate {@code ch} at {@code index}. */
  public static IllegalArgumentException loneSurrogate(String column, Object value, char ch, int index) {
    return refused(column, value, "text contains a lone surrogate U+"
        + Integer.toHexString(ch).toUpperCase(Locale.ROOT) + " at index " + index + ", which is not valid UTF-8");
  }

  /**
   * The text of a value for a refusal's message: a JDK type's {@code toString()}; another type's is user code, which
   * may throw or run long, so only its type is named (the message names it already).
   */
  static String shown(Object value) {
    return value.getClass().getName().startsWith("java.") ? String.valueOf(value) : "a " + value.getClass().getName();
  }

  /**
   * Refuses an integer that a {@code float4} or {@code float8} column would store rounded (the server reads its text
   * as the nearest float): the same rule as for a {@code Double} into {@code float4}.
   */
  private static void requireExactFloat(String column, Object whole, Number value, Target target) {
    if (target != Target.FLOAT4 && target != Target.FLOAT8) {
      return;
    }
    boolean single = target == Target.FLOAT4;
    if (value instanceof Integer || value instanceof Short || value instanceof Byte) {
      int i = value.intValue();
      if (!single || Math.abs((long) i) <= 1 << 24) {
        return; // every int is a double, and every int up to 2^24 a float
      }
    }
    BigDecimal exact = value instanceof BigInteger b ? new BigDecimal(b) : BigDecimal.valueOf(value.longValue());
    double stored = single ? exact.floatValue() : exact.doubleValue();
    if (Double.isInfinite(stored) || new BigDecimal(stored).compareTo(exact) != 0) {
      throw refused(column, whole, (single ? "float4" : "float8") + " cannot hold " + exact.toPlainString()
          + " exactly (it would store " + (single ? Float.toString((float) stored) : Double.toString(stored))
          + "): use a numeric column, or pass the " + (single ? "Float" : "Double") + " it should store");
    }
  }

  /** {@code column 'at' (java.time.Instant): outside PostgreSQL's timestamp range ...}. */
  public static IllegalArgumentException refused(String column, Object value, String reason) {
    return new IllegalArgumentException("column '" + column + "' (" + value.getClass().getName() + "): " + reason);
  }
}
