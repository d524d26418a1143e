package dev.ringbatch.examples.spring;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.ringbatch.Batcher;
import dev.ringbatch.postgresql.PgCopySink;
import dev.ringbatch.spring.boot.BatcherFactory;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;

/**
 * A REST service that stores posted events in PostgreSQL through a ringbatch {@link PgCopySink}: each request
 * gets its own result, the database sees one {@code COPY} per batch. PostgreSQL 18 starts in-process.
 *
 * <p>Run: {@code mvn -q -B package -DskipTests -pl examples/spring-service -am && java -jar
 * examples/spring-service/target/ringbatch-example-spring-service-0.1.0-SNAPSHOT.jar}, then
 * {@code curl -X POST localhost:8080/events -H 'Content-Type: application/json' -d '{"id":1,"payload":"hi"}'}
 * and {@code curl -u ops:demo-only-password localhost:8080/actuator/prometheus | grep ringbatch} (the actuator is
 * behind the OPS role, see {@link SecurityConfiguration}; {@code OPS_PASSWORD} replaces the demo's password).
 */
@SpringBootApplication
public class EventsApplication {

  public static void main(String[] args) {
    SpringApplication.run(EventsApplication.class, args);
  }

  /**
   * The database, in-process, stopped by Spring as a bean: the pool depends on it, so it is destroyed after the
   * pool, and the pool after the batcher has drained. The library's own JVM shutdown hook is off: it would stop
   * the server at SIGTERM in parallel with Spring's drain, and the rows in flight would fail
   * ({@code ShutdownUnderLoadIT}). {@code events.postgres.data-directory} keeps the data in a directory across
   * runs; unset, a fresh temporary one is used and removed.
   */
  @Bean(destroyMethod = "close")
  EmbeddedPostgres embeddedPostgres(@Value("${events.postgres.data-directory:}") String dataDirectory)
      throws IOException {
    EmbeddedPostgres.Builder builder = EmbeddedPostgres.builder()
        .setRegisterShutdownHook(false)
        .setServerConfig("fsync", "on").setServerConfig("synchronous_commit", "on");
    if (!dataDirectory.isEmpty()) {
      builder.setDataDirectory(dataDirectory).setCleanDataDirectory(false);
    }
    return builder.start();
  }

  @Bean(destroyMethod = "close")
  HikariDataSource dataSource(EmbeddedPostgres postgres) throws SQLException {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(postgres.getJdbcUrl("postgres", "postgres"));
    config.setUsername("postgres");
    config.setMaximumPoolSize(8);
    HikariDataSource dataSource = new HikariDataSource(config);
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE IF NOT EXISTS events (id BIGINT PRIMARY KEY, payload TEXT NOT NULL)");
    }
    return dataSource;
  }

  // tag::batcher-bean[]
  @Bean
  Batcher<Event, Integer> events(BatcherFactory batchers, DataSource dataSource) {
    // One COPY per batch; a duplicate id fails that request alone (DuplicateKeyException, answered 409).
    return batchers.create("events", PgCopySink.<Event>into(dataSource, "events")
        .column("id", Event::id)
        .column("payload", Event::payload)
        .build());
  }
  // end::batcher-bean[]
}
