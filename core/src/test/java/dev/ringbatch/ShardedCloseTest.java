package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.stats.StatsRecorder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Regression tests for closing a sharded batcher: once, with one report, told to recorders once. */
@Timeout(value = 30, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class ShardedCloseTest {
  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final int SHARDS = 4;
  private static final int ITEMS = 40;

  private final List<Batcher<?, ?>> batchers = new CopyOnWriteArrayList<>();

  @AfterEach
  void stop() {
    batchers.forEach(b -> b.close(Duration.ofSeconds(1)));
  }

  /** What a recorder saw at recordClosed: the report, and the batcher's counters at that moment. */
  record Closed(CloseReport report, BatcherStats statsThen) {}

  private Batcher<Integer, Void> startAndWrite(AtomicLong written, List<Closed> closed) {
    Batcher<Integer, Void> batcher = Batcher.sharded("s", BatcherConfig.ofDefaults(), SHARDS,
        shard -> BatchSink.noResult(items -> written.addAndGet(items.size())));
    batchers.add(batcher);
    batcher.addStatsRecorder(new StatsRecorder() {
      @Override
      public void recordClosed(CloseReport report) {
        closed.add(new Closed(report, batcher.stats()));
      }
    });
    List<CompletableFuture<Void>> futures = new ArrayList<>();
    for (int i = 0; i < ITEMS; i++) {
      futures.add(batcher.submit(i)); // round-robin: 10 per shard
    }
    futures.forEach(f -> assertThat(f).succeedsWithin(WAIT));
    return batcher;
  }

  /** Defect 12: a second close is a no-op that returns the first close's report. */
  @Test
  void closeTwice_secondCallReturnsTheFirstReport() {
    AtomicLong written = new AtomicLong();
    Batcher<Integer, Void> batcher = startAndWrite(written, new CopyOnWriteArrayList<>());

    CloseReport first = batcher.close(WAIT);
    CloseReport second = batcher.close(WAIT);

    assertThat(first.drained()).isTrue();
    assertThat(first.written()).isEqualTo(ITEMS);
    assertThat(second == first || sameFields(second, first))
        .as("the second close returns the first close's report: first %s, second %s", first, second)
        .isTrue();
    CloseReport stored = batcher.closeReport();
    assertThat(stored).isNotNull();
    assertThat(sameFields(stored, first)).as("closeReport() %s is the first report %s", stored, first).isTrue();
    assertThat(written).hasValue(ITEMS);
  }

  /** Defect 12: a recorder of the sharded batcher hears of the close once, when every shard has closed. */
  @Test
  void close_recordClosedOnceWithTheWholeBatchersReport() {
    AtomicLong written = new AtomicLong();
    List<Closed> closed = new CopyOnWriteArrayList<>();
    Batcher<Integer, Void> batcher = startAndWrite(written, closed);

    batcher.close(WAIT);
    batcher.close(WAIT);

    assertThat(closed).as("recordClosed calls").hasSize(1);
    Closed only = closed.get(0);
    assertThat(only.report().written()).as("written in the recorded report").isEqualTo(ITEMS);
    assertThat(only.report().drained()).isTrue();
    assertThat(only.statsThen().written()).as("written when recordClosed ran").isEqualTo(ITEMS);
    assertThat(only.statsThen().inFlight()).isZero();
  }

  private static boolean sameFields(CloseReport a, CloseReport b) {
    return a.drained() == b.drained() && a.abandoned() == b.abandoned() && a.written() == b.written()
        && a.failed() == b.failed() && a.elapsed().equals(b.elapsed());
  }
}
