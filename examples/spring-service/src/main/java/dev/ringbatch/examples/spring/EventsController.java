package dev.ringbatch.examples.spring;

import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherClosedException;
import dev.ringbatch.BatcherFullException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/** Stores events; answers once the event's own row is committed, without holding a request thread. */
@RestController
public class EventsController {
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

  private static ResponseEntity<String> failure(Throwable error) {
    Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
    HttpStatusCode status = cause instanceof BatcherFullException || cause instanceof BatcherClosedException
        ? HttpStatus.SERVICE_UNAVAILABLE : HttpStatusCode.valueOf(422); // refused by the database
    return ResponseEntity.status(status).body(cause.getMessage());
  }
}
