package dev.ringbatch.postgresql;

import java.math.BigDecimal;
import java.sql.Time;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.OffsetTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.Arrays;
import java.util.Date;
import java.util.List;
import java.util.UUID;

/**
 * The round-trip matrix's values, one group per PostgreSQL type: each Java value with the text PostgreSQL shows for
 * what it stored (read back as {@code v::text} in a session at {@code TimeZone = UTC}), or {@link #REFUSED} when the
 * value has no exact encoding and must fail its own row. Every case of docs/sinks.md's table is here.
 */
final class ValueCases {
  private ValueCases() {}

  /** The expected text of a value that must be refused. */
  static final String REFUSED = "<refused>";

  /**
   * One value: what is sent, what must be read back, whether unnest mode refuses it (an array), and what a rows
   * sink stores instead, if it differs (it cannot know a parameter's type: an array into text is stored as its
   * literal, where the COPY sink, which reads the columns' types, refuses it).
   */
  record Case(String name, Object value, String expected, boolean array, String rowsExpected) {
    Case(String name, Object value, String expected, boolean array) {
      this(name, value, expected, array, expected);
    }

    @Override
    public String toString() {
      return name;
    }
  }

  record Group(String name, String pgType, List<Case> cases) {
    @Override
    public String toString() {
      return name;
    }
  }

  enum Colour { RED, GREEN }

  enum Labelled {
    ONE;

    @Override
    public String toString() {
      return "one";
    }
  }

  enum NullLabel {
    X;

    @Override
    public String toString() {
      return null;
    }
  }

  /** A CharSequence whose toString() returns null. */
  static final class NullSequence implements CharSequence {
    @Override
    public int length() {
      return 0;
    }

    @Override
    public char charAt(int index) {
      throw new IndexOutOfBoundsException(index);
    }

    @Override
    public CharSequence subSequence(int start, int end) {
      return this;
    }

    @Override
    public String toString() {
      return null;
    }
  }

  /** A value of a type the contract does not know, whose toString() returns null. */
  static final class NullText {
    @Override
    public String toString() {
      return null;
    }
  }

  private static Case c(String name, Object value, String expected) {
    return new Case(name, value, expected, false);
  }

  private static Case a(String name, Object value, String expected) {
    return new Case(name, value, expected, true);
  }

  /** The JVM zone's wall time 10:15:20.123 on 1970-01-01, as java.sql.Time means it. */
  private static Time timeWithMillis() {
    return new Time(Timestamp.valueOf(LocalDateTime.of(1970, 1, 1, 10, 15, 20, 123_000_000)).getTime());
  }

  static List<Group> groups() {
    ZoneId amsterdam = ZoneId.of("Europe/Amsterdam");
    LocalDateTime overlap = LocalDateTime.of(2026, 10, 25, 2, 30); // the autumn hour Amsterdam lives twice
    return List.of(
        new Group("timestamptz", "timestamptz", List.of(
            c("Instant", Instant.parse("2026-11-27T10:15:20.123456Z"), "2026-11-27 10:15:20.123456+00"),
            // PostgreSQL's own rounding of .1234565 (rint of a double): 123456, not half up
            c("Instant nanos rounded", Instant.parse("2026-11-27T10:15:20.123456500Z"),
                "2026-11-27 10:15:20.123456+00"),
            c("Instant nanos rounded up", Instant.parse("2026-11-27T10:15:20.123456501Z"),
                "2026-11-27 10:15:20.123457+00"),
            c("Instant BC", Instant.parse("-0043-03-15T12:00:00Z"), "0044-03-15 12:00:00+00 BC"),
            c("Instant year 0", Instant.parse("0000-06-01T00:00:00Z"), "0001-06-01 00:00:00+00 BC"),
            c("Instant year 10000", Instant.parse("+10000-01-01T00:00:00Z"), "10000-01-01 00:00:00+00"),
            c("Instant MIN", Instant.MIN, "-infinity"),
            c("Instant MAX", Instant.MAX, "infinity"),
            c("Instant too early", Instant.parse("-5000-01-01T00:00:00Z"), REFUSED),
            c("Date with millis", Date.from(Instant.parse("2026-11-27T10:15:20.123Z")), "2026-11-27 10:15:20.123+00"),
            c("Timestamp in DST overlap, first", Timestamp.from(Instant.parse("2026-10-25T00:30:00Z")),
                "2026-10-25 00:30:00+00"),
            c("Timestamp in DST overlap, second", Timestamp.from(Instant.parse("2026-10-25T01:30:00.000001Z")),
                "2026-10-25 01:30:00.000001+00"),
            c("OffsetDateTime +05:30", OffsetDateTime.of(2026, 11, 27, 15, 45, 20, 0, ZoneOffset.ofHoursMinutes(5, 30)),
                "2026-11-27 10:15:20+00"),
            c("OffsetDateTime seconds offset", OffsetDateTime.of(1900, 1, 1, 0, 0, 0, 0, ZoneOffset.ofHoursMinutesSeconds(0, 19, 32)),
                "1899-12-31 23:40:28+00"),
            c("OffsetDateTime MIN", OffsetDateTime.MIN, "-infinity"),
            c("OffsetDateTime MAX", OffsetDateTime.MAX, "infinity"),
            c("OffsetDateTime BC", OffsetDateTime.of(-99, 1, 1, 0, 0, 0, 0, ZoneOffset.UTC), "0100-01-01 00:00:00+00 BC"),
            c("ZonedDateTime overlap later", ZonedDateTime.of(overlap, amsterdam).withLaterOffsetAtOverlap(),
                "2026-10-25 01:30:00+00"),
            c("ZonedDateTime Kolkata", ZonedDateTime.of(2026, 11, 27, 15, 45, 20, 0, ZoneId.of("Asia/Kolkata")),
                "2026-11-27 10:15:20+00"),
            c("NULL", NullValue.NULL, null))),
        new Group("timestamp", "timestamp", List.of(
            c("LocalDateTime", LocalDateTime.of(2026, 11, 27, 10, 15, 20, 123_456_000), "2026-11-27 10:15:20.123456"),
            c("LocalDateTime BC", LocalDateTime.of(-43, 3, 15, 12, 0), "0044-03-15 12:00:00 BC"),
            c("LocalDateTime year 10000", LocalDateTime.of(10000, 1, 1, 0, 0), "10000-01-01 00:00:00"),
            c("LocalDateTime MIN", LocalDateTime.MIN, "-infinity"),
            c("LocalDateTime MAX", LocalDateTime.MAX, "infinity"),
            c("LocalDateTime too late", LocalDateTime.of(300000, 1, 1, 0, 0), REFUSED),
            c("Timestamp wall time", Timestamp.valueOf(LocalDateTime.of(2026, 11, 27, 10, 15, 20, 123_000_000)),
                "2026-11-27 10:15:20.123"))),
        new Group("date", "date", List.of(
            c("LocalDate", LocalDate.of(2026, 11, 27), "2026-11-27"),
            c("LocalDate year 0", LocalDate.of(0, 1, 1), "0001-01-01 BC"),
            c("LocalDate BC", LocalDate.of(-4712, 1, 1), "4713-01-01 BC"),
            c("LocalDate year 10000", LocalDate.of(10000, 1, 1), "10000-01-01"),
            c("LocalDate MIN", LocalDate.MIN, "-infinity"),
            c("LocalDate MAX", LocalDate.MAX, "infinity"),
            c("LocalDate too early", LocalDate.of(-5000, 1, 1), REFUSED),
            c("java.sql.Date", java.sql.Date.valueOf(LocalDate.of(2026, 11, 27)), "2026-11-27"))),
        new Group("time", "time", List.of(
            c("LocalTime", LocalTime.of(10, 15, 20, 123_456_000), "10:15:20.123456"),
            c("LocalTime MAX", LocalTime.MAX, "24:00:00"),
            c("java.sql.Time with millis", timeWithMillis(), "10:15:20.123"))),
        new Group("timetz", "timetz", List.of(
            c("OffsetTime", OffsetTime.of(10, 15, 20, 500_000_000, ZoneOffset.ofHoursMinutes(5, 30)),
                "10:15:20.5+05:30"))),
        new Group("text", "text", List.of(
            c("empty", "", ""),
            c("escapes", "tab\t nl\n cr\r bs\\ \\N \\. quote\" {b,r} NULL", "tab\t nl\n cr\r bs\\ \\N \\. quote\" {b,r} NULL"),
            c("unicode", "héllo €𝄞", "héllo €𝄞"),
            c("StringBuilder", new StringBuilder("sb\tx"), "sb\tx"),
            c("Character", 'q', "q"),
            c("char[]", new char[] {'c', 'h'}, "ch"),
            c("enum", Colour.GREEN, "GREEN"),
            c("enum with toString", Labelled.ONE, "one"),
            c("NUL", "a\u0000b", REFUSED),
            c("lone surrogate", "a\ud800b", REFUSED),
            c("toString null", new NullText(), REFUSED),
            c("enum toString null", NullLabel.X, REFUSED),
            c("CharSequence toString null", new NullSequence(), REFUSED),
            c("unknown type", new Object(), REFUSED),
            new Case("int[] into text", new int[] {1, 2}, REFUSED, true, "{\"1\",\"2\"}"),
            new Case("List into text", List.of("a"), REFUSED, true, "{\"a\"}"),
            c("NULL", NullValue.NULL, null))),
        new Group("jsonb", "jsonb", List.of(
            c("JSON as text", "{\"k\": [1, \"v\\\\\"]}", "{\"k\": [1, \"v\\\\\"]}"))),
        new Group("bytea", "bytea", List.of(
            c("bytes", new byte[] {0, 1, (byte) 0xff, '\\', '"', ','}, "\\x0001ff5c222c"),
            c("empty bytes", new byte[0], "\\x"))),
        new Group("bool", "bool", List.of(c("true", true, "true"), c("false", false, "false"))),
        new Group("numeric", "numeric", List.of(
            c("BigDecimal", new BigDecimal("12345678901234567890.000000001"), "12345678901234567890.000000001"),
            c("BigDecimal exponent", new BigDecimal("1E+3"), "1000"),
            c("BigDecimal big exponent", new BigDecimal("1E+1001"), "1" + "0".repeat(1001)),
            c("BigDecimal small", new BigDecimal("1E-7"), "0.0000001"),
            c("Long", Long.MIN_VALUE, "-9223372036854775808"))),
        new Group("float8", "float8", List.of(
            c("Double", 0.1, "0.1"), c("NaN", Double.NaN, "NaN"), c("-Infinity", Double.NEGATIVE_INFINITY, "-Infinity"),
            c("Float", 1.5f, "1.5"))),
        new Group("uuid", "uuid", List.of(
            c("UUID", UUID.fromString("3f2504e0-4f89-11d3-9a0c-0305e82c3301"), "3f2504e0-4f89-11d3-9a0c-0305e82c3301"))),
        new Group("text[]", "text[]", List.of(
            a("String[]", new String[] {"a", null, "q\"uote", "{b}", "c,d", "back\\slash", "", "NULL", "t\tn\n"},
                "{a,NULL,\"q\\\"uote\",\"{b}\",\"c,d\",\"back\\\\slash\",\"\",\"NULL\",\"t\tn\n\"}"),
            a("List", Arrays.asList("x", null, "y z"), "{x,NULL,\"y z\"}"),
            a("array with NUL", new String[] {"a\u0000"}, REFUSED))),
        new Group("int[]", "int[]", List.of(
            a("int[]", new int[] {1, -2, 3}, "{1,-2,3}"),
            a("Long[] with null", new Long[] {1L, null}, "{1,NULL}"),
            a("int[][]", new int[][] {{1, 2}, {3, 4}}, "{{1,2},{3,4}}"),
            a("empty", new int[0], "{}"))),
        new Group("timestamptz[]", "timestamptz[]", List.of(
            a("Instant[]", new Instant[] {Instant.parse("2026-11-27T10:15:20.5Z"), null, Instant.MAX},
                "{\"2026-11-27 10:15:20.5+00\",NULL,infinity}"))));
  }

  /** SQL NULL in a case list (List.of takes no null). */
  enum NullValue { NULL }
}
