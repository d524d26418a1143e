package dev.ringbatch.examples;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * What one run of the JDBC demo must have left in its table: the ids its callers were told "written" (thread-safe to
 * mark), each with the payload {@link JdbcDemo#event} gives it. {@link #wrongRowsThenEmpty} compares the table with
 * them row by row, so that a row missing and a row nobody wrote cannot cancel out, as a count would let them.
 */
final class TableCheck {
  private final AtomicLongArray written;

  TableCheck(int rows) {
    written = new AtomicLongArray((rows + 63) / 64);
  }

  /** Row {@code id}'s caller was told it is written. */
  void written(long id) {
    written.getAndAccumulate((int) (id >>> 6), 1L << id, (a, b) -> a | b);
  }

  private boolean isWritten(long id) {
    return id >= 0 && id < 64L * written.length() && (written.get((int) (id >>> 6)) & 1L << id) != 0;
  }

  private long writtenCount() {
    long n = 0;
    for (int i = 0; i < written.length(); i++) {
      n += Long.bitCount(written.get(i));
    }
    return n;
  }

  /**
   * The rows the table has wrong: told written and missing, present and not told written, or with another payload
   * than its caller passed. Then empties the table for the next run.
   */
  long wrongRowsThenEmpty(HikariDataSource pool) throws Exception {
    long wrong = 0;
    long present = 0;
    try (Connection c = pool.getConnection(); Statement s = c.createStatement();
         ResultSet rs = s.executeQuery("SELECT id, caller, payload FROM demo_events")) {
      while (rs.next()) {
        long id = rs.getLong(1);
        if (!isWritten(id)) {
          wrong++; // a row nobody was told was written
        } else {
          present++;
          if (!JdbcDemo.event(rs.getInt(2), id, 0).payload().equals(rs.getString(3))) {
            wrong++; // not the value its caller passed
          }
        }
      }
    }
    DemoDatabase.execute(pool, "TRUNCATE demo_events");
    return wrong + writtenCount() - present; // and the rows told written that are missing
  }
}
