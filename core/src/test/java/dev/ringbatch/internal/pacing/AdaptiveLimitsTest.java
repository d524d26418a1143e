package dev.ringbatch.internal.pacing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.Adaptive;
import dev.ringbatch.BatchLimits;
import dev.ringbatch.internal.consume.PendingBatch;
import dev.ringbatch.internal.ring.SubmissionSlot;
import java.time.Duration;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The adaptive limits' controller against the {@link ClosedLoop} model: the lingers it finds and keeps, its safety
 * rules (never past a cap, never holding a lone caller's item) and latency mode. The search of smaller caps:
 * {@link AdaptiveCapSearchTest}.
 */
class AdaptiveLimitsTest {
  private static final long MICROS = ClosedLoop.MICROS;
  private static final BatchLimits CAPS = ClosedLoop.CAPS;

  @Test
  void aSinkWhoseFixedCostDominatesGetsTheLingerThatGathersTheOtherCohort() {
    // F = 2 ms, 10 callers, 95 % back within 40 µs: 0 µs carries 2.5 items/ms, 20 µs 4.4, 40 µs 4.9, 80 µs 4.8
    ClosedLoop loop = new ClosedLoop(Adaptive.throughput(), 10, 2_000 * MICROS, 500, 40 * MICROS);
    loop.run(20_000);
    assertThat(loop.controller.settledLinger()).isEqualTo(Duration.ofNanos(40 * MICROS));
    assertThat(loop.maxLingerSeen).isLessThanOrEqualTo(Adaptive.throughput().maxLinger().toNanos());
    assertThat(loop.maxSizeSeen).isLessThanOrEqualTo(CAPS.maxBatchSize());
  }

  @Test
  void aLoadThatPausesEveryFewBatches_stillGetsItsLinger_probesGoOnAcrossThePauses() {
    // The same sink and callers, but every caller pauses after 50 calls (a closed loop run in rounds, as JMH's
    // invocations are): 2 ms of idle every ~50 batches, shorter than one probe (8 to 24 epochs of 8 batches or more).
    ClosedLoop loop = new ClosedLoop(Adaptive.throughput(), 10, 2_000 * MICROS, 500, 40 * MICROS);
    for (int round = 0; round < 60; round++) { // about 6 s of simulated time
      loop.run(50);
      loop.now += 2_000 * MICROS;
    }
    assertThat(loop.controller.settledLinger()).isEqualTo(Duration.ofNanos(40 * MICROS));
  }

  @Test
  void aLoadThatPausesAfterEveryEpoch_findsItsLingerAsSoonAsOneThatDoesNot_theIdleSpellLeavesNothingToSettle() {
    // The sink and callers of the first test (40 us pays), run in rounds of 8 batches (one epoch) with 3 ms of idle
    // between them. A change of rung at the end of a round used to be measured from the next round on; if the two
    // batches after a change are set aside even though the idle spell drained any backlog, that next round keeps 6
    // batches, no epoch, and every change costs a round: the search took 42 rounds instead of 27.
    ClosedLoop loop = new ClosedLoop(Adaptive.throughput(), 10, 2_000 * MICROS, 500, 40 * MICROS);
    int rounds = 0;
    int lastMove = 0;
    Duration last = loop.controller.settledLinger();
    for (; rounds < 200; rounds++) {
      loop.run(8);
      loop.now += 3_000 * MICROS;
      if (!loop.controller.settledLinger().equals(last)) {
        last = loop.controller.settledLinger();
        lastMove = rounds + 1;
      }
    }
    assertThat(last).as("%s", loop.controller).isEqualTo(Duration.ofNanos(40 * MICROS));
    assertThat(lastMove).as("rounds until the search settled on 40 us; %s", loop.controller).isLessThanOrEqualTo(32);
  }

  @Test
  void aLoadWithAShortPauseEveryTenBatches_settlesOnALinger_doesNotFlipBetweenTwoForever() {
    // Latency mode, 280 us target; F = 200 us, 10 callers back within 40 us; every 10 batches the callers pause for
    // 600 us (no idle restart: under 1 ms), and the first batch after it does not linger. An epoch is about those 10
    // batches. Probe epochs that follow a change of rung begin two batches later in that period than those that do
    // not, and in the first 4 pairs (C S S C C S S C) the candidate has 3 such epochs, the settled rung 2: a bias
    // towards whichever rung is the candidate. Each probe then "gains" both ways: 20 us -> 40 us -> 20 us ...
    ClosedLoop loop = new ClosedLoop(Adaptive.latency(Duration.ofNanos(280 * MICROS)), 10, 200 * MICROS, 500,
        40 * MICROS);
    int moves = 0;
    Duration last = null;
    for (int batch = 1; loop.now < 1_000_000_000L + 8_000_000 * MICROS; batch++) {
      loop.cycle();
      if (batch % 10 == 0) {
        loop.now += 600 * MICROS;
      }
      Duration settled = loop.controller.settledLinger();
      if (loop.now > 1_000_000_000L + 2_000_000 * MICROS && !settled.equals(last)) {
        moves += last == null ? 0 : 1;
      }
      last = settled;
    }
    assertThat(moves).as("moves of the settled linger in the last 6 s; %s", loop.controller).isZero();
  }

  @Test
  void aSlowSinkUnderManyCallersFindsItsLingerWithinASecond() {
    // F = 2 ms under 2,000 callers, 95 % back within 100 µs: each rung up to 80 µs gathers more. A write of 1,000
    // items takes 2.5 ms, so an epoch is its batches, not its 2 ms: the search must not take seconds.
    ClosedLoop settled = new ClosedLoop(Adaptive.throughput(), 2_000, 2_000 * MICROS, 500, 100 * MICROS);
    settled.run(20_000);
    Duration best = settled.controller.settledLinger();
    assertThat(best).isGreaterThanOrEqualTo(Duration.ofNanos(40 * MICROS));
    ClosedLoop loop = new ClosedLoop(Adaptive.throughput(), 2_000, 2_000 * MICROS, 500, 100 * MICROS);
    long start = loop.now;
    while (loop.now - start < 1_000_000 * MICROS) {
      loop.cycle();
    }
    assertThat(loop.controller.settledLinger()).isEqualTo(best);
  }

  @Test
  void aLingerPayingFivePercentUnderAFewPercentOfJitter_isTakenInItsFirstProbe() {
    // 200 callers, F = 20 us, 95 % back within 40 us; one batch in ten the consumer loses 80 us after the write
    // (descheduled on two cores): outside the sink's time, so the fit stays reliable, but each epoch's rate scatters
    // by about 6 %. A linger of 10 us carries 5 % more than natural batching; 40 us and over carry less. One pair's
    // log ratio scatters by about 8 %: a gate of three standard errors at 12 pairs asked for 9 % and took the 10 us
    // in 1-2 seeds of 20.
    int found = 0;
    for (long seed = 1; seed <= 20; seed++) {
      SplittableRandom draws = new SplittableRandom(seed);
      var loop = new ClosedLoop(Adaptive.throughput(), 200, 20 * MICROS, 500, 40 * MICROS) {
        @Override
        long writeTime(int n) {
          if (draws.nextInt(10) == 0) {
            now += 80 * MICROS; // wall time of the write the sink's own time does not include
          }
          return super.writeTime(n);
        }
      };
      for (int i = 0; i < 800 && loop.controller.settledLinger().isZero(); i++) {
        loop.cycle();
      }
      found += loop.controller.settledLinger().isZero() ? 0 : 1;
    }
    assertThat(found).as("seeds of 20 that take a linger paying 5 %% within 800 batches").isGreaterThanOrEqualTo(12);
  }

  @Test
  void aSinkAsQuickAsTheCallersKeepsNaturalBatchingAndProbesRarely() {
    // F = 20 µs, callers back while it writes: every batch holds all 10 without a linger, and 10 µs costs a third
    ClosedLoop loop = new ClosedLoop(Adaptive.throughput(), 10, 20 * MICROS, 500, 40 * MICROS);
    loop.cohorts = 1;
    loop.run(20_000);
    assertThat(loop.controller.settledLinger()).isZero();
    loop.cyclesLingering = 0;
    loop.run(100_000);
    // once settled, the probes (two epochs of one rung up, every 64 epochs) cost under 5 % of the batches
    assertThat(loop.cyclesLingering).isLessThan(5_000);
  }

  @Test
  void epochsWhereNoRungCanPay_doNotCountTowardsThePauseBeforeTheNextProbe() {
    // F = 2 ms; two callers in every batch for 8 batches (an epoch), then one alone for 8, and so on: no rate or
    // batch size halves or doubles, and a linger gathers no one. Every other epoch a linger might pay (batches of
    // two) and no smaller cap can (batches far below it): only those epochs count towards the pause, as before
    // the ladder had size rungs, so the probes cost what they cost under two callers alone.
    ClosedLoop loop = new ClosedLoop(Adaptive.throughput(), 2, 2_000 * MICROS, 500, 40 * MICROS);
    loop.cohorts = 1;
    for (int i = 0; i < 200_000 / 8; i++) {
      if (i == 20_000 / 8) {
        loop.cyclesLingering = 0;
      }
      loop.callers = i % 2 == 0 ? 2 : 1;
      loop.run(8);
    }
    assertThat(loop.cyclesLingering).as("batches held by a probe, of 180,000").isLessThan(9_000);
  }

  @Test
  void aNoisyFitFallsBackToNaturalBatchingEvenWhereALingerWouldPay() {
    ClosedLoop loop = new ClosedLoop(Adaptive.throughput(), 10, 2_000 * MICROS, 500, 40 * MICROS) {
      @Override
      long writeTime(int n) {
        return random.nextInt(10) == 0 ? 20_000 * MICROS : 200 * MICROS; // mean 2.2 ms, deviation 6 ms
      }
    };
    loop.run(1_000); // the first epochs may not have met a slow write yet
    loop.cyclesLingering = 0;
    loop.run(20_000);
    assertThat(loop.cyclesLingering).isZero();
    assertThat(loop.controller.limits()).isEqualTo(CAPS);
  }

  @Test
  void noLingerAtAllWhenTheMaximumIsZero() {
    ClosedLoop loop = new ClosedLoop(Adaptive.throughput().withMaxLinger(Duration.ZERO), 10, 2_000 * MICROS, 500,
        40 * MICROS);
    loop.run(20_000);
    assertThat(loop.maxLingerSeen).isZero();
  }

  @Test
  void theLingerNeverPassesItsMaximum() {
    // 1,000 callers back within 5 ms of a 20 ms write: every rung pays (the first ones little), up to the cap
    Adaptive mode = Adaptive.throughput().withMaxLinger(Duration.ofNanos(300 * MICROS));
    ClosedLoop loop = new ClosedLoop(mode, 1_000, 20_000 * MICROS, 500, 5_000 * MICROS);
    loop.run(20_000);
    assertThat(loop.maxLingerSeen).isEqualTo(300 * MICROS);
    assertThat(loop.controller.settledLinger()).isEqualTo(Duration.ofNanos(300 * MICROS));
  }

  @Test
  void theFirstItemAfterIdleAndALoneCallersItemAreNeverHeld() {
    AdaptiveLimits controller = new AdaptiveLimits(Adaptive.throughput(), CAPS, false);
    PendingBatch<Object, Object> batch = new PendingBatch<>(16, 1024);
    long now = 0;
    assertThat(controller.mayLinger(now)).as("before any write").isFalse();
    batch.add("a", null, 1, 0, SubmissionSlot.NOT_STAMPED);
    controller.writeStarting(batch.copyStamps(controller));
    controller.writeEnded(1, now, 10 * MICROS, now += 10 * MICROS, false);
    assertThat(controller.mayLinger(now + MICROS)).as("after a lone item").isFalse();
    batch.add("b", null, 1, 1, SubmissionSlot.NOT_STAMPED);
    controller.writeStarting(batch.copyStamps(controller));
    controller.writeEnded(2, now += MICROS, 10 * MICROS, now += 10 * MICROS, false);
    assertThat(controller.mayLinger(now + MICROS)).as("right after two items").isTrue();
    assertThat(controller.mayLinger(now + 10_000 * MICROS)).as("after an idle spell").isFalse();
  }

  @Test
  void mayLinger_tickerSteppedBackSinceTheLastWrite_neverHeld() {
    // A wall clock corrected backwards, or GuardedTicker's switch to System.nanoTime() after a ticker threw: the
    // reading says nothing of how long the consumer was idle, so the batch is never held on it.
    AdaptiveLimits controller = new AdaptiveLimits(Adaptive.throughput(), CAPS, false);
    long now = 1_000_000_000L;
    controller.writeEnded(2, now, 10 * MICROS, now += 10 * MICROS, false);
    assertThat(controller.mayLinger(now + MICROS)).as("right after two items").isTrue();
    assertThat(controller.mayLinger(now - MICROS)).as("a microsecond back").isFalse();
    assertThat(controller.mayLinger(now - 3_600_000_000_000L)).as("an hour back").isFalse();
  }

  @Test
  void latencyModeShrinksBatchesWhoseItemCostBreaksTheTarget() {
    // saturated: every batch is full; F = 100 µs, c = 5 µs: a batch of 4096 takes 20 ms, the target is 1 ms
    ClosedLoop loop = new ClosedLoop(Adaptive.latency(Duration.ofMillis(1)), 1 << 20, 100 * MICROS, 5 * MICROS,
        40 * MICROS);
    loop.run(5_000);
    int size = loop.controller.limits().maxBatchSize();
    assertThat(size).isLessThanOrEqualTo(180); // F + c * n within 1 ms; within half of it: 80
    assertThat(size).isGreaterThanOrEqualTo(40);
    assertThat(loop.controller.settledLinger()).isZero();
  }

  @Test
  void latencyModeLeavesTheSizeAloneWhenTheFixedCostAloneIsNearTheTarget() {
    // F = 2 ms, c = 50 ns against a 2 ms target: more writes of fewer items would only queue the items longer.
    // The sizes are alike at first, so the controller halves once to tell F from c, and then stops.
    ClosedLoop loop = new ClosedLoop(Adaptive.latency(Duration.ofMillis(2)), 1 << 20, 2_000 * MICROS, 50,
        40 * MICROS);
    loop.run(5_000);
    assertThat(loop.controller.limits().maxBatchSize()).isGreaterThanOrEqualTo(CAPS.maxBatchSize() / 2);
  }

  @Test
  void latencyModeLingersWhereItPaysAndOnlyWithinItsTarget() {
    // F = 2 ms, callers back within 1 ms: the first rungs gather next to nobody (flat), 320 µs carries the most
    ClosedLoop loose = new ClosedLoop(Adaptive.throughput(), 10, 2_000 * MICROS, 500, 1_000 * MICROS);
    loose.run(20_000);
    assertThat(loose.controller.settledLinger().toNanos()).as("%s", loose.controller)
        .isGreaterThanOrEqualTo(320 * MICROS);
    // a p99 target of 2.3 ms: the items taken first wait the whole linger, so it must stay at 160 µs or under
    ClosedLoop tight = new ClosedLoop(Adaptive.latency(Duration.ofNanos(2_300 * MICROS)), 10, 2_000 * MICROS, 500,
        1_000 * MICROS);
    tight.run(20_000);
    long settled = tight.controller.settledLinger().toNanos();
    assertThat(settled).as("%s", tight.controller).isBetween(10 * MICROS, 160 * MICROS);
    tight.longestRoundTrip = 0;
    tight.run(20_000);
    assertThat(tight.longestRoundTrip).isLessThanOrEqualTo(2_530 * MICROS); // within 10 %, probes included
  }

  @Test
  void logLines_printMicrosecondsWithAPoint_inEveryLocale() {
    java.util.Locale before = java.util.Locale.getDefault();
    java.util.Locale.setDefault(java.util.Locale.GERMANY);
    try {
      assertThat(AdaptiveLimits.micros(1_500)).isEqualTo("1.5 µs");
    } finally {
      java.util.Locale.setDefault(before);
    }
  }
}
