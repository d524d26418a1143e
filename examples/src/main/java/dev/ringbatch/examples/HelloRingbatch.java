package dev.ringbatch.examples;

// tag::readme[]
import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

public class HelloRingbatch {
  public static void main(String[] args) throws Exception {
    // The sink writes a whole batch in one call (think: one JDBC batch) and returns a result per item.
    BatchSink<String, Integer> sink = BatchSink.withResults(lines -> {
      List<Integer> lengths = new ArrayList<>(lines.size());
      for (String line : lines) {
        lengths.add(line.length());
      }
      return lengths;
    });
    try (Batcher<String, Integer> batcher = Batcher.of("lines", BatcherConfig.ofDefaults(), sink)) {
      int length = batcher.submitAndWait("hello, ringbatch");     // blocks for this item's result: 16
      CompletableFuture<Integer> later = batcher.submit("async"); // or take a future: 5
      boolean accepted = batcher.offer("fire and forget");        // or no result at all
      System.out.println(length + " " + later.join() + " " + accepted);
    } // close() writes what is still queued and stops the consumer thread
  }
}
// end::readme[]
