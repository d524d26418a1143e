package dev.ringbatch.postgresql;

import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * The rows of one batch in PostgreSQL's COPY text format, UTF-8, in one growing buffer: columns separated by a
 * tab, rows ended by a newline, {@code \N} for NULL, and backslash, tab, newline and carriage return escaped.
 * Each value is the text {@link PgValues} gives it, the contract every PostgreSQL sink shares. Reused batch after
 * batch; consumer thread only.
 */
final class CopyText {
  private byte[] bytes = new byte[1 << 16];
  private int length;

  /** Starts a batch; a buffer grown past 4 MB for a peak is given back once a batch uses under a quarter of it. */
  void reset() {
    if (bytes.length > 1 << 22 && length < bytes.length / 4) {
      bytes = new byte[Math.max(1 << 16, 2 * length)];
    }
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
   * Appends one value of {@code column}: {@code text}, the value's text by {@link PgValues} (null for SQL NULL),
   * escaped for COPY.
   *
   * @throws IllegalArgumentException if the text holds a NUL character or a lone surrogate
   */
  void value(String column, @Nullable String text) {
    if (text == null) {
      ascii("\\N");
    } else {
      text(column, text); // checked while it is escaped: one pass
    }
  }

  private void text(String column, String s) {
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
          case 0 -> throw PgValues.nul(column, s, i);
          default -> put((byte) ch);
        }
      } else if (ch < 0x800) {
        put((byte) (0xC0 | (ch >> 6)));
        put((byte) (0x80 | (ch & 0x3F)));
      } else if (Character.isSurrogate(ch)) {
        int cp = i + 1 < n && Character.isHighSurrogate(ch) ? Character.toCodePoint(ch, s.charAt(i + 1)) : -1;
        if (cp < 0 || !Character.isLowSurrogate(s.charAt(i + 1))) {
          throw PgValues.loneSurrogate(column, s, ch, i);
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
