package dev.ringbatch.examples.spring;

import dev.ringbatch.Batcher;
import java.util.concurrent.CompletableFuture;
import org.springframework.http.HttpStatus;
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
        .thenApply(rows -> ResponseEntity.status(HttpStatus.CREATED).body("stored " + event.id()));
  }
  // end::endpoint[]

  /**
   * The same on a request thread that waits (a virtual thread with {@code spring.threads.virtual.enabled}).
   * Failures are answered by the starter's opt-in mappings, here as for {@link #store}: a batcher that refuses the
   * event (full, closed) 503 with {@code Retry-After} ({@code ringbatch.web.overload-mapping.enabled}), a
   * duplicate id 409 and another constraint 422 ({@code ringbatch.web.data-access-mapping.enabled}), with a
   * problem detail that leaves the database's message (tables, constraints, values) out; anything else 500.
   */
  @PostMapping("/events/sync")
  public ResponseEntity<String> storeAndWait(@RequestBody Event event) throws InterruptedException {
    events.submitAndWait(event);
    return ResponseEntity.status(HttpStatus.CREATED).body("stored " + event.id());
  }
}
