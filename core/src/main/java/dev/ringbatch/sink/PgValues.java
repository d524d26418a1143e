package dev.ringbatch.sink;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.OffsetTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * The one value-encoding contract of ringbatch's PostgreSQL sinks: each Java value becomes the text PostgreSQL's
 * input function of the column's type reads back as that same value, or is refused with an
 * {@link IllegalArgumentException} naming the column, the Java type and the reason (the item then fails alone,
 * before anything is sent). {@code PgCopySink} sends this text in COPY's text format, an unnest
 * {@link JdbcBatchSink} sends each column as an array of these texts, and a rows sink's binder can bind one value
 * with {@link #set}: the same value is stored the same way whichever sink or mode. The table of types is in
 * {@code docs/sinks.md}. Never a {@code toString()} of a type PostgreSQL would read differently: a type not listed
 * is refused (an enum is sent by its {@code toString()}, its label).
 */
public final class PgValues {
  /** PostgreSQL's range for {@code date}: 4714-11-24 BC (ISO year -4713) to 5874897-12-31. */
  private static final LocalDate MIN_DATE = LocalDate.of(-4713, 11, 24);
  private static final LocalDate MAX_DATE = LocalDate.of(5874897, 12, 31);
  /** PostgreSQL's range for {@code timestamp}: 4714-11-24 BC to 294276-12-31 23:59:59.999999. */
  private static final LocalDateTime MIN_TIMESTAMP = MIN_DATE.atStartOfDay();
  private static final LocalDateTime MAX_TIMESTAMP = LocalDateTime.of(294276, 12, 31, 23, 59, 59, 999_999_000);
  private static final char[] HEX = "0123456789abcdef".toCharArray();

  private PgValues() {}

  /**
   * Binds {@code value} as parameter {@code index} of a rows sink's statement by this contract: its text, with no
   * type of its own (PostgreSQL reads it as the parameter's type, as COPY reads it as the column's).
   *
   * @throws IllegalArgumentException if the value has no exact encoding (see {@link #text})
   */
  public static void set(PreparedStatement ps, int index, String column, @Nullable Object value) throws SQLException {
    String text = text(column, value);
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
    if (value == null) {
      return null;
    }
    if (value instanceof List<?> || value.getClass().isArray() && !(value instanceof byte[])
        && !(value instanceof char[])) {
      StringBuilder out = new StringBuilder();
      array(column, value, value, out);
      return out.toString();
    }
    return scalar(column, value, value);
  }

  /** A value that is not an array: {@code whole} is what the column function returned, for messages. */
  private static String scalar(String column, Object whole, Object value) {
    if (value instanceof CharSequence text) {
      String s = text.toString();
      if (s == null) {
        throw refused(column, whole, "its toString() returned null");
      }
      checkText(column, whole, s);
      return s;
    }
    if (value instanceof Boolean b) {
      return b ? "true" : "false"; // also what a text or jsonb column should hold
    }
    if (value instanceof Integer || value instanceof Long || value instanceof Short || value instanceof Byte
        || value instanceof BigInteger || value instanceof UUID || value instanceof Double
        || value instanceof Float) {
      return value.toString(); // Double and Float: NaN, Infinity and -Infinity as PostgreSQL spells them
    }
    if (value instanceof BigDecimal decimal) {
      // Plain digits: PostgreSQL refuses an exponent beyond +-1000 that the same number written out fits in
      return Math.abs((long) decimal.scale()) <= 140_000 ? decimal.toPlainString() : decimal.toString();
    }
    if (value instanceof Character ch) {
      return scalar(column, whole, String.valueOf(ch));
    }
    if (value instanceof char[] chars) {
      return scalar(column, whole, new String(chars));
    }
    if (value instanceof byte[] data) {
      return bytea(data);
    }
    if (value instanceof Enum<?> e) {
      String label = e.toString(); // the label it gives itself (a PostgreSQL enum's label), its name by default
      if (label == null) {
        throw refused(column, whole, "its toString() returned null");
      }
      return scalar(column, whole, label);
    }
    String time;
    try {
      time = time(column, whole, value);
    } catch (java.time.DateTimeException e) { // beyond what java.time itself can convert: far outside the range
      throw refused(column, whole, "outside PostgreSQL's timestamp range (4714-11-24 BC to 294276-12-31)");
    }
    if (time != null) {
      return time;
    }
    throw refused(column, whole, "no exact PostgreSQL encoding for this type; convert it in the column function"
        + " (a String for JSON or a custom type)");
  }

  /** A {@code java.time} or {@code java.util}/{@code java.sql} date or time, or null if it is none. */
  private static @Nullable String time(String column, Object whole, Object value) {
    if (value instanceof Instant instant) {
      return instant.equals(Instant.MIN) ? "-infinity" : instant.equals(Instant.MAX) ? "infinity"
          : timestamp(column, whole, LocalDateTime.ofInstant(round(column, whole, instant), ZoneOffset.UTC)) + "+00";
    }
    if (value instanceof OffsetDateTime odt) {
      return odt.equals(OffsetDateTime.MIN) ? "-infinity" : odt.equals(OffsetDateTime.MAX) ? "infinity"
          : offsetTimestamp(column, whole, odt);
    }
    if (value instanceof ZonedDateTime zoned) {
      return offsetTimestamp(column, whole, zoned.toOffsetDateTime()); // its offset, as Java resolved it
    }
    if (value instanceof LocalDateTime ldt) {
      return ldt.equals(LocalDateTime.MIN) ? "-infinity" : ldt.equals(LocalDateTime.MAX) ? "infinity"
          : timestamp(column, whole, ldt);
    }
    if (value instanceof LocalDate date) {
      return date.equals(LocalDate.MIN) ? "-infinity" : date.equals(LocalDate.MAX) ? "infinity"
          : date(column, whole, date);
    }
    if (value instanceof LocalTime t) {
      return localTime(t);
    }
    if (value instanceof OffsetTime t) {
      return localTime(t.toLocalTime()) + offset(t.getOffset());
    }
    if (value instanceof java.sql.Date d) {
      return date(column, whole, d.toLocalDate()); // the calendar date in the JVM's zone, as java.sql.Date means it
    }
    if (value instanceof java.sql.Time t) {
      // Its wall time in the JVM's zone, milliseconds kept (Time.toLocalTime() would drop them)
      return localTime(LocalTime.ofInstant(Instant.ofEpochMilli(t.getTime()), ZoneId.systemDefault()));
    }
    if (value instanceof java.util.Date d) { // java.util.Date and java.sql.Timestamp: an instant
      Instant instant = d instanceof java.sql.Timestamp ts ? ts.toInstant() : Instant.ofEpochMilli(d.getTime());
      // The JVM zone's wall time with that instant's numeric offset: the exact instant into timestamptz, the wall
      // time a Timestamp shows into timestamp (as pgjdbc's setTimestamp), and no zone abbreviation
      return offsetTimestamp(column, whole, round(column, whole, instant).atZone(ZoneId.systemDefault())
          .toOffsetDateTime());
    }
    return null;
  }

  private static String offsetTimestamp(String column, Object whole, OffsetDateTime odt) {
    Instant instant = round(column, whole, odt.toInstant());
    LocalDateTime utc = LocalDateTime.ofInstant(instant, ZoneOffset.UTC);
    timestamp(column, whole, utc); // the instant must be in range
    return timestamp(column, whole, LocalDateTime.ofInstant(instant, odt.getOffset())) + offset(odt.getOffset());
  }

  /** {@code yyyy-MM-dd HH:mm:ss.ffffff}, then {@code " BC"} for a year before 1, rounded to microseconds. */
  private static String timestamp(String column, Object whole, LocalDateTime ldt) {
    LocalDateTime rounded = roundMicros(ldt);
    if (rounded.isBefore(MIN_TIMESTAMP) || rounded.isAfter(MAX_TIMESTAMP)) {
      throw refused(column, whole, "outside PostgreSQL's timestamp range (4714-11-24 BC to 294276-12-31)");
    }
    StringBuilder out = new StringBuilder(32);
    ymd(rounded.toLocalDate(), out);
    out.append(' ');
    hms(rounded.toLocalTime(), out);
    return bc(rounded.getYear(), out);
  }

  private static String date(String column, Object whole, LocalDate date) {
    if (date.isBefore(MIN_DATE) || date.isAfter(MAX_DATE)) {
      throw refused(column, whole, "outside PostgreSQL's date range (4714-11-24 BC to 5874897-12-31)");
    }
    StringBuilder out = new StringBuilder(16);
    ymd(date, out);
    return bc(date.getYear(), out);
  }

  /** ISO year y is year 1 - y BC: PostgreSQL has no year 0 and reads no sign. */
  private static void ymd(LocalDate date, StringBuilder out) {
    int year = date.getYear();
    pad(out, year > 0 ? year : 1 - year, 4).append('-');
    pad(out, date.getMonthValue(), 2).append('-');
    pad(out, date.getDayOfMonth(), 2);
  }

  private static String bc(int year, StringBuilder out) {
    return year > 0 ? out.toString() : out.append(" BC").toString();
  }

  /** {@code HH:mm:ss.ffffff}; a time rounded up past the last microsecond is {@code 24:00:00}, as PostgreSQL allows. */
  private static String localTime(LocalTime t) {
    long micros = (t.toNanoOfDay() + 500) / 1000;
    if (micros == 86_400_000_000L) {
      return "24:00:00";
    }
    StringBuilder out = new StringBuilder(16);
    hms(LocalTime.ofNanoOfDay(micros * 1000), out);
    return out.toString();
  }

  private static void hms(LocalTime t, StringBuilder out) {
    pad(out, t.getHour(), 2).append(':');
    pad(out, t.getMinute(), 2).append(':');
    pad(out, t.getSecond(), 2);
    int micros = t.getNano() / 1000;
    if (micros != 0) {
      pad(out.append('.'), micros, 6);
    }
  }

  /** A numeric offset: {@code +05:30}, {@code -03}, {@code +00:19:32}; never a zone abbreviation. */
  private static String offset(ZoneOffset offset) {
    int total = offset.getTotalSeconds();
    StringBuilder out = new StringBuilder(9).append(total < 0 ? '-' : '+');
    int abs = Math.abs(total);
    pad(out, abs / 3600, 2).append(':');
    pad(out, abs / 60 % 60, 2);
    if (abs % 60 != 0) {
      pad(out.append(':'), abs % 60, 2);
    }
    return out.toString();
  }

  /** Rounds to the nearest microsecond, half up, as PostgreSQL rounds the digits it reads. */
  private static Instant round(String column, Object whole, Instant instant) {
    try {
      return instant.plusNanos(500).truncatedTo(ChronoUnit.MICROS);
    } catch (java.time.DateTimeException e) {
      throw refused(column, whole, "outside PostgreSQL's timestamp range (4714-11-24 BC to 294276-12-31)");
    }
  }

  private static LocalDateTime roundMicros(LocalDateTime ldt) {
    return ldt.getNano() % 1000 == 0 || ldt.getYear() >= 294277 ? ldt
        : ldt.plusNanos(500).truncatedTo(ChronoUnit.MICROS);
  }

  private static StringBuilder pad(StringBuilder out, long value, int width) {
    String digits = Long.toString(value);
    for (int i = digits.length(); i < width; i++) {
      out.append('0');
    }
    return out.append(digits);
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
  private static void array(String column, Object whole, Object array, StringBuilder out) {
    out.append('{');
    int n = array instanceof List<?> list ? list.size() : java.lang.reflect.Array.getLength(array);
    for (int i = 0; i < n; i++) {
      if (i > 0) {
        out.append(',');
      }
      Object element = array instanceof List<?> list ? list.get(i) : java.lang.reflect.Array.get(array, i);
      if (element == null) {
        out.append("NULL");
      } else if (element instanceof List<?> || element.getClass().isArray() && !(element instanceof byte[])
          && !(element instanceof char[])) {
        array(column, whole, element, out);
      } else {
        String text = scalar(column, whole, element);
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

  /** {@code column 'at' (java.time.Instant): outside PostgreSQL's timestamp range ...}. */
  public static IllegalArgumentException refused(String column, Object value, String reason) {
    return new IllegalArgumentException("column '" + column + "' (" + value.getClass().getName() + "): " + reason);
  }
}
