package dev.ringbatch.postgresql;

import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.OffsetTime;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.temporal.ChronoUnit;
import java.util.GregorianCalendar;
import java.util.TimeZone;
import org.jspecify.annotations.Nullable;

/** The date and time part of the {@link PgValues} contract: the text of each date or time type, per target type. */
final class PgTimes {
  /** PostgreSQL's range for {@code date}: 4714-11-24 BC (ISO year -4713) to 5874897-12-31. */
  private static final LocalDate MIN_DATE = LocalDate.of(-4713, 11, 24);
  private static final LocalDate MAX_DATE = LocalDate.of(5874897, 12, 31);
  /** PostgreSQL's range for {@code timestamp}: 4714-11-24 BC to 294276-12-31 23:59:59.999999. */
  private static final LocalDateTime MIN_TIMESTAMP = MIN_DATE.atStartOfDay();
  private static final LocalDateTime MAX_TIMESTAMP = LocalDateTime.of(294276, 12, 31, 23, 59, 59, 999_999_000);
  /** PostgreSQL refuses a numeric offset of 16 hours or more ("time zone displacement out of range"). */
  private static final int MAX_OFFSET_SECONDS = 15 * 3600 + 59 * 60 + 59;
  static final String TIMESTAMP_RANGE = "outside PostgreSQL's timestamp range (4714-11-24 BC to 294276-12-31)";

  private PgTimes() {}

  /** The refusal of {@code value} (a JDK type, whose text is safe to show) outside the timestamp range. */
  static IllegalArgumentException outOfRange(String column, Object whole, Object value) {
    return PgValues.refused(column, whole, TIMESTAMP_RANGE + ": " + PgValues.shown(value));
  }

  /** A {@code java.time} or {@code java.util}/{@code java.sql} date or time, or null if it is none. */
  static @Nullable String time(String column, Object whole, Object value, PgValues.Target target) {
    if (target == PgValues.Target.DATE && !(value instanceof LocalDate) && !(value instanceof java.sql.Date)
        && (value instanceof Instant || value instanceof OffsetDateTime || value instanceof ZonedDateTime
        || value instanceof LocalDateTime || value instanceof java.util.Date)) {
      throw PgValues.refused(column, whole, "a date column keeps no time of day, and this value has one ("
          + PgValues.shown(value) + "): pass a LocalDate");
    }
    if ((target == PgValues.Target.TIME || target == PgValues.Target.TIMETZ) && !(value instanceof java.sql.Time)
        && (value instanceof Instant || value instanceof OffsetDateTime || value instanceof ZonedDateTime
        || value instanceof LocalDateTime || value instanceof java.util.Date)) {
      throw PgValues.refused(column, whole, "a " + (target == PgValues.Target.TIME ? "time" : "timetz")
          + " column keeps no date, and this value has one (" + PgValues.shown(value) + "): pass a "
          + (target == PgValues.Target.TIME ? "LocalTime" : "OffsetTime"));
    }
    if (value instanceof Instant instant) {
      return instant.equals(Instant.MIN) ? "-infinity" : instant.equals(Instant.MAX) ? "infinity"
          : offsetTimestamp(column, whole, instant.atOffset(ZoneOffset.UTC), target);
    }
    if (value instanceof OffsetDateTime odt) {
      return odt.equals(OffsetDateTime.MIN) ? "-infinity" : odt.equals(OffsetDateTime.MAX) ? "infinity"
          : offsetTimestamp(column, whole, odt, target);
    }
    if (value instanceof ZonedDateTime zoned) {
      return offsetTimestamp(column, whole, zoned.toOffsetDateTime(), target); // its offset, as Java resolved it
    }
    if (value instanceof LocalDateTime ldt) {
      return ldt.equals(LocalDateTime.MIN) ? "-infinity" : ldt.equals(LocalDateTime.MAX) ? "infinity"
          : timestamp(column, whole, round(ldt));
    }
    if (value instanceof LocalDate date) {
      return date.equals(LocalDate.MIN) ? "-infinity" : date.equals(LocalDate.MAX) ? "infinity"
          : date(column, whole, date);
    }
    if (value instanceof LocalTime t) {
      return localTime(t);
    }
    if (value instanceof OffsetTime t) {
      if (Math.abs(t.getOffset().getTotalSeconds()) > MAX_OFFSET_SECONDS) {
        throw PgValues.refused(column, whole, "offset " + t.getOffset() + " is 16 hours or more, which PostgreSQL's"
            + " timetz cannot hold (an OffsetTime is no instant that another offset could express)");
      }
      return localTime(t.toLocalTime()) + offset(t.getOffset());
    }
    if (value instanceof java.sql.Time t) {
      // Its wall time in the JVM's zone, milliseconds kept (Time.toLocalTime() would drop them)
      return localTime(LocalTime.ofInstant(Instant.ofEpochMilli(t.getTime()), java.time.ZoneId.systemDefault()));
    }
    if (value instanceof java.util.Date d) {
      return legacy(column, whole, d, target);
    }
    return null;
  }

  /**
   * {@code java.util.Date} and its {@code java.sql} subclasses. Into {@code timestamptz} the exact instant, in UTC.
   * Otherwise read as pgjdbc's {@code setTimestamp}/{@code setDate} read them: the fields of a calendar in the JVM's
   * zone (Julian before 1582, years by era, the zone's offset as {@code java.util.TimeZone} has it), with that
   * offset, so a {@code timestamp} or {@code date} column stores the wall time or date the value shows.
   */
  private static String legacy(String column, Object whole, java.util.Date d, PgValues.Target target) {
    int nanos = d instanceof java.sql.Timestamp ts ? ts.getNanos()
        : (int) Math.floorMod(d.getTime(), 1000L) * 1_000_000;
    long seconds = Math.floorDiv(d.getTime(), 1000L);
    long micros = micros(nanos);
    if (micros == 1_000_000) {
      seconds++;
      micros = 0;
    }
    if (target == PgValues.Target.TIMESTAMPTZ && !(d instanceof java.sql.Date)) {
      // A java.sql.Date is a date: below, with the zone's offset, as a rows sink sends it (as pgjdbc's setDate)
      Instant instant = Instant.ofEpochSecond(seconds, micros * 1000);
      return offsetTimestamp(column, whole, instant.atOffset(ZoneOffset.UTC), target);
    }
    GregorianCalendar cal = new GregorianCalendar(TimeZone.getDefault());
    cal.setTimeInMillis(seconds * 1000);
    int era = cal.get(GregorianCalendar.ERA);
    int year = cal.get(GregorianCalendar.YEAR);
    if (year > 294276 || era == GregorianCalendar.BC && year > 4714) {
      throw outOfRange(column, whole, d);
    }
    StringBuilder out = new StringBuilder(40);
    pad(out, year, 4).append('-');
    pad(out, cal.get(GregorianCalendar.MONTH) + 1, 2).append('-');
    pad(out, cal.get(GregorianCalendar.DAY_OF_MONTH), 2);
    if (!(d instanceof java.sql.Date)) {
      out.append(' ');
      hms(cal.get(GregorianCalendar.HOUR_OF_DAY), cal.get(GregorianCalendar.MINUTE), cal.get(GregorianCalendar.SECOND),
          (int) micros, out);
    }
    // With the zone's offset, as pgjdbc sends it: a timestamptz then stores the value's own instant (a java.sql.Date,
    // midnight of its date in the JVM zone); not where the column is known to take no offset
    if (target != PgValues.Target.TIMESTAMP && target != PgValues.Target.DATE) {
      int ms = cal.get(GregorianCalendar.ZONE_OFFSET) + cal.get(GregorianCalendar.DST_OFFSET);
      out.append(d instanceof java.sql.Date ? " " : "").append(offset(ZoneOffset.ofTotalSeconds(ms / 1000)));
    }
    return era == GregorianCalendar.BC ? out.append(" BC").toString() : out.toString();
  }

  /**
   * An instant at an offset. Into {@code timestamp} its wall time without the offset (which PostgreSQL would
   * ignore); otherwise the wall time with its numeric offset, or in UTC when the offset is 16 hours or more, which
   * PostgreSQL refuses. The range is checked on what the column keeps: the wall time, or the instant.
   */
  private static String offsetTimestamp(String column, Object whole, OffsetDateTime odt, PgValues.Target target) {
    OffsetDateTime rounded;
    try {
      rounded = odt.withNano(0).plusNanos(micros(odt.getNano()) * 1000);
    } catch (java.time.DateTimeException e) {
      throw outOfRange(column, whole, odt);
    }
    if (target == PgValues.Target.TIMESTAMP) {
      return timestamp(column, whole, rounded.toLocalDateTime());
    }
    LocalDateTime utc = LocalDateTime.ofInstant(rounded.toInstant(), ZoneOffset.UTC);
    timestamp(column, whole, utc); // the instant must be in range
    if (Math.abs(rounded.getOffset().getTotalSeconds()) > MAX_OFFSET_SECONDS) {
      if (target == PgValues.Target.UNKNOWN) {
        throw PgValues.refused(column, whole, "offset " + odt.getOffset() + " is 16 hours or more, which PostgreSQL"
            + " refuses, and a rows sink cannot tell a timestamptz parameter (the same instant in UTC would do) from"
            + " a timestamp one (its wall time would): pass an Instant or a LocalDateTime (" + odt + ")");
      }
      rounded = rounded.withOffsetSameInstant(ZoneOffset.UTC);
    }
    return format(rounded.toLocalDateTime(), offset(rounded.getOffset()));
  }

  /** {@code yyyy-MM-dd HH:mm:ss.ffffff}, then {@code " BC"} for a year before 1; range checked, already rounded. */
  private static String timestamp(String column, Object whole, LocalDateTime rounded) {
    if (rounded.isBefore(MIN_TIMESTAMP) || rounded.isAfter(MAX_TIMESTAMP)) {
      throw outOfRange(column, whole, rounded);
    }
    return format(rounded, "");
  }

  /** The wall time, then {@code offset}, then {@code " BC"} for a year before 1 (PostgreSQL reads "BC-05" as AD). */
  private static String format(LocalDateTime ldt, String offset) {
    StringBuilder out = new StringBuilder(40);
    ymd(ldt.toLocalDate(), out);
    out.append(' ');
    hms(ldt.getHour(), ldt.getMinute(), ldt.getSecond(), ldt.getNano() / 1000, out);
    return bc(ldt.getYear(), out.append(offset));
  }

  private static String date(String column, Object whole, LocalDate date) {
    if (date.isBefore(MIN_DATE) || date.isAfter(MAX_DATE)) {
      throw PgValues.refused(column, whole, "outside PostgreSQL's date range (4714-11-24 BC to 5874897-12-31): "
          + date);
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
    long micros = t.toSecondOfDay() * 1_000_000L + micros(t.getNano());
    if (micros == 86_400_000_000L) {
      return "24:00:00";
    }
    LocalTime r = LocalTime.ofNanoOfDay(micros * 1000);
    StringBuilder out = new StringBuilder(16);
    hms(r.getHour(), r.getMinute(), r.getSecond(), r.getNano() / 1000, out);
    return out.toString();
  }

  private static void hms(int hour, int minute, int second, int micros, StringBuilder out) {
    pad(out, hour, 2).append(':');
    pad(out, minute, 2).append(':');
    pad(out, second, 2);
    if (micros != 0) {
      pad(out.append('.'), micros, 6);
    }
  }

  /** A numeric offset: {@code +05:30}, {@code -03:00}, {@code +00:19:32}; never a zone abbreviation. */
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

  private static LocalDateTime round(LocalDateTime ldt) {
    return ldt.getNano() % 1000 == 0 || ldt.getYear() >= 294277 ? ldt
        : ldt.withNano(0).plusNanos(micros(ldt.getNano()) * 1000);
  }

  /**
   * Nanoseconds of a second as microseconds, 0 to 1,000,000, rounded exactly as PostgreSQL rounds the fraction it
   * reads: {@code rint(strtod(".fffffffff") * 1000000)}, in doubles (so {@code .0000025} is 2, {@code .1234565} is
   * 123456, {@code .9999995} is 1000000).
   */
  static long micros(int nanos) {
    if (nanos % 1000 == 0) {
      return nanos / 1000;
    }
    StringBuilder digits = new StringBuilder(11).append("0.");
    pad(digits, nanos, 9);
    return (long) Math.rint(Double.parseDouble(digits.toString()) * 1_000_000);
  }

  static StringBuilder pad(StringBuilder out, long value, int width) {
    String digits = Long.toString(value);
    for (int i = digits.length(); i < width; i++) {
      out.append('0');
    }
    return out.append(digits);
  }
}
