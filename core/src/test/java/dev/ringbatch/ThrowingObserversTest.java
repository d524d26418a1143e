package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.stats.StatsRecorder;
import java.time.Duration;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * User code that observes the batcher, all of it throwing at once: a StatsRecorder, and the logging backend
 * that would report the recorder's failure (System.Logger goes to java.util.logging here, whose handlers are
 * user code). Every future must still complete with its real outcome, and the batcher must keep working.
 */
@Timeout(30)
class ThrowingObserversTest {
  private static final Logger RINGBATCH = Logger.getLogger("dev.ringbatch");
  private final Handler throwing = new Handler() {
    @Override
    public void publish(LogRecord record) {
      throw new IllegalStateException("the log handler is broken");
    }

    @Override
    public void flush() {
      // nothing buffered
    }

    @Override
    public void close() {
      // nothing held
    }
  };

  @BeforeEach
  void breakLogging() {
    RINGBATCH.addHandler(throwing);
  }

  @AfterEach
  void repairLogging() {
    RINGBATCH.removeHandler(throwing);
  }

  @Test
  void throwingRecorderAndThrowingLogHandler_futuresStillCompleteWithTheirOutcomes() {
    Batcher<Integer, Integer> batcher = Batcher.of("observed", BatcherConfig.ofDefaults(),
        BatchSink.withResults(items -> items.stream().map(i -> i * 2).toList()));
    batcher.addStatsRecorder(new StatsRecorder() {
      @Override
      public void recordBatch(int size, long weight, long writeNanos, int failed) {
        throw new IllegalStateException("the recorder is broken");
      }
    });
    try {
      assertThat(batcher.submit(21)).succeedsWithin(Duration.ofSeconds(10)).isEqualTo(42);
      assertThat(batcher.submit(4)).succeedsWithin(Duration.ofSeconds(10)).isEqualTo(8);
      assertThat(batcher.stats().written()).isEqualTo(2);
    } finally {
      assertThat(batcher.close(Duration.ofSeconds(10)).drained()).isTrue();
    }
  }
}
