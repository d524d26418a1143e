package dev.ringbatch.internal.shared;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.BatcherStats;
import dev.ringbatch.CloseReport;
import dev.ringbatch.stats.StatsRecorder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Each guarded call reaches every recorder in the order they were added, whatever an earlier one throws; a recorder
 * whose question throws counts as answering no.
 */
class GuardedStatsRecordersTest {

  /** Throws from every call it overrides. */
  private static final class Throwing implements StatsRecorder {
    @Override public boolean recordsItemWaits() {
      throw new IllegalStateException("recordsItemWaits broke");
    }

    @Override public void recordAbandoned(long count) {
      throw new IllegalStateException("recordAbandoned broke");
    }

    @Override public void recordRetry(int attempt, Throwable cause) {
      throw new IllegalStateException("recordRetry broke");
    }

    @Override public void recordClosed(CloseReport report) {
      throw new IllegalStateException("recordClosed broke");
    }
  }

  /** Writes each call it hears, prefixed with its name, into a shared log. */
  private record Logging(String name, List<String> log, boolean each) implements StatsRecorder {
    @Override public boolean recordsItemWaits() {
      return true;
    }

    @Override public boolean recordsEachItemWait() {
      if (!each) {
        throw new IllegalStateException("recordsEachItemWait broke");
      }
      return true;
    }

    @Override public void recordAbandoned(long count) {
      log.add(name + " abandoned " + count);
    }

    @Override public void recordRetry(int attempt, Throwable cause) {
      log.add(name + " retry " + attempt + " " + cause.getMessage());
    }

    @Override public void recordClosed(CloseReport report) {
      log.add(name + " closed " + report.abandoned());
    }
  }

  @Test
  void coldCalls_withAThrowingRecorderFirst_reachEveryOtherInOrder() {
    GuardedStatsRecorders recorders = new GuardedStatsRecorders("guarded");
    List<String> log = new ArrayList<>();
    recorders.add(new Throwing());
    Logging a = new Logging("a", log, true);
    recorders.add(a);
    recorders.add(new Throwing());
    recorders.add(new Logging("b", log, false));
    CloseReport report = new CloseReport(false, 7, Duration.ZERO,
        new BatcherStats(0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 8, 8));

    recorders.recordAbandoned(3);
    recorders.recordRetry(2, new IllegalStateException("down"));
    recorders.recordClosed(report);

    assertThat(log).containsExactly("a abandoned 3", "b abandoned 3", "a retry 2 down", "b retry 2 down",
        "a closed 7", "b closed 7");
    assertThat(recorders.timesItemWaits()).as("a and b ask for item waits; the throwing ones count as no").isTrue();
    assertThat(recorders.timesEachItemWait()).as("a asks for each wait").isTrue();
    assertThat(recorders.remove(a)).isTrue();
    assertThat(recorders.timesItemWaits()).isTrue();
    assertThat(recorders.timesEachItemWait()).as("b's recordsEachItemWait throws: no").isFalse();
  }
}
