package dev.ringbatch.sink;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;

/**
 * Wraps a real {@link DataSource} (a HikariCP pool on PostgreSQL) and counts what a sink sends: statements
 * executed and {@code isValid} round trips. Every call goes through to the real driver.
 */
final class CountingDataSource {
  private static final Set<String> EXECUTES = Set.of("execute", "executeUpdate", "executeBatch", "executeQuery",
      "executeLargeUpdate", "executeLargeBatch");

  final AtomicInteger executes = new AtomicInteger();
  final AtomicInteger validations = new AtomicInteger();
  private final DataSource real;

  CountingDataSource(DataSource real) {
    this.real = real;
  }

  DataSource dataSource() {
    return proxy(DataSource.class, real, (target, method, args) -> {
      Object result = call(target, method, args);
      return method.getName().equals("getConnection") ? connection((Connection) result) : result;
    });
  }

  private Connection connection(Connection c) {
    return proxy(Connection.class, c, (target, method, args) -> {
      if (method.getName().equals("isValid")) {
        validations.incrementAndGet();
      }
      Object result = call(target, method, args);
      return method.getName().equals("prepareStatement") ? statement((PreparedStatement) result) : result;
    });
  }

  private PreparedStatement statement(PreparedStatement ps) {
    return proxy(PreparedStatement.class, ps, (target, method, args) -> {
      if (EXECUTES.contains(method.getName())) {
        executes.incrementAndGet();
      }
      return call(target, method, args);
    });
  }

  private interface Call {
    Object invoke(Object target, java.lang.reflect.Method method, Object[] args) throws Throwable;
  }

  private static <T> T proxy(Class<T> type, T target, Call call) {
    InvocationHandler handler = (p, method, args) -> call.invoke(target, method, args);
    return type.cast(Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, handler));
  }

  private static Object call(Object target, java.lang.reflect.Method method, Object[] args) throws Throwable {
    try {
      return method.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }
}
