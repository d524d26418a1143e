package dev.ringbatch.internal.close;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The close's graces: a pause of the whole process moves them; short waits, coarse timers included, do not. */
class PauseAwareDeadlineTest {
  private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);
  private long now = 1_000 * MS;

  private PauseAwareDeadline graceOf(long millis) {
    return new PauseAwareDeadline(now + millis * MS, () -> now);
  }

  @Test
  void shortWaitsUseTheGraceUpOnTime_evenAtWindowsTimerGranularity() {
    PauseAwareDeadline grace = graceOf(200);
    int checks = 0;
    while (!grace.passed()) {
      now += 16 * MS; // a coarse timer's park
      checks++;
    }
    assertThat(checks).isEqualTo(13); // 13 x 16 ms = 208 ms: the first check at or past 200 ms
  }

  @Test
  void aPauseOfTheProcessMovesTheDeadlineByItsLength() {
    PauseAwareDeadline grace = graceOf(200);
    now += 10 * MS;
    assertThat(grace.passed()).isFalse();
    now += 500 * MS; // a GC pause: nobody ran
    assertThat(grace.passed()).as("the pause used none of the grace").isFalse();
    for (int i = 0; i < 189; i++) { // 10 + 189 ms of running time, checked every millisecond
      now += MS;
      assertThat(grace.passed()).isFalse();
    }
    now += MS;
    assertThat(grace.passed()).isTrue();
  }

  @Test
  void pausesMoveItBySecondAtMostInAll_soAStarvedClosingThreadStillGivesUp() {
    PauseAwareDeadline grace = graceOf(200);
    long start = now;
    while (!grace.passed()) {
      now += 100 * MS; // every check after a "pause": a closing thread that hardly gets to run
    }
    assertThat(now - start).isBetween(1_200 * MS, 1_300 * MS);
  }
}
