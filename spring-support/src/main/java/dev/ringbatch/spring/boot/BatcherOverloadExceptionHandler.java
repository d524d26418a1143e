package dev.ringbatch.spring.boot;

import dev.ringbatch.BatcherClosedException;
import dev.ringbatch.BatcherFullException;
import dev.ringbatch.OutcomeUnknownException;
import java.time.Duration;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/**
 * Answers a request refused by a batcher, {@link BatcherFullException} or {@link BatcherClosedException}, with
 * {@code 503 Service Unavailable}, a {@code Retry-After} header and a {@link ProblemDetail} body, instead of a
 * {@code 500} and a logged stack trace per request. Registered by {@link BatcherWebMvcAutoConfiguration} when
 * {@code ringbatch.web.overload-mapping.enabled=true}.
 *
 * <p>The exceptions are found also as the cause of a {@link CompletionException} or {@link ExecutionException}
 * ({@code submit(item).join()} or {@code .get()} in a controller). A controller returning the batcher's
 * {@code CompletableFuture} needs nothing more: Spring MVC unwraps a {@code CompletionException} from an async
 * result and matches exception handlers on causes. An advice of the application's ordered before this one (any
 * advice without {@code @Order} declared before the auto-configuration runs) with a catch-all
 * {@code @ExceptionHandler(Exception.class)} takes precedence. An item that may have been written (abandoned by a
 * close while its batch was inside the sink, or failed with an {@link OutcomeUnknownException}) is answered
 * {@code 500} with the title "Outcome unknown" and no {@code Retry-After}: a {@code 503} invites a retry, which
 * could write it twice, and left to Spring MVC's default handling such an exception may be taken for a client that
 * went away (a lost database reply carries an {@code EOFException}) and answered with an empty {@code 200}. Called
 * on the request's thread; stateless.
 */
@RestControllerAdvice
public class BatcherOverloadExceptionHandler {
  private static final Log LOG = LogFactory.getLog(BatcherOverloadExceptionHandler.class);

  private final String retryAfterSeconds;

  /** @param retryAfter sent in {@code Retry-After}, rounded up to whole seconds */
  public BatcherOverloadExceptionHandler(Duration retryAfter) {
    long seconds = retryAfter.getSeconds() + (retryAfter.getNano() > 0 ? 1 : 0);
    this.retryAfterSeconds = Long.toString(seconds);
  }

  @ExceptionHandler({BatcherFullException.class, BatcherClosedException.class, OutcomeUnknownException.class})
  public ResponseEntity<ProblemDetail> overloaded(Exception exception) {
    if (mayBeWritten(exception)) {
      return outcomeUnknown(exception);
    }
    Throwable refusal = refusal(exception);
    ProblemDetail problem = ProblemDetail.forStatusAndDetail(HttpStatus.SERVICE_UNAVAILABLE, refusal.getMessage());
    problem.setTitle(refusal instanceof BatcherFullException ? "Batcher full" : "Batcher closed");
    if (LOG.isDebugEnabled()) {
      LOG.debug("answered 503: " + refusal);
    }
    return ResponseEntity.status(HttpStatus.SERVICE_UNAVAILABLE)
        .header(HttpHeaders.RETRY_AFTER, retryAfterSeconds)
        .body(problem);
  }

  /**
   * The ringbatch exception in the cause chain of {@code exception}: Spring passes the wrapper when it matched
   * this handler on a cause.
   */
  private static Throwable refusal(Throwable exception) {
    Throwable full = inChain(exception, BatcherFullException.class);
    Throwable closed = inChain(exception, BatcherClosedException.class);
    return full != null ? full : closed != null ? closed : exception;
  }

  /** The answer to a request whose item may or may not have been written: never one that invites a retry. */
  static ResponseEntity<ProblemDetail> outcomeUnknown(Throwable exception) {
    ProblemDetail problem = ProblemDetail.forStatusAndDetail(HttpStatus.INTERNAL_SERVER_ERROR, "the item may or may"
        + " not have been written: look it up before sending it again");
    problem.setTitle("Outcome unknown");
    LOG.warn("answered 500, outcome unknown: " + exception);
    return ResponseEntity.status(HttpStatus.INTERNAL_SERVER_ERROR).body(problem);
  }

  /**
   * Whether the cause chain of {@code exception} says the item may have been written: an
   * {@link OutcomeUnknownException}, or a close that gave up on the item inside the sink. Such an item must not
   * be answered with a status that invites the client to send it again.
   */
  static boolean mayBeWritten(Throwable exception) {
    BatcherClosedException closed = inChain(exception, BatcherClosedException.class);
    return inChain(exception, OutcomeUnknownException.class) != null || (closed != null && closed.isOutcomeUnknown());
  }

  /**
   * The first exception of {@code type} in the cause chain of {@code exception} (itself included), or null:
   * an exception handler is handed the wrapper when Spring matched it on a cause.
   */
  static <X extends Throwable> @Nullable X inChain(Throwable exception, Class<X> type) {
    Throwable t = exception;
    for (int depth = 0; t != null && depth < 16; depth++, t = t.getCause()) { // bounded: causes may cycle
      if (type.isInstance(t)) {
        return type.cast(t);
      }
    }
    return null;
  }
}
