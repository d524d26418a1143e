package dev.ringbatch.examples.spring;

import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.RetryPolicy;
import dev.ringbatch.micrometer.BatcherMetrics;
import dev.ringbatch.postgresql.PgCopySink;
import dev.ringbatch.postgresql.PgUnnest;
import dev.ringbatch.sink.JdbcBatchSink;
import dev.ringbatch.spring.boot.BatcherConfigCustomizer;
import dev.ringbatch.spring.boot.BatcherFactory;
import io.micrometer.core.instrument.MeterRegistry;
import java.sql.SQLTransientException;
import javax.sql.DataSource;
import org.springframework.context.annotation.Bean;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Code shown in the README, {@code docs/sinks.md}, {@code docs/metrics.md} and {@code docs/spring-boot.md}, compiled here against the
 * starter, Micrometer and Spring JDBC; {@code DocSnippetsTest} keeps each copy equal to its region. Not a
 * configuration class: the service itself uses {@link EventsApplication}.
 */
final class DocExamples {
  private static final String SQL = "INSERT INTO events (id, payload) VALUES (?, ?)";

  // tag::jdbc-bean[]
  @Bean
  Batcher<Event, Integer> events(BatcherFactory batchers, DataSource dataSource) {
    return batchers.create("events", JdbcBatchSink.of(dataSource,
        "INSERT INTO events (id, payload) VALUES (?, ?)", (ps, e) -> {
          ps.setLong(1, e.id());
          ps.setString(2, e.payload());
        }));
  }
  // end::jdbc-bean[]

  // tag::customizer[]
  @Bean
  BatcherConfigCustomizer eventsRetry() {
    return BatcherConfigCustomizer.of("events", builder -> builder.retryPolicy(RetryPolicy.builder()
        .retryOn(e -> e instanceof SQLTransientException).build()));
  }
  // end::customizer[]

  static JdbcBatchSink<Event> idempotent(DataSource pool) {
    // tag::idempotent[]
    JdbcBatchSink<Event> sink = PgUnnest.<Event>sink(pool, "INSERT INTO events (id, payload)"
            + " SELECT * FROM unnest(?::bigint[], ?::text[]) ON CONFLICT (id) DO NOTHING")
        .column("bigint", Event::id)
        .column("text", Event::payload)
        .build()
        .idempotent();
    // end::idempotent[]
    return sink;
  }

  static PgCopySink<Event> idempotentCopy(DataSource pool) {
    // tag::copy-idempotent[]
    PgCopySink<Event> sink = PgCopySink.<Event>into(pool, "events")
        .column("id", Event::id)
        .column("payload", Event::payload)
        .idempotentOn("id") // a primary key or unique constraint
        .build();
    // end::copy-idempotent[]
    return sink;
  }

  static BatchSink<Event, Integer> perItemTransaction(TransactionTemplate transactionTemplate,
      JdbcTemplate jdbcTemplate) {
    // tag::jdbc-template[]
    BatchSink<Event, Integer> sink = batch -> transactionTemplate.executeWithoutResult(tx -> {
      for (int i = 0; i < batch.size(); i++) {
        Object savepoint = tx.createSavepoint();
        try {
          batch.complete(i, jdbcTemplate.update(SQL, batch.item(i).id(), batch.item(i).payload()));
          tx.releaseSavepoint(savepoint);
        } catch (DataAccessException e) {
          tx.rollbackToSavepoint(savepoint); // this row only; the others stay in the transaction
          batch.fail(i, e);
        }
      }
    }); // if the commit throws, write throws: every item fails with it
    // end::jdbc-template[]
    return sink;
  }

  static Batcher<Event, Integer> monitored(MeterRegistry registry, BatcherConfig config,
      BatchSink<Event, Integer> sink) {
    // tag::monitor[]
    Batcher<Event, Integer> events = BatcherMetrics.monitor(registry, Batcher.of("events", config, sink));
    // end::monitor[]
    return events;
  }

  private DocExamples() {}
}
