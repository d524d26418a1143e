package dev.ringbatch.internal.pacing;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The self-clocked wait's rules ({@link SelfClock}): when the consumer gathers, for how many items, how the guess
 * and the deadline follow what gathers met. Deterministic: the clock is fed what batches and gathers would report.
 */
class SelfClockTest {
  private static final long MICROS = TimeUnit.MICROSECONDS.toNanos(1);

  private final SelfClock clock = new SelfClock();

  @Test
  void noCallerOrALoneCaller_neverAWait() {
    clock.completed(0, 0, 0); // offer, or submit without a wait
    assertThat(clock.callersWaited()).isFalse();
    assertThat(clock.target(0, 1024)).isZero();
    clock.completed(1, 1, 0); // a lone caller: the first item after idle is never delayed
    assertThat(clock.target(0, 1024)).isZero();
  }

  @Test
  void platformThreadCallers_neverAWait() {
    clock.completed(64, 0, 0);
    assertThat(clock.callersWaited()).isTrue();
    assertThat(clock.target(0, 1024)).isZero();
    clock.completed(64, 31, 0); // fewer than half virtual
    assertThat(clock.target(0, 1024)).isZero();
  }

  @Test
  void virtualCallers_waitForAlphaTimesTheCallers_capped_unlessHalfAreThereAlready() {
    clock.completed(100, 100, MICROS);
    assertThat(clock.target(0, 1024)).isEqualTo(50); // alpha starts at 1/2
    assertThat(clock.callersWaited()).as("asked once").isFalse();
    clock.completed(100, 100, MICROS);
    assertThat(clock.target(0, 20)).isEqualTo(20); // never past maxBatchSize
    clock.completed(100, 100, MICROS);
    assertThat(clock.target(25, 1024)).as("half the target is in the ring: take it now").isZero();
    clock.completed(100, 100, MICROS);
    assertThat(clock.target(24, 1024)).isEqualTo(50);
  }

  @Test
  void reachedTargets_raiseAlpha_additively_upToOne() {
    for (int i = 0; i < 8; i++) {
      clock.gathered(true, 10 * MICROS, 50, 50);
    }
    clock.completed(100, 100, MICROS);
    assertThat(clock.target(0, 1024)).isEqualTo(100); // 1/2 + 8/16 = 1
    for (int i = 0; i < 8; i++) {
      clock.gathered(true, 10 * MICROS, 50, 50);
    }
    clock.completed(100, 100, MICROS);
    assertThat(clock.target(0, 1024)).as("alpha stops at 1").isEqualTo(100);
  }

  @Test
  void missedTargets_halveAlpha_unlessMostOfItCame_andAWrongGuessCreepsBack() {
    clock.gathered(false, 200 * MICROS, 50, 10); // a fifth came: a wrong guess
    clock.completed(100, 100, MICROS);
    assertThat(clock.target(0, 1024)).isEqualTo(25);
    clock.gathered(false, 200 * MICROS, 50, 30); // most came: the deadline was short, the guess about right
    clock.completed(100, 100, MICROS);
    assertThat(clock.target(0, 1024)).isEqualTo(25);
    for (int i = 0; i < 10; i++) {
      clock.gathered(false, 200 * MICROS, 50, 0);
    }
    clock.completed(4, 4, MICROS);
    assertThat(clock.target(0, 1024)).as("below two items: no gather, park for the first").isEqualTo(1);
  }

  @Test
  void deadline_twiceTheMeanGather_between20MicrosAnd1Milli() {
    assertThat(clock.deadlineNanos()).isEqualTo(200 * MICROS); // starts at a mean of 100 µs
    for (int i = 0; i < 100; i++) {
      clock.gathered(true, MICROS, 10, 10);
    }
    assertThat(clock.deadlineNanos()).isEqualTo(20 * MICROS);
    for (int i = 0; i < 100; i++) {
      clock.gathered(true, 10_000 * MICROS, 10, 10);
    }
    assertThat(clock.deadlineNanos()).isEqualTo(1_000 * MICROS);
    clock.gathered(true, 10 * MICROS, 1, 1); // a wait for the first item only teaches nothing
    assertThat(clock.deadlineNanos()).isEqualTo(1_000 * MICROS);
  }

  @Test
  void aSinkSlowNextToTheCallersReturn_parksForTheFirstItemOnly() {
    // mean gather 100 µs: a sink of more than 25 µs is slow, and one under 320 µs too quick for a gather window
    for (int i = 0; i < 50; i++) {
      clock.completed(64, 64, 40 * MICROS);
    }
    assertThat(clock.target(0, 1024)).as("the callers come back while the sink writes").isEqualTo(1);
    clock.completed(64, 64, 40 * MICROS);
    assertThat(clock.target(1, 1024)).as("and whatever is there is taken at once").isZero();
  }

  @Test
  void aSinkOfAMillisecond_gathersEveryCallerJustWoken_forAShortWindow() {
    for (int i = 0; i < 50; i++) {
      clock.completed(64, 64, 2_000 * MICROS);
    }
    assertThat(clock.slowSink()).isTrue();
    assertThat(clock.target(0, 1024)).as("all 64 callers, not alpha of them").isEqualTo(64);
    assertThat(clock.deadlineNanos()).as("a thirty-second of the write, at most 200 µs")
        .isBetween(60 * MICROS, 63 * MICROS);
    assertThat(clock.deadlineNanos()).as("the next deadline is the usual one again").isEqualTo(200 * MICROS);
    clock.completed(64, 64, 2_000 * MICROS);
    assertThat(clock.target(40, 1024)).as("the woken callers join the 40 already back: one batch, not two cohorts")
        .isEqualTo(104);
    clock.completed(64, 64, 2_000 * MICROS);
    assertThat(clock.target(40, 50)).as("never past maxBatchSize").isEqualTo(50);
    clock.completed(64, 0, 2_000 * MICROS);
    assertThat(clock.target(0, 1024)).as("platform-thread callers: no gather").isZero();
    for (int i = 0; i < 50; i++) {
      clock.completed(64, 64, 20_000 * MICROS);
    }
    assertThat(clock.target(0, 1024)).isEqualTo(64);
    assertThat(clock.deadlineNanos()).as("never past 200 µs").isEqualTo(200 * MICROS);
  }

  /** Review of the window: a woken caller already back was counted in the backlog and again among the woken. */
  @Test
  void aSlowSinksWindow_countsCallersAlreadyBackOnce() {
    AtomicLong cursor = new AtomicLong(-1);
    clock.watch(cursor::get);
    for (int i = 0; i < 50; i++) {
      clock.completed(4, 4, 10_000 * MICROS);
    }
    clock.wakingFrom(); // the ring is empty: lastTaken = cursor = -1
    cursor.addAndGet(2); // two of the four callers are back before the consumer asks
    assertThat(clock.target(2, 256)).as("four in all, not 2 + 4").isEqualTo(4);
    clock.deadlineNanos();

    clock.completed(4, 4, 10_000 * MICROS);
    clock.wakingFrom();
    cursor.addAndGet(4); // all four are back
    assertThat(clock.target(4, 256)).as("the target is there already: no wait").isZero();
  }

  /** Review of the window: producers that do not wait fill the ring; a few woken callers must not idle the sink. */
  @Test
  void aSlowSinksWindow_isNotOpenedForAFewCallersWhenTheRingHoldsMore() {
    AtomicLong cursor = new AtomicLong(254);
    clock.watch(cursor::get);
    for (int i = 0; i < 50; i++) {
      clock.completed(2, 2, 2_000 * MICROS);
    }
    clock.wakingFrom();
    assertThat(clock.target(255, 256)).as("255 fire-and-forget items and 2 woken callers: write at once").isZero();
    clock.completed(64, 64, 2_000 * MICROS);
    clock.wakingFrom();
    assertThat(clock.target(300, 256)).as("a full batch is there").isZero();
  }

  /**
   * Review of the window: its gathers, reached at once or timed out, fed the mean gather time; pulled towards 0 it
   * made every later sink look slow next to the callers, and the quick sink's gather never came back.
   */
  @Test
  void aSlowSinksWindow_teachesTheQuickGatherNothing() {
    for (int i = 0; i < 50; i++) {
      clock.completed(64, 64, 2_000 * MICROS);
    }
    for (int i = 0; i < 50; i++) {
      clock.completed(64, 64, 2_000 * MICROS);
      assertThat(clock.target(0, 256)).isEqualTo(64);
      clock.deadlineNanos();
      clock.gathered(true, 200, 64, 64); // reached at once
    }
    for (int i = 0; i < 300; i++) {
      clock.completed(8, 8, 2 * MICROS); // the sink turns quick
    }
    assertThat(clock.quickSink()).as("the mean gather kept its 100 µs").isTrue();
    clock.completed(8, 8, 2 * MICROS);
    assertThat(clock.target(0, 256)).as("alpha x 8 callers").isEqualTo(4);
  }

  @Test
  void aLingeringBatch_forgetsTheCallers() {
    clock.completed(10, 10, MICROS);
    clock.forget();
    assertThat(clock.callersWaited()).isFalse();
    assertThat(clock.target(0, 1024)).isZero();
  }

  @Test
  void thePauseAfterASmallRun_isSkippedAfterPlatformThreadCallers_orCallersOfASlowSink() {
    clock.completed(64, 0, MICROS);
    assertThat(clock.skipsPause()).isTrue();
    clock.completed(64, 32, MICROS);
    assertThat(clock.skipsPause()).as("half virtual, a quick sink: they keep the pause").isFalse();
    assertThat(clock.quickSink()).isTrue();
    clock.completed(0, 0, MICROS);
    assertThat(clock.skipsPause()).isFalse();
    for (int i = 0; i < 50; i++) {
      clock.completed(64, 64, 40 * MICROS); // mean gather 100 µs: a sink of more than 25 µs is slow
    }
    assertThat(clock.quickSink()).isFalse();
    assertThat(clock.skipsPause()).as("virtual callers of a slow sink").isTrue();
  }
}
