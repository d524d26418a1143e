package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.AbstractList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A list sink wrapped as a plain {@link BatchSink} (what the Spring starter's decorators do to every sink) keeps the
 * list sink's rule: once the writer returned, results that cannot be read fail every item, never retried.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class DecoratedListSinkTest {

  @Test
  void unreadableResultsOfADecoratedListSink_failEveryItem_andTheWriterIsNotCalledAgain() throws Exception {
    AtomicInteger writes = new AtomicInteger();
    BatchSink<String, Integer> listSink = BatchSink.withResults(items -> {
      writes.incrementAndGet(); // the items are written here
      return new AbstractList<Integer>() {
        @Override
        public Integer get(int index) {
          throw new IllegalStateException("a result list that cannot be read");
        }

        @Override
        public int size() {
          return items.size();
        }
      };
    });
    BatchSink<String, Integer> decorated = batch -> listSink.write(batch); // as a BatchSinkDecorator wraps it
    BatcherConfig config = BatcherConfig.builder().retryPolicy(RetryPolicy.builder().maxAttempts(3)
        .initialBackoff(Duration.ofMillis(1)).build()).build();
    try (Batcher<String, Integer> batcher = Batcher.of("decorated", config, decorated)) {
      assertThat(batcher.submit("a")).failsWithin(Duration.ofSeconds(10))
          .withThrowableOfType(ExecutionException.class).havingCause()
          .withMessageContaining("could not be read").withMessageContaining("may have written");
      assertThat(writes).as("a retry would write the item again").hasValue(1);
      assertThat(batcher.stats().failed()).isEqualTo(1);
    }
  }

  @Test
  void resultsOfTheWrongSizeFromADecoratedListSink_failEveryItem_andTheWriterIsNotCalledAgain() throws Exception {
    AtomicInteger writes = new AtomicInteger();
    BatchSink<String, Integer> listSink = BatchSink.withResults(items -> {
      writes.incrementAndGet();
      return List.of();
    });
    BatchSink<String, Integer> decorated = batch -> listSink.write(batch);
    BatcherConfig config = BatcherConfig.builder().retryPolicy(RetryPolicy.builder().maxAttempts(3)
        .initialBackoff(Duration.ofMillis(1)).build()).build();
    try (Batcher<String, Integer> batcher = Batcher.of("decorated-size", config, decorated)) {
      assertThat(batcher.submit("a")).failsWithin(Duration.ofSeconds(10))
          .withThrowableOfType(ExecutionException.class).havingCause().withMessageContaining("0 results");
      assertThat(writes).hasValue(1);
    }
  }
}
