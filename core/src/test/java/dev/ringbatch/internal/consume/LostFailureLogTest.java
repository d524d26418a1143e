package dev.ringbatch.internal.consume;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The rate limit of lost failures' log lines, on a hand-driven clock. */
class LostFailureLogTest {
  private static final Logger LOGGER = Logger.getLogger(BatchCompleter.class.getName());
  private final List<String> lines = new CopyOnWriteArrayList<>();
  private final Handler capture = new Handler() {
    @Override
    public void publish(LogRecord record) {
      lines.add(record.getMessage());
    }

    @Override
    public void flush() {}

    @Override
    public void close() {}
  };

  @BeforeEach
  void listen() {
    LOGGER.addHandler(capture);
  }

  @AfterEach
  void stop() {
    LOGGER.removeHandler(capture);
  }

  @Test
  void firstLineAtOnce_thenOnePerInterval_summingUpWhatWasLeftOut() {
    AtomicLong clock = new AtomicLong(-5); // any start, negative included
    LostFailureLog log = new LostFailureLog("audit", clock::get);
    IllegalStateException cause = new IllegalStateException("down");

    log.failed(3, 8, cause);
    for (int i = 0; i < 5; i++) {
      clock.addAndGet(LostFailureLog.INTERVAL_NANOS / 10);
      log.failed(2, 4, cause);
    }
    assertThat(lines).hasSize(1);
    clock.addAndGet(LostFailureLog.INTERVAL_NANOS);
    log.failed(1, 1, cause);
    log.handlerThrew(cause);

    assertThat(lines).hasSize(2);
    assertThat(lines.get(0)).startsWith("batcher 'audit': 3 fire-and-forget item(s) of a batch of 8 failed;");
    assertThat(lines.get(1)).startsWith("batcher 'audit': 1 fire-and-forget item(s) of a batch of 1 failed"
        + " (10 more in 5 batches since the last line);");
    clock.addAndGet(LostFailureLog.INTERVAL_NANOS);
    log.handlerThrew(cause);
    assertThat(lines.get(2)).isEqualTo("batcher 'audit': the offer failure handler threw (and 1 more times since"
        + " the last line)");
  }
}
