package dev.ringbatch.examples;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.function.LongFunction;

/**
 * The machine's bound for K callers who each wait for their row's commit, measured in the same run as the
 * batchers: the cost of one transaction of n rows by one method ({@code COPY} or a multi-row {@code INSERT}, then
 * {@code COMMIT}, on one connection, fsync included) fitted as {@code F + c·n} by least squares over the median
 * time of each size, each point weighted by its relative error (so that the small sizes, not the spread of the
 * largest, decide F). By Little's law K callers can do at most K rows per cycle, and a cycle costs at least one
 * such transaction of all K rows: {@code K / (F + c·K)} rows/s. No batcher, however it forms batches, beats the
 * better method's bound on this connection.
 */
record CopyFit(String method, double fixedNanos, double perRowNanos, int transactions) {
  private static final int[] SIZES = {1, 16, 64, 256, 1024, 4096};

  /** Times transactions of each size on {@code pool}'s table; rows get ids from 2^40 up (the caller truncates). */
  static <T> CopyFit measure(String method, HikariDataSource pool, QueueBatcher.Writer<T> writer,
      LongFunction<T> row)
      throws SQLException {
    List<double[]> points = new ArrayList<>();
    long nextId = 1L << 40; // past any row a demo inserts
    int transactions = 0;
    try (Connection connection = pool.getConnection()) {
      connection.setAutoCommit(false);
      for (int size : SIZES) {
        int reps = size <= 64 ? 41 : size <= 1024 ? 15 : 7;
        double[] nanos = new double[reps];
        for (int r = -2; r < reps; r++) { // two warm-up transactions per size
          List<T> rows = new ArrayList<>(size);
          for (int i = 0; i < size; i++) {
            rows.add(row.apply(nextId++));
          }
          long t0 = System.nanoTime();
          writer.write(connection, rows);
          connection.commit();
          long took = System.nanoTime() - t0;
          transactions++;
          if (r >= 0) {
            nanos[r] = took;
          }
        }
        Arrays.sort(nanos);
        points.add(new double[] {size, nanos[reps / 2]});
      }
    }
    return fit(method, points, transactions);
  }

  /**
   * Least squares over (rows, nanos) points, each weighted by 1/nanos² (relative errors); the fixed cost is never
   * taken below zero.
   */
  static CopyFit fit(String method, List<double[]> points, int transactions) {
    double n = 0;
    double sx = 0;
    double sy = 0;
    double sxx = 0;
    double sxy = 0;
    for (double[] p : points) {
      double w = 1 / (p[1] * p[1]);
      n += w;
      sx += w * p[0];
      sy += w * p[1];
      sxx += w * p[0] * p[0];
      sxy += w * p[0] * p[1];
    }
    double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    double intercept = (sy - slope * sx) / n;
    return new CopyFit(method, Math.max(0, intercept), Math.max(0, slope), transactions);
  }

  /** At most this many rows/s for {@code callers} callers who each wait for their commit. */
  double boundRowsPerSecond(int callers) {
    return callers / ((fixedNanos + perRowNanos * callers) / 1e9);
  }

  String describe(int callers) {
    return String.format(Locale.ROOT, "bound: %d callers / (%.2f ms per transaction + %.2f µs per row x %d rows),"
            + " fitted over %d %s transactions of 1 to %d rows in this run", callers, fixedNanos / 1e6,
        perRowNanos / 1e3, callers, transactions, method, SIZES[SIZES.length - 1]);
  }
}
