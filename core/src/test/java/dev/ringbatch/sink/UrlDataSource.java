package dev.ringbatch.sink;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Logger;
import javax.sql.DataSource;

/** A {@link DataSource} over {@link DriverManager} for tests; counts the connections it opened. */
final class UrlDataSource implements DataSource {
  private final String url;
  final AtomicInteger opened = new AtomicInteger();
  /** Every connection handed out, to check that none is kept. */
  final java.util.List<Connection> handedOut = new java.util.concurrent.CopyOnWriteArrayList<>();

  UrlDataSource(String url) {
    this.url = url;
  }

  @Override
  public Connection getConnection() throws SQLException {
    opened.incrementAndGet();
    Connection c = DriverManager.getConnection(url);
    handedOut.add(c);
    return c;
  }

  @Override
  public Connection getConnection(String username, String password) throws SQLException {
    opened.incrementAndGet();
    return DriverManager.getConnection(url, username, password);
  }

  @Override
  public PrintWriter getLogWriter() {
    return null;
  }

  @Override
  public void setLogWriter(PrintWriter out) {
    throw new UnsupportedOperationException("not needed in tests");
  }

  @Override
  public void setLoginTimeout(int seconds) {
    throw new UnsupportedOperationException("not needed in tests");
  }

  @Override
  public int getLoginTimeout() {
    return 0;
  }

  @Override
  public Logger getParentLogger() throws SQLFeatureNotSupportedException {
    throw new SQLFeatureNotSupportedException("no parent logger");
  }

  @Override
  public <T> T unwrap(Class<T> iface) throws SQLException {
    throw new SQLException("not a wrapper");
  }

  @Override
  public boolean isWrapperFor(Class<?> iface) {
    return false;
  }
}
