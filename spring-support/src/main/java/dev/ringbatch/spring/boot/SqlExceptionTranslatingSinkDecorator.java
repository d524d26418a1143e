package dev.ringbatch.spring.boot;

import static java.util.Objects.requireNonNull;

import dev.ringbatch.AsyncBatchSink;
import dev.ringbatch.Batch;
import dev.ringbatch.BatchSink;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.RetryPolicy;
import java.sql.SQLException;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.support.SQLExceptionTranslator;

/**
 * Gives the callers of a batcher the failures a {@code JdbcTemplate} user gets: every {@link SQLException} a
 * sink records for an item ({@link Batch#fail}) or throws for its batch (or fails its stage with) becomes the
 * {@link DataAccessException} the application's {@link SQLExceptionTranslator} makes of it, with the
 * {@code SQLException} as its cause: {@code DuplicateKeyException} for a duplicate key,
 * {@code DataIntegrityViolationException} for another constraint. This is the one place a caller's failure is
 * changed, on its way from the sink to the core, which completes the futures. What is not an
 * {@code SQLException} is passed unchanged: an {@code OutcomeUnknownException} stays one (whatever its cause),
 * and so do the batcher's own refusals; an {@code SQLException} the translator has no translation for stays as
 * it was.
 *
 * <p>A batch whose sink threw is retried by the core ({@link RetryPolicy}) on the translated exception: so that
 * a {@code retryOn} predicate written against {@code SQLException}s still works, {@link #customize} gives the
 * core a predicate that sees the original {@code SQLException} of a translation made here.
 *
 * <p>Registered by {@link BatcherJdbcAutoConfiguration} when Spring JDBC is on the class path; off with
 * {@code ringbatch.jdbc.exception-translation.enabled=false}. Thread-safe: the translator is called on the
 * thread that records the failure (the consumer, or an async sink's thread).
 */
public class SqlExceptionTranslatingSinkDecorator implements BatchSinkDecorator {
  private final SQLExceptionTranslator translator;
  /** The translations made here, to their originals: weak, each lives as long as a caller holds it. */
  private final Map<Throwable, SQLException> originals = Collections.synchronizedMap(new WeakHashMap<>());

  public SqlExceptionTranslatingSinkDecorator(SQLExceptionTranslator translator) {
    this.translator = requireNonNull(translator, "translator");
  }

  @Override
  public <T, R> BatchSink<T, R> decorate(String name, BatchSink<T, R> sink) {
    requireNonNull(sink, "sink");
    return batch -> {
      try {
        sink.write(new TranslatingBatch<>(batch, name));
      } catch (SQLException e) {
        throw translateSql(name, e);
      }
    };
  }

  @Override
  public <T, R> AsyncBatchSink<T, R> decorateAsync(String name, AsyncBatchSink<T, R> sink) {
    requireNonNull(sink, "sink");
    return batch -> {
      CompletionStage<?> stage;
      try {
        stage = sink.write(new TranslatingBatch<>(batch, name));
      } catch (SQLException e) {
        throw translateSql(name, e);
      }
      if (stage == null) {
        return null; // the core fails the batch as a sink bug
      }
      return stage.handle((result, error) -> {
        if (error == null) {
          return result;
        }
        Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
        Throwable translated = translate(name, cause);
        CompletionException thrown = translated == cause && error instanceof CompletionException completion
            ? completion : new CompletionException(translated);
        throw thrown;
      });
    };
  }

  /** Lets the core's retry policy see the original {@code SQLException} of a translated batch failure. */
  @Override
  public BatcherConfig customize(String name, BatcherConfig config) {
    RetryPolicy policy = config.retryPolicy();
    if (policy.maxAttempts() == 1) {
      return config;
    }
    Predicate<Throwable> retryOn = policy.retryOn();
    return BatcherConfig.from(config).retryPolicy(RetryPolicy.builder().maxAttempts(policy.maxAttempts())
        .initialBackoff(policy.initialBackoff()).maxBackoff(policy.maxBackoff()).multiplier(policy.multiplier())
        .jitter(policy.jitter()).maxElapsed(policy.maxElapsed())
        .retryOn(e -> retryOn.test(original(e)))
        .build()).build();
  }

  /** The {@code SQLException} that {@code failure} was translated from here, or {@code failure} itself. */
  Throwable original(Throwable failure) {
    SQLException original = originals.get(failure);
    return original == null ? failure : original;
  }

  /** The translation of {@code failure} if it is an {@code SQLException} the translator knows, else itself. */
  private Throwable translate(String name, Throwable failure) {
    return failure instanceof SQLException sql ? translateSql(name, sql) : failure;
  }

  /**
   * The translation of {@code sql} if the translator knows it, else {@code sql}. The translator is the
   * application's code, called here inside a sink's {@code Batch.fail}: if it throws, {@code sql} stays the
   * failure, the translator's throwable attached to it as suppressed (once per class), and the sink goes on;
   * a translator's bug never turns the rows a sink wrote into failures.
   */
  private Exception translateSql(String name, SQLException sql) {
    @Nullable DataAccessException translated;
    try {
      translated = translator.translate("ringbatch batcher '" + name + "'", null, sql);
    } catch (RuntimeException | LinkageError | AssertionError e) {
      attachOnce(sql, e);
      return sql;
    }
    if (translated == null) {
      return sql;
    }
    originals.put(translated, sql);
    return translated;
  }

  /** Adds {@code thrown} to {@code sql}'s suppressed, unless one of its class is there: bounded per row. */
  private static void attachOnce(SQLException sql, Throwable thrown) {
    synchronized (sql) {
      for (Throwable suppressed : sql.getSuppressed()) {
        if (suppressed.getClass() == thrown.getClass()) {
          return;
        }
      }
      sql.addSuppressed(thrown);
    }
  }

  /** The sink's batch, translating each failure the sink records. */
  private final class TranslatingBatch<T, R> implements Batch<T, R> {
    private final Batch<T, R> batch;
    private final String name;

    TranslatingBatch(Batch<T, R> batch, String name) {
      this.batch = batch;
      this.name = name;
    }

    @Override
    public int size() {
      return batch.size();
    }

    @Override
    public T item(int index) {
      return batch.item(index);
    }

    @Override
    public List<T> items() {
      return batch.items();
    }

    @Override
    public long weight() {
      return batch.weight();
    }

    @Override
    public void complete(int index, @Nullable R result) {
      batch.complete(index, result);
    }

    @Override
    public void fail(int index, Throwable cause) {
      batch.fail(index, translate(name, requireNonNull(cause, "cause")));
    }

    @Override
    public void completeRemaining(@Nullable R result) {
      batch.completeRemaining(result);
    }
  }
}
