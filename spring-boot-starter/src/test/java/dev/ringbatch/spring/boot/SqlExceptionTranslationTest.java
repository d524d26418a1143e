package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ringbatch.AsyncBatchSink;
import dev.ringbatch.Batch;
import dev.ringbatch.BatchWriteException;
import dev.ringbatch.Batcher;
import dev.ringbatch.OutcomeUnknownException;
import dev.ringbatch.RetryPolicy;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.dao.DataIntegrityViolationException;
import org.springframework.dao.DuplicateKeyException;
import org.springframework.http.ProblemDetail;
import org.springframework.jdbc.support.SQLExceptionTranslator;
import org.springframework.web.method.annotation.ExceptionHandlerMethodResolver;

/**
 * With Spring JDBC on the class path, a sink's SQLExceptions reach the callers as Spring's DataAccessExceptions,
 * the SQLException as the cause; what is not an SQLException is left alone.
 */
class SqlExceptionTranslationTest {
  private static final SQLException DUPLICATE = new SQLException("duplicate key value", "23505");
  private static final SQLException FOREIGN_KEY = new SQLException("violates foreign key", "23503");

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(BatcherJdbcAutoConfiguration.class, BatcherAutoConfiguration.class));

  @Test
  void rowFailedWithSqlException_callerGetsDuplicateKeyException_withTheSqlExceptionAsCause() {
    runner.run(context -> {
      Batcher<Integer, Void> batcher = context.getBean(BatcherFactory.class).create("rows",
          (Batch<Integer, Void> batch) -> batch.fail(0, DUPLICATE));

      assertThat(failure(batcher.submit(1))).isInstanceOf(DuplicateKeyException.class).hasCause(DUPLICATE);
      assertThatThrownBy(() -> batcher.submitAndWait(2)).isInstanceOf(BatchWriteException.class)
          .cause().isInstanceOf(DuplicateKeyException.class).hasCause(DUPLICATE);
    });
  }

  @Test
  void batchThrowsSqlException_everyCallerGetsDataIntegrityViolation() {
    runner.run(context -> {
      Batcher<Integer, Void> batcher = context.getBean(BatcherFactory.class).create("batch",
          (Batch<Integer, Void> batch) -> {
            throw FOREIGN_KEY;
          });

      assertThat(failure(batcher.submit(1))).isExactlyInstanceOf(DataIntegrityViolationException.class)
          .hasCause(FOREIGN_KEY);
    });
  }

  @Test
  void asyncStageFailsWithSqlException_callerGetsDuplicateKeyException() {
    runner.run(context -> {
      Batcher<Integer, Void> batcher = context.getBean(BatcherFactory.class).createAsync("async",
          (AsyncBatchSink<Integer, Void>) batch -> CompletableFuture.failedFuture(DUPLICATE));

      assertThat(failure(batcher.submit(1))).isInstanceOf(DuplicateKeyException.class).hasCause(DUPLICATE);
    });
  }

  @Test
  void outcomeUnknown_withSqlExceptionCause_staysOutcomeUnknown() {
    OutcomeUnknownException unknown = new OutcomeUnknownException("the reply to COMMIT was lost", DUPLICATE);
    runner.run(context -> {
      Batcher<Integer, Void> batcher = context.getBean(BatcherFactory.class).create("unknown",
          (Batch<Integer, Void> batch) -> batch.fail(0, unknown));

      assertThat(failure(batcher.submit(1))).isSameAs(unknown);
    });
  }

  @Test
  void retryOnWrittenForSqlExceptions_stillSeesTheSqlException_andRetries() {
    AtomicInteger attempts = new AtomicInteger();
    runner.withBean(BatcherConfigCustomizer.class, () -> BatcherConfigCustomizer.of("retried",
            b -> b.retryPolicy(RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ofMillis(1))
                .retryOn(e -> e instanceof SQLTransientConnectionException).build())))
        .run(context -> {
          Batcher<Integer, Void> batcher = context.getBean(BatcherFactory.class).create("retried",
              (Batch<Integer, Void> batch) -> {
                if (attempts.incrementAndGet() == 1) {
                  throw new SQLTransientConnectionException("connection reset", "08006");
                }
                batch.completeRemaining(null);
              });

          assertThat(batcher.submit(1)).succeedsWithin(Duration.ofSeconds(10));
          assertThat(attempts).hasValue(2);
        });
  }

  @Test
  void translationOff_callerGetsTheSqlException() {
    runner.withPropertyValues("ringbatch.jdbc.exception-translation.enabled=false").run(context -> {
      Batcher<Integer, Void> batcher = context.getBean(BatcherFactory.class).create("raw",
          (Batch<Integer, Void> batch) -> batch.fail(0, DUPLICATE));

      assertThat(failure(batcher.submit(1))).isSameAs(DUPLICATE);
    });
  }

  @Test
  void translatorThrows_onRowFailure_rowFailsWithTheSqlException_andTheOtherRowsAreWritten() {
    SQLException duplicate = new SQLException("duplicate key value", "23505");
    IllegalStateException broken = new IllegalStateException("translator bug");
    runner.withBean(SQLExceptionTranslator.class, () -> (task, sql, e) -> {
      throw broken;
    }).withBean(BatcherConfigCustomizer.class, () -> BatcherConfigCustomizer.of("salvaged",
        b -> b.maxBatchSize(2).linger(Duration.ofSeconds(30)))) // one batch of both rows
        .run(context -> {
      Batcher<Integer, String> batcher = context.getBean(BatcherFactory.class).create("salvaged",
          (Batch<Integer, String> batch) -> {
            batch.fail(0, duplicate); // refused rows first, as PgCopySink reports a COPY's salvage
            batch.completeRemaining("written");
          });
      CompletableFuture<String> refused = batcher.submit(1);
      CompletableFuture<String> written = batcher.submit(2);

      assertThat(failure(refused)).isSameAs(duplicate);
      assertThat(duplicate.getSuppressed()).containsExactly(broken);
      assertThat(written).succeedsWithin(Duration.ofSeconds(10)).isEqualTo("written");
    });
  }

  @Test
  void translatorThrows_onBatchFailure_callersGetTheSqlException_withTheTranslatorsFailureSuppressed() {
    SQLException lost = new SQLException("connection lost", "08006");
    IllegalStateException broken = new IllegalStateException("translator bug");
    runner.withBean(SQLExceptionTranslator.class, () -> (task, sql, e) -> {
      throw broken;
    }).run(context -> {
      Batcher<Integer, Void> batcher = context.getBean(BatcherFactory.class).create("thrown",
          (Batch<Integer, Void> batch) -> {
            throw lost;
          });

      assertThat(failure(batcher.submit(1))).isSameAs(lost);
      assertThat(lost.getSuppressed()).containsExactly(broken);
    });
  }

  @Test
  void duplicateKeyAfterAnAttemptWhoseOutcomeIsUnknown_isNotAnsweredAsAConflict() {
    AtomicInteger attempts = new AtomicInteger();
    runner.withBean(BatcherConfigCustomizer.class, () -> BatcherConfigCustomizer.of("replayed",
            b -> b.retryPolicy(RetryPolicy.builder().maxAttempts(2).initialBackoff(Duration.ofMillis(1)).build())))
        .run(context -> {
          Batcher<Integer, Void> batcher = context.getBean(BatcherFactory.class).create("replayed",
              (Batch<Integer, Void> batch) -> {
                if (attempts.incrementAndGet() == 1) { // the first attempt may have stored the row
                  throw new OutcomeUnknownException("the reply to COMMIT was lost", null, true);
                }
                batch.fail(0, DUPLICATE); // and the retry meets a row of that key: perhaps its own
              });

          Throwable failure = failure(batcher.submit(1));
          assertThat(failure).isInstanceOf(OutcomeUnknownException.class)
              .hasCauseInstanceOf(DuplicateKeyException.class);
          // Spring MVC matches handlers on causes: the data-access mapping is the one it picks, and says "unknown".
          assertThat(new ExceptionHandlerMethodResolver(BatcherDataAccessExceptionHandler.class)
              .resolveMethodByThrowable(failure)).isNotNull();
          var answer = new BatcherDataAccessExceptionHandler().constraintViolated((Exception) failure);
          assertThat(answer.getStatusCode().value()).isEqualTo(500);
          assertThat(answer.getBody()).isNotNull().extracting(ProblemDetail::getTitle).isEqualTo("Outcome unknown");
          assertThat(new BatcherDataAccessExceptionHandler().constraintViolated(
              new DuplicateKeyException("duplicate", DUPLICATE)).getStatusCode().value()).isEqualTo(409);
        });
  }

  private static Throwable failure(CompletableFuture<?> future) throws InterruptedException {
    try {
      future.get(10, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      return e.getCause();
    } catch (java.util.concurrent.TimeoutException e) {
      throw new AssertionError("the future did not complete in 10 s", e);
    }
    throw new AssertionError("the future succeeded");
  }
}
