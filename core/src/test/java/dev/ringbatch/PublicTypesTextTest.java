package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** What public types print. */
class PublicTypesTextTest {

  /**
   * {@link Batch#items()} is a list, and prints as one: a sink that logs it sees the items, as the list a
   * {@code BatchSink.noResult} writer gets prints them ("[a, b]").
   */
  @Test
  void batchItems_printsItsItems_asEveryListDoes() throws Exception {
    AtomicReference<String> printed = new AtomicReference<>();
    Batcher<String, Void> batcher = Batcher.of("printed", BatcherConfig.ofDefaults(), (Batch<String, Void> batch) -> {
      printed.set(batch.items().toString());
      batch.completeRemaining(null);
    });
    try {
      batcher.submit("a").get(10, TimeUnit.SECONDS);
    } finally {
      batcher.close(Duration.ofSeconds(5));
    }
    assertThat(printed.get()).isEqualTo("[a]");
  }

  /** {@link BatcherStats#toString()} prints its mean as every other number, whatever the default locale. */
  @Test
  void statsText_isTheSameInEveryLocale() {
    BatcherStats stats = new BatcherStats(3, 0, 0, 0, 0, 3, 0, 0, 2, 3, 1, 2, 8, 8);
    Locale before = Locale.getDefault(Locale.Category.FORMAT);
    try {
      Locale.setDefault(Locale.Category.FORMAT, Locale.GERMANY);
      assertThat(stats.toString()).contains("meanBatchSize=1.5,");
    } finally {
      Locale.setDefault(Locale.Category.FORMAT, before);
    }
  }
}
