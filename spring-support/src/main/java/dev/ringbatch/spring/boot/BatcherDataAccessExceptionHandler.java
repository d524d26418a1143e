package dev.ringbatch.spring.boot;

import dev.ringbatch.OutcomeUnknownException;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.dao.DataIntegrityViolationException;
import org.springframework.dao.DuplicateKeyException;
import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/**
 * Answers a request whose item the database refused for a constraint, as a {@link ProblemDetail}: a
 * {@link DuplicateKeyException} with {@code 409 Conflict}, another {@link DataIntegrityViolationException}
 * with {@code 422 Unprocessable Content}. The answer does not carry the database's message (it names tables,
 * constraints and values), which is logged at {@code DEBUG} with the exception. The exceptions come from
 * {@link SqlExceptionTranslatingSinkDecorator}, or from a {@code JdbcTemplate}; like
 * {@link BatcherOverloadExceptionHandler} they are found as the cause of a {@code CompletionException},
 * {@code ExecutionException} or {@code BatchWriteException} ({@code submitAndWait}); as the cause of an
 * {@code OutcomeUnknownException} (the core's verdict after a retry that followed an attempt whose outcome is
 * unknown: the stored row may be the item's own) the answer is {@code 500} "Outcome unknown", as the
 * overload mapping gives, and so is an {@code OutcomeUnknownException} itself (left to Spring MVC 7.0 or 6.2, the
 * chain of a lost database reply, which holds an {@code EOFException}, is answered with an empty {@code 200}). Any other failure is left to the application (a 500 by default); {@code 503} stays the answer to overload only. Registered by
 * {@link BatcherWebMvcAutoConfiguration} when {@code ringbatch.web.data-access-mapping.enabled=true}. Called on
 * the request's thread; stateless.
 */
@RestControllerAdvice
public class BatcherDataAccessExceptionHandler {
  private static final Log LOG = LogFactory.getLog(BatcherDataAccessExceptionHandler.class);

  @ExceptionHandler({DataIntegrityViolationException.class, OutcomeUnknownException.class})
  public ResponseEntity<ProblemDetail> constraintViolated(Exception exception) {
    if (BatcherOverloadExceptionHandler.mayBeWritten(exception)) {
      return BatcherOverloadExceptionHandler.outcomeUnknown(exception); // an earlier attempt may have stored it
    }
    boolean duplicate = BatcherOverloadExceptionHandler.inChain(exception, DuplicateKeyException.class) != null;
    // 422 by value: Spring 7 calls it UNPROCESSABLE_CONTENT, Spring 6.2 (Boot 3) UNPROCESSABLE_ENTITY.
    HttpStatus status = duplicate ? HttpStatus.CONFLICT : HttpStatus.valueOf(422);
    ProblemDetail problem = ProblemDetail.forStatusAndDetail(status, duplicate
        ? "the item conflicts with a stored one" : "the item violates a data constraint");
    problem.setTitle(duplicate ? "Duplicate key" : "Constraint violated");
    if (LOG.isDebugEnabled()) {
      LOG.debug("answered " + status.value(), exception);
    }
    return ResponseEntity.status(status).body(problem);
  }
}
