package dev.ringbatch.postgresql;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.OffsetTime;
import java.time.ZonedDateTime;
import java.util.Arrays;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * The rows of one batch in PostgreSQL's COPY text format, UTF-8, in one growing buffer: columns separated by a
 * tab, rows ended by a newline, {@code \N} for NULL, and backslash, tab, newline and carriage return escaped.
 * Values are written as PostgreSQL reads them back: numbers, booleans ({@code t}/{@code f}), {@code byte[]} as
 * {@code bytea} hex, UUIDs, {@code java.time} values in ISO 8601 (a {@link ZonedDateTime} by its offset), anything
 * else (an enum too) by {@code toString()}. Reused batch after batch; consumer thread only.
 */
final class CopyText {
  private byte[] bytes = new byte[1 << 16];
  private int length;

  void reset() {
    length = 0;
  }

  int length() {
    return length;
  }

  byte[] bytes() {
    return bytes;
  }

  /** Rolls back to {@code mark}: drops what a row that failed to encode had written. */
  void truncate(int mark) {
    length = mark;
  }

  void tab() {
    put((byte) '\t');
  }

  void newline() {
    put((byte) '\n');
  }

  /**
   * Appends one value of {@code column}.
   *
   * @throws IllegalArgumentException if the value cannot be stored: text with a NUL character or a lone
   *     surrogate
   */
  void value(String column, @Nullable Object value) {
    if (value == null) {
      ascii("\\N");
    } else if (value instanceof CharSequence text) {
      text(column, text);
    } else if (value instanceof Boolean b) {
      put((byte) (b ? 't' : 'f'));
    } else if (value instanceof Integer || value instanceof Long || value instanceof Short
        || value instanceof Byte || value instanceof BigInteger || value instanceof BigDecimal
        || value instanceof UUID || value instanceof Instant || value instanceof OffsetDateTime
        || value instanceof LocalDateTime || value instanceof LocalDate || value instanceof LocalTime
        || value instanceof OffsetTime) {
      ascii(value.toString()); // ASCII, and nothing in it needs escaping
    } else if (value instanceof Double || value instanceof Float) {
      ascii(value.toString()); // NaN, Infinity and -Infinity are spelled as PostgreSQL spells them
    } else if (value instanceof ZonedDateTime zoned) {
      ascii(zoned.toOffsetDateTime().toString()); // PostgreSQL does not read the [Region/City] suffix
    } else if (value instanceof byte[] data) {
      hex(data);
    } else if (value instanceof char[] chars) {
      text(column, new String(chars));
    } else {
      text(column, String.valueOf(value));
    }
  }

  private void text(String column, CharSequence s) {
    int n = s.length();
    ensure(n);
    for (int i = 0; i < n; i++) {
      char ch = s.charAt(i);
      if (ch < 0x80) {
        switch (ch) {
          case '\\' -> ascii("\\\\");
          case '\t' -> ascii("\\t");
          case '\n' -> ascii("\\n");
          case '\r' -> ascii("\\r");
          case 0 -> throw new IllegalArgumentException("column '" + column + "': text contains a NUL character"
              + " (U+0000) at index " + i + ", which PostgreSQL cannot store in text");
          default -> put((byte) ch);
        }
      } else if (ch < 0x800) {
        put((byte) (0xC0 | (ch >> 6)));
        put((byte) (0x80 | (ch & 0x3F)));
      } else if (Character.isSurrogate(ch)) {
        int cp = i + 1 < n && Character.isHighSurrogate(ch) ? Character.toCodePoint(ch, s.charAt(i + 1)) : -1;
        if (cp < 0 || !Character.isLowSurrogate(s.charAt(i + 1))) {
          throw new IllegalArgumentException("column '" + column + "': text contains a lone surrogate U+"
              + Integer.toHexString(ch).toUpperCase(java.util.Locale.ROOT) + " at index " + i
              + ", which is not valid UTF-8");
        }
        i++;
        put((byte) (0xF0 | (cp >> 18)));
        put((byte) (0x80 | ((cp >> 12) & 0x3F)));
        put((byte) (0x80 | ((cp >> 6) & 0x3F)));
        put((byte) (0x80 | (cp & 0x3F)));
      } else {
        put((byte) (0xE0 | (ch >> 12)));
        put((byte) (0x80 | ((ch >> 6) & 0x3F)));
        put((byte) (0x80 | (ch & 0x3F)));
      }
    }
  }

  private static final byte[] HEX = "0123456789abcdef".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

  /** {@code bytea} in hex, its backslash escaped for the text format: {@code \\x0aff}. */
  private void hex(byte[] data) {
    ensure(3 + 2 * data.length);
    ascii("\\\\x");
    for (byte b : data) {
      bytes[length++] = HEX[(b >> 4) & 0xF];
      bytes[length++] = HEX[b & 0xF];
    }
  }

  /** Appends a decimal number: the row number of an idempotent sink's staging table. */
  void number(int value) {
    ascii(Integer.toString(value));
  }

  private void ascii(String s) {
    int n = s.length();
    ensure(n);
    for (int i = 0; i < n; i++) {
      bytes[length++] = (byte) s.charAt(i);
    }
  }

  private void put(byte b) {
    if (length == bytes.length) {
      ensure(1);
    }
    bytes[length++] = b;
  }

  private void ensure(int more) {
    long needed = (long) length + more;
    if (needed > bytes.length) {
      if (needed > Integer.MAX_VALUE - 16) {
        throw new IllegalStateException("a COPY batch over 2 GB: lower maxBatchSize or maxBatchBytes");
      }
      bytes = Arrays.copyOf(bytes, (int) Math.max(needed, Math.min(Integer.MAX_VALUE - 16L, 2L * bytes.length)));
    }
  }
}
