package dev.ringbatch.spring.boot;

import dev.ringbatch.Batch;
import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import java.sql.Connection;
import java.sql.PreparedStatement;
import javax.sql.DataSource;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * A Spring Boot 3.5 service as a user builds it from the docs: {@code @EnableAutoConfiguration} finds the starter
 * through its {@code AutoConfiguration.imports}, beside Boot's own web, Actuator, JDBC (H2) and metrics. Its
 * batcher {@code orders} inserts each item (one per batch) into a table with a primary key and a check; the
 * batcher {@code closing} is closed by the tests. Run by {@link Boot3WebApplicationTest} and, with the table
 * in a file, in {@link Boot3ShutdownTest}'s child JVM.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import(Boot3WebApplication.OrdersController.class)
public class Boot3WebApplication {
  static final String SCHEMA =
      "create table if not exists orders (id int primary key, qty int not null check (qty > 0))";

  @Bean
  Batcher<int[], Void> orders(BatcherFactory batchers, DataSource dataSource, JdbcTemplate jdbc) {
    jdbc.execute(SCHEMA);
    return batchers.create("orders", insert(dataSource));
  }

  /** Inserts the batch's orders, {id, qty}, in one JDBC batch; an {@code SQLException} fails the batch. */
  static BatchSink<int[], Void> insert(DataSource dataSource) {
    return (Batch<int[], Void> batch) -> {
      try (Connection connection = dataSource.getConnection();
          PreparedStatement insert = connection.prepareStatement("insert into orders (id, qty) values (?, ?)")) {
        for (int[] order : batch.items()) {
          insert.setInt(1, order[0]);
          insert.setInt(2, order[1]);
          insert.addBatch();
        }
        insert.executeBatch();
      }
      batch.completeRemaining(null);
    };
  }

  @Bean
  Batcher<Integer, Void> closing(BatcherFactory batchers) {
    return batchers.create("closing", (Batch<Integer, Void> batch) -> batch.completeRemaining(null));
  }

  @RestController
  static class OrdersController {
    private final Batcher<int[], Void> orders;
    private final Batcher<Integer, Void> closing;

    OrdersController(Batcher<int[], Void> orders, Batcher<Integer, Void> closing) {
      this.orders = orders;
      this.closing = closing;
    }

    @PostMapping("/orders/{id}/{qty}")
    String order(@PathVariable int id, @PathVariable int qty) {
      orders.submit(new int[] {id, qty}).join();
      return "stored";
    }

    @PostMapping("/closing/{n}")
    String closing(@PathVariable int n) {
      closing.submit(n).join();
      return "stored";
    }
  }
}
