package dev.ringbatch.sink;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import javax.sql.DataSource;

/**
 * A scripted JDBC driver for both sink modes: each statement execution (rows mode: executeBatch; arrays mode:
 * execute) is shown to a {@link Script} with its number and the rows it carries; the script throws to refuse it,
 * else the rows join the connection's transaction (committed at once in autocommit). A script that throws an
 * SQLException of class 08 kills the connection: everything after on it throws 08003.
 */
final class ScriptedJdbcDriver {
  interface Script {
    void run(int execution, List<Long> rows) throws SQLException;
  }

  final List<Long> committed = new ArrayList<>();
  final List<String> log = new ArrayList<>();
  private final Script script;
  private int executions;
  int connections;

  ScriptedJdbcDriver(Script script) {
    this.script = script;
  }

  DataSource dataSource() {
    return proxy(DataSource.class, (p, m, a) -> switch (m.getName()) {
      case "getConnection" -> new Conn().proxy();
      default -> throw new UnsupportedOperationException(m.getName());
    });
  }

  StatementBinder<Long> rowBinder() {
    return (ps, item) -> ps.setLong(1, item);
  }

  ArrayBinder<Long> arrayBinder() {
    return capacity -> new ArrayBinder.Rows<>() {
      private final List<Long> rows = new ArrayList<>();

      @Override
      public void add(Long item) {
        rows.add(item);
      }

      @Override
      public void bind(Connection c, PreparedStatement ps, boolean autoCommit) throws SQLException {
        ps.setObject(1, List.copyOf(rows));
      }
    };
  }

  private final class Conn {
    private final List<Long> transaction = new ArrayList<>();
    private boolean autoCommit = true;
    private boolean dead;
    private final int id = ++connections;

    private void alive() throws SQLException {
      if (dead) {
        throw new SQLException("This connection has been closed.", "08003");
      }
    }

    Connection proxy() {
      return ScriptedJdbcDriver.proxy(Connection.class, (p, m, a) -> switch (m.getName()) {
        case "getAutoCommit" -> {
          alive();
          yield autoCommit;
        }
        case "setAutoCommit" -> {
          alive();
          autoCommit = (Boolean) a[0];
          yield null;
        }
        case "prepareStatement" -> {
          alive();
          yield statement();
        }
        case "commit" -> {
          alive();
          committed.addAll(transaction);
          log.add("c" + id + " commit " + transaction);
          transaction.clear();
          yield null;
        }
        case "rollback" -> {
          alive();
          transaction.clear();
          yield null;
        }
        case "isValid" -> !dead;
        case "isClosed" -> dead;
        case "close", "abort" -> {
          dead = true;
          transaction.clear();
          yield null;
        }
        default -> throw new UnsupportedOperationException(m.getName());
      });
    }

    private PreparedStatement statement() {
      List<Long> batch = new ArrayList<>();
      Object[] param = new Object[1];
      return ScriptedJdbcDriver.proxy(PreparedStatement.class, (p, m, a) -> switch (m.getName()) {
        case "setLong", "setObject" -> {
          param[0] = a[1];
          yield null;
        }
        case "addBatch" -> {
          batch.add((Long) param[0]);
          yield null;
        }
        case "clearBatch" -> {
          batch.clear();
          yield null;
        }
        case "executeBatch" -> {
          List<Long> rows = List.copyOf(batch);
          run(rows);
          int[] counts = new int[rows.size()];
          Arrays.fill(counts, 1);
          yield counts;
        }
        case "execute" -> {
          @SuppressWarnings("unchecked")
          List<Long> rows = (List<Long>) param[0];
          run(rows);
          yield false;
        }
        case "getUpdateCount" -> -1;
        case "getMoreResults" -> false;
        case "clearParameters", "close", "setQueryTimeout" -> null;
        default -> throw new UnsupportedOperationException(m.getName());
      });
    }

    private void run(List<Long> rows) throws SQLException {
      alive();
      int n = ++executions;
      log.add(n + ":c" + id + ":" + rows);
      try {
        script.run(n, rows);
      } catch (SQLException e) {
        log.add(n + " -> " + e.getSQLState());
        if (e.getSQLState() != null && e.getSQLState().startsWith("08")) {
          dead = true;
          transaction.clear();
        }
        throw e;
      }
      if (autoCommit) {
        committed.addAll(rows);
      } else {
        transaction.addAll(rows);
      }
    }
  }

  static SQLException lock() {
    return new SQLException("canceling statement due to lock timeout", "55P03");
  }

  static SQLException check() {
    return new SQLException("new row violates check constraint", "23514");
  }

  static SQLException missingTable() {
    return new SQLException("relation \"t\" does not exist", "42P01");
  }

  static SQLException rls() {
    return new SQLException("new row violates row-level security policy for table \"t\"", "42501");
  }

  static SQLException lost() {
    return new SQLException("An I/O error occurred while sending to the backend.", "08006");
  }

  private static <P> P proxy(Class<P> type, InvocationHandler handler) {
    return type.cast(Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, handler));
  }
}
