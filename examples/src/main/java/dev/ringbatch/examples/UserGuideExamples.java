package dev.ringbatch.examples;

import dev.ringbatch.Batch;
import dev.ringbatch.BatchLimits;
import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherClosedException;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.BatcherFullException;
import dev.ringbatch.BatcherStats;
import dev.ringbatch.CloseReport;
import dev.ringbatch.OverflowPolicy;
import dev.ringbatch.RejectionReason;
import dev.ringbatch.RetryPolicy;
import dev.ringbatch.WaitMode;
import dev.ringbatch.stats.StatsRecorder;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * The code shown in {@code docs/user-guide.md}. Each {@code tag::name[]} region is copied into the guide;
 * {@code DocSnippetsTest} fails the build if a copy drifts from its region here, so every snippet in the
 * docs compiles. {@link #main} runs them all.
 */
public final class UserGuideExamples {

  private UserGuideExamples() {}

  /** A row to insert; stands for any item type. */
  public record Order(long id, String customer) {}

  public static void main(String[] args) throws Exception {
    createAndSubmit();
    perItemResults();
    byteLimit();
    lingerAndFlush();
    retries();
    asyncSink();
    overflow();
    statsAndClose();
    System.out.println("all user guide examples ran");
  }

  static void createAndSubmit() throws Exception {
    BatchSink<Order, Void> sink = BatchSink.noResult(orders -> System.out.println("writing " + orders.size()));
    // tag::create[]
    BatcherConfig config = BatcherConfig.builder()
        .ringSize(4096)                                  // power of two: the bound on queued items
        .maxBatchSize(500)                               // a batch ends at 500 items...
        .overflowPolicy(OverflowPolicy.BLOCK)            // ...a full ring makes producers wait...
        .submitTimeout(Duration.ofMillis(200))           // ...up to 200 ms, then refuses the item
        .waitMode(WaitMode.BLOCKING)                     // the consumer parks when idle (default)
        .build();
    try (Batcher<Order, Void> orders = Batcher.of("orders", config, sink)) {
      CompletableFuture<Void> async = orders.submit(new Order(1, "ada")); // asynchronous view
      orders.submitAndWait(new Order(2, "bob"));                          // blocking view
      boolean accepted = orders.offer(new Order(3, "cy"));                // fire and forget
      // end::create[]
      async.join();
      System.out.println("offer accepted: " + accepted);
    }
  }

  static void perItemResults() throws Exception {
    // tag::results[]
    BatchSink<Order, Long> sink = (Batch<Order, Long> batch) -> {
      for (int i = 0; i < batch.size(); i++) {
        Order order = batch.item(i);
        if (order.customer().isEmpty()) {
          batch.fail(i, new IllegalArgumentException("order " + order.id() + " has no customer"));
        } else {
          batch.complete(i, order.id() * 10);            // this item's result
        }
      }
      // throwing here instead would fail every item of the batch with that exception
    };
    // end::results[]
    try (Batcher<Order, Long> batcher = Batcher.of("results", BatcherConfig.ofDefaults(), sink)) {
      System.out.println("result: " + batcher.submitAndWait(new Order(4, "di")));
      batcher.submit(new Order(5, "")).exceptionally(e -> {
        System.out.println("failed alone: " + e.getMessage());
        return null;
      }).join();
    }
    // tag::with-results[]
    BatchSink<String, Integer> lengths = BatchSink.withResults(lines -> {
      List<Integer> results = new ArrayList<>();
      for (String line : lines) {
        results.add(line.length());                      // one result per item, in order
      }
      return results;
    });
    // end::with-results[]
    try (Batcher<String, Integer> batcher = Batcher.of("lengths", BatcherConfig.ofDefaults(), lengths)) {
      System.out.println("length: " + batcher.submitAndWait("hello"));
    }
  }

  static void byteLimit() throws Exception {
    BatchSink<String, Void> sink = BatchSink.noResult(lines -> { });
    // tag::bytes[]
    BatcherConfig config = BatcherConfig.builder()
        .maxBatchBytes(128 * 1024)                       // at most 128 KiB per batch...
        .build();
    Batcher<String, Void> lines = Batcher.of("lines", config,
        line -> line.getBytes(StandardCharsets.UTF_8).length, // ...as this weigher counts it
        sink);
    // end::bytes[]
    lines.submitAndWait("weighed");
    lines.close();
  }

  static void lingerAndFlush() {
    BatchSink<String, Void> sink = BatchSink.noResult(lines -> { });
    // tag::linger[]
    Batcher<String, Void> batcher = Batcher.of("metrics", BatcherConfig.builder()
        .linger(Duration.ofMillis(5))                    // fixed: a small batch waits up to 5 ms for company
        .build(), sink);
    batcher.offer("cpu=0.42");
    batcher.flush().join();                              // written now: flush cuts the linger short
    // end::linger[]
    // tag::set-limits[]
    BatchLimits limits = batcher.limits();
    batcher.setLimits(limits.withMaxBatchSize(100).withLinger(Duration.ZERO)); // applies from the next item
    // end::set-limits[]
    batcher.close();
  }

  static void retries() throws Exception {
    // tag::retries[]
    BatcherConfig config = BatcherConfig.builder()
        .retryPolicy(RetryPolicy.builder()
            .maxAttempts(5)                                  // attempts in all, the first included
            .initialBackoff(Duration.ofMillis(50))           // doubling (multiplier 2), ±20% jitter...
            .maxBackoff(Duration.ofSeconds(2))               // ...capped at 2 s between attempts
            .maxElapsed(Duration.ofSeconds(30))              // no retry starts later than 30 s after the first failure
            .retryOn(e -> e instanceof SQLException)         // default: any Exception, never an Error
            .build())
        .build();
    // end::retries[]
    AtomicInteger attempts = new AtomicInteger();
    BatchSink<Order, Void> flaky = BatchSink.noResult(orders -> {
      if (attempts.incrementAndGet() == 1) {
        throw new SQLException("connection lost");
      }
    });
    try (Batcher<Order, Void> batcher = Batcher.of("retried", config, flaky)) {
      batcher.submitAndWait(new Order(7, "ed"));
      System.out.println("written after " + attempts.get() + " attempts");
    }
  }

  /** Stands for a remote bulk API with an asynchronous client. */
  interface BulkApi {
    CompletionStage<Void> sendAsync(List<Order> orders);
  }

  static void asyncSink() throws Exception {
    BulkApi bulkApi = orders -> CompletableFuture.runAsync(() -> System.out.println("sent " + orders.size()));
    // tag::async[]
    Batcher<Order, Void> orders = Batcher.ofAsync("orders", BatcherConfig.builder()
        .maxBatchSize(256).maxInFlightBatches(4).build(),
        batch -> bulkApi.sendAsync(batch.items())     // a CompletionStage; the Batch stays valid until it completes
            .thenRun(() -> batch.completeRemaining(null))); // record every item's outcome: all written
    // end::async[]
    orders.submit(new Order(8, "fay")).join();
    orders.close();
  }

  static void overflow() {
    BatchSink<String, Void> sink = BatchSink.noResult(lines -> { });
    Batcher<String, Void> batcher = Batcher.of("events", BatcherConfig.builder()
        .overflowPolicy(OverflowPolicy.DROP).build(), sink);
    // tag::overflow[]
    batcher.submit("event").whenComplete((ignored, error) -> {
      if (error instanceof BatcherFullException full) {
        // "Batcher 'events' is full (capacity 4096); item dropped": shed load, answer 503, ...
        System.out.println(full.getMessage() + " reason=" + full.reason());
      } else if (error instanceof BatcherClosedException closed) {
        System.out.println(closed.getMessage());
      }
    });
    // end::overflow[]
    batcher.flush().join();
    batcher.close();
  }

  static void statsAndClose() throws Exception {
    BatchSink<String, Void> sink = BatchSink.noResult(lines -> { });
    Batcher<String, Void> batcher = Batcher.of("audit", BatcherConfig.ofDefaults(), sink);
    // tag::stats[]
    LongAdder refused = new LongAdder();
    batcher.addStatsRecorder(new StatsRecorder() {
      @Override
      public void recordBatch(int size, long weight, long writeNanos, int failed) {
        // e.g. feed a histogram of batch sizes and a timer of write times
      }

      @Override
      public void recordRejected(RejectionReason reason) {
        refused.increment();
      }
    });
    batcher.submitAndWait("login alice");
    BatcherStats stats = batcher.stats();
    System.out.printf("written=%d rejected=%d meanBatch=%.1f free=%d%n",
        stats.written(), stats.rejected(), stats.meanBatchSize(), stats.remainingCapacity());
    // end::stats[]
    // tag::close[]
    CloseReport report = batcher.close(Duration.ofSeconds(5));
    if (!report.drained()) {
      System.err.println(report.abandoned() + " items abandoned; their futures failed");
    }
    // end::close[]
    System.out.println(report);
  }
}
