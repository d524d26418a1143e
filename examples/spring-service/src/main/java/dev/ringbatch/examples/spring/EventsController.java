package dev.ringbatch.examples.spring;

import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherClosedException;
import dev.ringbatch.BatcherFullException;
import java.sql.SQLException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/** Stores events; answers once the event's own row is committed, without holding a request thread. */
@RestController
public class EventsController {
  private static final Log LOG = LogFactory.getLog(EventsController.class);

  private final Batcher<Event, Integer> events;

  public EventsController(Batcher<Event, Integer> events) {
    this.events = events;
  }

  // tag::endpoint[]
  @PostMapping("/events")
  public CompletableFuture<ResponseEntity<String>> store(@RequestBody Event event) {
    return events.submit(event)
        .thenApply(rows -> ResponseEntity.status(HttpStatus.CREATED).body("stored " + event.id()))
        .exceptionally(EventsController::failure);
  }
  // end::endpoint[]

  /**
   * The same on a request thread that waits (a virtual thread with {@code spring.threads.virtual.enabled}):
   * a batcher that refuses the event (full, closed) is answered 503 with {@code Retry-After} by the starter's
   * opt-in mapping ({@code ringbatch.web.overload-mapping.enabled=true}), not here.
   */
  @PostMapping("/events/sync")
  public ResponseEntity<String> storeAndWait(@RequestBody Event event) throws InterruptedException {
    events.submitAndWait(event);
    return ResponseEntity.status(HttpStatus.CREATED).body("stored " + event.id());
  }

  /**
   * The answer to a failed event. A refusal (full, closed) is 503. A database error stays in the log: its
   * message names tables, constraints and values, which are not the client's business. The client learns only
   * whether the event conflicts with a stored one (a constraint, 422) or failed otherwise (500).
   */
  private static ResponseEntity<String> failure(Throwable error) {
    Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
    if (cause instanceof BatcherFullException || cause instanceof BatcherClosedException) {
      return ResponseEntity.status(HttpStatus.SERVICE_UNAVAILABLE).body(cause.getMessage());
    }
    LOG.warn("an event was not stored", cause);
    return constraintViolated(cause)
        ? ResponseEntity.status(HttpStatusCode.valueOf(422)).body("the event conflicts with a stored event")
        : ResponseEntity.status(HttpStatus.INTERNAL_SERVER_ERROR).body("the event was not stored");
  }

  /** Whether an SQLException in the chain has an SQLState of class 23, integrity constraint violation. */
  private static boolean constraintViolated(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (t instanceof SQLException sql && sql.getSQLState() != null && sql.getSQLState().startsWith("23")) {
        return true;
      }
    }
    return false;
  }
}
