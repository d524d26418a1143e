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
 * The adaptive limits' controller against a model of a closed loop in simulated time: K callers whose batch
 * completes after F + c * n; with no linger they split into two cohorts of K/2 (each writes while the other
 * comes back), and a linger of L gathers a share 1 - exp(-3 L / R) of the other cohort, 95 % of which are back
 * within R. Deterministic: every safety rule and every choice is checked without a clock or a thread.
 */
class AdaptiveLimitsTest {
  private static final long MICROS = 1_000;
  private static final BatchLimits CAPS = BatchLimits.of(4096, BatchLimits.NO_BYTE_LIMIT, Duration.ZERO);

  /** The model; {@link #cycle} runs one batch through the controller. */
  private static class ClosedLoop {
    final AdaptiveLimits controller;
    int callers;
    final long fixed;
    final long perItem;
    long comeBack;
    final PendingBatch<Object, Object> batch = new PendingBatch<>(16, 1 << 20);
    long now = 1_000_000_000L;
    long maxLingerSeen;
    int maxSizeSeen;
    long cyclesLingering;
    long cyclesUnderCap;
    long longestRoundTrip;
    /** Into how many cohorts the callers split without a linger. */
    int cohorts = 2;
    long[] writeOverride;
    SplittableRandom random = new SplittableRandom(42);

    ClosedLoop(Adaptive mode, int callers, long fixed, long perItem, long comeBack) {
      this.controller = new AdaptiveLimits(mode, CAPS, false);
      this.callers = callers;
      this.fixed = fixed;
      this.perItem = perItem;
      this.comeBack = comeBack;
    }

    void cycle() {
      BatchLimits limits = controller.limits();
      long linger = limits.linger().toNanos();
      maxLingerSeen = Math.max(maxLingerSeen, linger);
      int half = callers / cohorts;
      now += 2 * MICROS; // the first caller back is taken
      long firstTaken = now;
      int n = half;
      if (linger > 0 && controller.mayLinger(now)) {
        n += (int) Math.round((callers - half) * (1 - Math.exp(-3.0 * linger / comeBack))); // 95 % back by then
        now += linger;
        cyclesLingering++;
      }
      n = Math.min(n, limits.maxBatchSize());
      cyclesUnderCap += limits.maxBatchSize() < CAPS.maxBatchSize() ? 1 : 0;
      maxSizeSeen = Math.max(maxSizeSeen, n);
      batch.clear();
      for (int i = 0; i < n; i++) { // published a little before they were taken: the cohort, then those gathered
        batch.add(i, null, 1, i, (i < Math.min(n, half) ? firstTaken : now) - 5 * MICROS);
      }
      controller.writeStarting(batch.copyStamps(controller));
      long start = now;
      long write = writeTime(n);
      now += write;
      String change = controller.writeEnded(n, start, write, now, false);
      if (change != null && Boolean.getBoolean("dbg")) System.err.println(change);
      longestRoundTrip = Math.max(longestRoundTrip, now - (firstTaken - 5 * MICROS));
    }

    long writeTime(int n) {
      return fixed + perItem * n;
    }

    void run(int cycles) {
      for (int i = 0; i < cycles; i++) {
        cycle();
      }
    }
  }

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

  /** 3,000 callers, no fixed cost; every item past 1,024 in a batch costs 2 µs more; noisy on demand. */
  private static class LargeBatchesCostMore extends ClosedLoop {
    boolean noisy;

    LargeBatchesCostMore() {
      super(Adaptive.throughput(), 3_000, 0, 500, 40 * MICROS);
    }

    @Override
    long writeTime(int n) {
      long write = perItem * n + 2 * MICROS * Math.max(0, n - 1_024);
      return noisy && random.nextInt(10) == 0 ? 20 * write : write;
    }
  }

  @Test
  void aSinkWhoseLargeBatchesCostMoreSettlesOnTheSmallerCapThatCarriesMost() {
    // a burst of completions the callers cannot absorb, say: batches of 1,500 carry 0.9 items/µs, of 1,024 2.0
    LargeBatchesCostMore loop = new LargeBatchesCostMore();
    loop.run(20_000);
    assertThat(loop.controller.settledSize()).as("%s", loop.controller).isEqualTo(1_024);
    assertThat(loop.controller.settledLinger()).isZero();
  }

  @Test
  void aSmallerCapFoundByMeasurementOutlivesANoisySpell() {
    LargeBatchesCostMore loop = new LargeBatchesCostMore();
    loop.run(20_000);
    loop.noisy = true; // a GC pause, a neighbour: the fit turns noisy, which says nothing about the cap
    loop.run(2_000);
    // the probes of other caps go on (their rates need no fit): none past the knee carries more, and every cap under
    // it carries the same (no fixed cost), so where the noise leaves the search under the knee is as good
    assertThat(loop.controller.settledSize()).as("%s", loop.controller).isLessThanOrEqualTo(1_024);
    assertThat(loop.controller.settledLinger()).isZero();
  }

  @Test
  void aSinkTooNoisyToFit_stillHasItsSmallerCapFoundByMeasuredRates() {
    // one write in ten takes 20 times as long from the start: no fit of F + c * n, but the rates still tell caps
    // apart (and only a linger needs the fit)
    LargeBatchesCostMore loop = new LargeBatchesCostMore();
    loop.noisy = true;
    loop.run(40_000);
    assertThat(loop.controller.settledSize()).as("%s", loop.controller).isEqualTo(1_024);
    assertThat(loop.controller.settledLinger()).isZero();
  }

  @Test
  void aKneeThatMovesDown_isFollowedFromACapTheBatchesNearlyFill() {
    // A cap of 2,048 found under 6,000 callers (items past 2,048 in a batch cost 4 us more each). Then 1,900 to 2,000
    // callers in one cohort, and the knee moves to 1,024: every batch holds all of them, within a tenth of the cap,
    // which binds none; a cap of 1,024 carries most (read as a ring backlog, as batches over 90 % of the cap once
    // were, the smaller caps were never probed again).
    var loop = new ClosedLoop(Adaptive.throughput(), 6_000, 0, 500, 40 * MICROS) {
      int knee = 2_048;

      @Override
      long writeTime(int n) {
        return perItem * n + 4 * MICROS * Math.max(0, n - knee);
      }
    };
    loop.run(20_000);
    assertThat(loop.controller.settledSize()).as("%s", loop.controller).isEqualTo(2_048);
    loop.knee = 1_024;
    loop.cohorts = 1;
    for (int i = 0; i < 20_000; i++) {
      loop.callers = i % 2 == 0 ? 1_900 : 2_000; // sizes that differ tell the cost per item from a fixed cost
      loop.cycle();
    }
    // under the knee every cap carries the same within 2 % (no fixed cost): any of them is the best
    assertThat(loop.controller.settledSize()).as("%s", loop.controller).isLessThanOrEqualTo(1_024);
  }

  @Test
  void aCapNoBatchReaches_isNotProbed_theSearchGoesToTheFirstThatBinds() {
    // 2,000 callers in one cohort under the cap of 4,096, items past 1,024 in a batch cost 2 us more each. A cap of
    // 2,048 binds no batch: its probe can only read noise, and on a real ring (2,000 virtual callers, 20 us sink) noise
    // read as a loss held the search at 4,096 for whole forks, each failed probe doubling the pause before the next.
    var loop = new ClosedLoop(Adaptive.throughput(), 2_000, 0, 500, 40 * MICROS) {
      @Override
      long writeTime(int n) {
        return perItem * n + 2 * MICROS * Math.max(0, n - 1_024);
      }
    };
    loop.cohorts = 1;
    int firstProbed = CAPS.maxBatchSize();
    for (int i = 0; i < 20_000 && firstProbed == CAPS.maxBatchSize(); i++) {
      loop.cycle();
      firstProbed = loop.controller.limits().maxBatchSize();
    }
    assertThat(firstProbed).as("the first cap probed down from 4,096; %s", loop.controller).isEqualTo(1_024);
    loop.run(20_000);
    assertThat(loop.controller.settledSize()).as("%s", loop.controller).isLessThanOrEqualTo(1_024);
  }

  @Test
  void aSmallerCapFoundByMeasurementOutlivesTheCallersPausingNowAndThen() {
    // the sink of the test above, whose 1,024 cap carries twice what batches of 1,500 do; every ~60 batches the
    // callers pause for 3 ms (JMH's iterations, a service's quiet second) and come back a few at a time
    LargeBatchesCostMore loop = new LargeBatchesCostMore();
    loop.run(20_000);
    assertThat(loop.controller.settledSize()).as("%s", loop.controller).isEqualTo(1_024);
    long atTheCap = 0;
    long cycles = 0;
    for (int round = 0; round < 300; round++) {
      loop.now += 3_000 * MICROS;
      loop.callers = 30; // the first few back: batches of 15
      for (int i = 0; i < 10; i++, cycles++) {
        loop.cycle();
        atTheCap += loop.controller.limits().maxBatchSize() == 1_024 ? 1 : 0;
      }
      loop.callers = 3_000;
      for (int i = 0; i < 50; i++, cycles++) {
        loop.cycle();
        atTheCap += loop.controller.limits().maxBatchSize() == 1_024 ? 1 : 0;
      }
    }
    assertThat(100.0 * atTheCap / cycles).as("%% of batches under the cap found; %s", loop.controller)
        .isGreaterThan(90.0);
  }

  /**
   * F = 2 ms, c = 500 ns, and 4 µs more for every item past 1,024 in a batch: under 3,000 callers batches of 1,500
   * carry 0.32 items/µs, batches capped at 1,024 carry 0.41, and the cap has settled there.
   */
  private static ClosedLoop slowSinkSettledOnACapOf1024() {
    ClosedLoop loop = new ClosedLoop(Adaptive.throughput(), 3_000, 2_000 * MICROS, 500, 40 * MICROS) {
      @Override
      long writeTime(int n) {
        return fixed + perItem * n + 4 * MICROS * Math.max(0, n - 1_024);
      }
    };
    loop.run(20_000);
    assertThat(loop.controller.settledSize()).as("%s", loop.controller).isEqualTo(1_024);
    return loop;
  }

  @Test
  void aSmallerCapFoundByMeasurement_outlivesWholeEpochsOfFewCallers() {
    // The callers thin out for 5 epochs (their tail before a pause, their ramp after one: batches of 15, under a
    // cap of 1,024 that binds none of them) and come back: the cap the search found is still in force when they do,
    // not found again by probing down from natural batching one halving at a time.
    ClosedLoop loop = slowSinkSettledOnACapOf1024();
    loop.callers = 30;
    loop.run(40);
    loop.callers = 3_000;
    assertThat(loop.controller.limits().maxBatchSize()).as("%s", loop.controller).isEqualTo(1_024);
    loop.cyclesUnderCap = 0;
    loop.run(2_000);
    assertThat(loop.cyclesUnderCap).as("batches under the cap found; %s", loop.controller).isGreaterThan(1_900);
  }

  @Test
  void aSmallerCapFoundUnderOneLoad_givesWayWhenALargerLoadFillsItAndTheFullCapCarriesMore() {
    // The cap of 2,048 found under 6,000 callers; then the knee goes (a linear sink of F = 2 ms) and 20,000 callers
    // fill every batch: a batch of 4,096 carries nearly twice what one of 2,048 does.
    KneeAt2048 loop = new KneeAt2048();
    loop.run(20_000);
    assertThat(loop.controller.settledSize()).as("%s", loop.controller).isEqualTo(2_048);
    loop.penalty = 0;
    loop.callers = 20_000;
    loop.run(2_000);
    assertThat(loop.controller.settledSize()).as("%s", loop.controller).isEqualTo(4_096);
  }

  @Test
  void aSmallerCapWhoseBatchesNoLongerFillIt_givesWayToTheLingerThatPays() {
    ClosedLoop loop = slowSinkSettledOnACapOf1024();
    // The load falls to 10 callers: batches of 5 never reach the cap, and (as in the first test) a linger of 40 µs
    // doubles what the sink carries. The cap that no batch fills must not keep the search from it.
    loop.callers = 10;
    loop.run(20_000);
    assertThat(loop.controller.settledLinger()).as("%s", loop.controller).isEqualTo(Duration.ofNanos(40 * MICROS));
  }

  @Test
  void batchesThatFillTheCap_ofASinkWithAFixedCost_stayAtTheCap_probesCostFewBatches() {
    // every batch is full (items queued in the ring behind it), and F = 100 us: a smaller cap splits that backlog
    // into more writes, each paying F again, and its probes must find it worse (on a real ring, before the batches
    // right after a change were set aside, they read its transient as a gain and walked 10,000 callers down to a
    // sixteenth of the cap at 0.62x the rate)
    ClosedLoop loop = new ClosedLoop(Adaptive.throughput(), 1 << 20, 100 * MICROS, 500, 40 * MICROS);
    loop.run(40_000);
    assertThat(loop.controller.settledSize()).as("%s", loop.controller).isEqualTo(4_096);
    assertThat(loop.cyclesUnderCap * 100 / 40_000).as("%% of batches under a smaller cap; %s", loop.controller)
        .isLessThan(10);
  }

  @Test
  void aSmallestCapKeptByOneBurstAnEpoch_doesNotHideTheShortLingersFromTheSearch() {
    // First a cap of 256 (a sixteenth of 4,096) found by measurement, as the knee halves: each load's batches
    // (callers in two cohorts) come 50 over a knee past which every item costs 4 us more, and the knee halves.
    var loop = new ClosedLoop(Adaptive.throughput(), 4_200, 0, 500, 5 * MICROS) {
      boolean later;
      int knee;

      @Override
      long writeTime(int n) {
        return later ? 30 * MICROS + 50 * n : perItem * n + 4 * MICROS * Math.max(0, n - knee);
      }
    };
    for (loop.knee = 2_048; loop.knee >= 256; loop.knee /= 2) {
      loop.callers = 2 * loop.knee + 100;
      loop.run(20_000);
      // at or under the knee: every cap under it carries the same (no fixed cost)
      assertThat(loop.controller.settledSize()).as("%s", loop.controller).isLessThanOrEqualTo(loop.knee);
    }
    // Then 10 callers (batches of 5) on a sink of F = 30 us: a linger of 10 us gathers the other cohort, 1.5x the
    // rate of natural batching; one of 80 us or more carries less than natural batching. Once in every 10 batches a
    // burst of 400 callers (batches of 200) comes within half of the cap, which keeps it, though it binds no batch.
    // From the bottom rung the probes went 512, 1,024, natural (all flat: the cap hardly binds), then 80 us (a loss),
    // and around again: the lingers of 10 to 40 us were never probed.
    loop.later = true;
    for (int i = 0; i < 60_000; i++) {
      loop.callers = i % 10 == 9 ? 400 : 10;
      loop.cycle();
    }
    assertThat(loop.controller.settledLinger()).as("%s", loop.controller).isPositive();
  }

  /**
   * F = 2 ms, c = 50 ns, and at first 4 µs more for every item past 2,048: under 6,000 callers a cap of 2,048 carries
   * twice what batches of 3,000 do, and the search settles there.
   */
  private static final class KneeAt2048 extends ClosedLoop {
    long penalty = 4 * MICROS;

    KneeAt2048() {
      super(Adaptive.throughput(), 6_000, 2_000 * MICROS, 50, 40 * MICROS);
    }

    @Override
    long writeTime(int n) {
      return fixed + perItem * n + penalty * Math.max(0, n - 2_048);
    }
  }

  /**
   * The cap of 2,048 found under 6,000 callers; then the sink's cost turns linear and 3,000 callers remain: batches
   * of 1,500, over half the cap and under it.
   */
  private static KneeAt2048 capOf2048ThenALinearSinkUnder3000Callers() {
    KneeAt2048 loop = new KneeAt2048();
    loop.run(20_000);
    assertThat(loop.controller.settledSize()).as("%s", loop.controller).isEqualTo(2_048);
    loop.penalty = 0;
    loop.callers = 3_000;
    return loop;
  }

  @Test
  void aSmallerCapTheBatchesStillReach_doesNotKeepTheSearchFromTheLingers() {
    // A linger that gathers the other cohort nearly doubles what the sink carries. Natural batching alone is no
    // better than the cap (the probe to it is flat), so the search must be able to look past it.
    KneeAt2048 loop = capOf2048ThenALinearSinkUnder3000Callers();
    loop.run(20_000);
    assertThat(loop.controller.settledLinger()).as("%s", loop.controller).isPositive();
  }

  @Test
  void aSmallerCapTheBatchesStillReach_doesNotPinTheSearchToTheFirstLingerWhenOnlyLongerOnesPay() {
    // The test above's cap of 2,048, found under 6,000 callers. Then the cost turns linear under 3,000 callers
    // (batches of 1,500: the cap binds none, yet every batch comes within half of it, so it stays), who now come
    // back within 2 ms: the short lingers gather next to no one. Natural batching is the cap's equal, 10 and 20 us
    // are flat (+0.9 %, +1.9 %), 40 us gains 3.6 %, 640 us 21 %. A stride pinned at the first linger re-probed
    // 10 us at ever longer holds and never reached the lingers that pay (before 91b85f2: 40 us, ..., 640 us).
    KneeAt2048 loop = capOf2048ThenALinearSinkUnder3000Callers();
    loop.comeBack = 2_000 * MICROS;
    loop.run(20_000); // 42 s simulated
    assertThat(loop.controller.settledLinger().toNanos()).as("%s", loop.controller)
        .isGreaterThanOrEqualTo(40 * MICROS);
  }

  @Test
  void theBatchesRightAfterAChangeOfCap_doNotCountTowardsTheProbe() {
    // F = 100 µs, c = 500 ns, 6,000 callers: batches of 3,000 at natural batching carry 1.88 items/µs, a cap of 2,048
    // 1.82 (3 % less). But the first two batches under a smaller cap are written in half the time (the backlog the
    // last rung left, say): an epoch of 8 batches that counts them reads the smaller cap 14 % faster.
    var loop = new ClosedLoop(Adaptive.throughput(), 6_000, 100 * MICROS, 500, 40 * MICROS) {
      int lastCap = CAPS.maxBatchSize();
      int sinceSmaller = Integer.MAX_VALUE;

      @Override
      long writeTime(int n) {
        int cap = controller.limits().maxBatchSize();
        sinceSmaller = cap < lastCap ? 0 : sinceSmaller == Integer.MAX_VALUE ? sinceSmaller : sinceSmaller + 1;
        lastCap = cap;
        long write = super.writeTime(n);
        return sinceSmaller < 2 ? write / 2 : write;
      }
    };
    loop.run(40_000);
    assertThat(loop.controller.settledSize()).as("%s", loop.controller).isEqualTo(4_096);
    // the probes of smaller caps cost a few batches in a hundred (before: the search moved to 2,048 and stayed)
    assertThat(loop.cyclesUnderCap * 100 / 40_000).as("%% of batches under a smaller cap; %s", loop.controller)
        .isLessThan(10);
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
