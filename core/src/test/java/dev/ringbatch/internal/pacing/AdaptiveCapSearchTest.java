package dev.ringbatch.internal.pacing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.Adaptive;
import dev.ringbatch.BatchLimits;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The adaptive limits' search of the batch cap (throughput mode: the rungs under natural batching) against the
 * {@link ClosedLoop} model: a smaller cap is taken where measured rates say it carries more, kept while they do,
 * and left where they no longer do.
 */
class AdaptiveCapSearchTest {
  private static final long MICROS = ClosedLoop.MICROS;
  private static final BatchLimits CAPS = ClosedLoop.CAPS;

  /** 3,000 callers, no fixed cost; every item past 1,024 in a batch costs 2 µs more. */
  private static class LargeBatchesCostMore extends ClosedLoop {
    LargeBatchesCostMore() {
      super(Adaptive.throughput(), 3_000, 0, 500, 40 * MICROS);
    }

    @Override
    long writeTime(int n) {
      return perItem * n + 2 * MICROS * Math.max(0, n - 1_024);
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
    // apart (and only a linger needs the fit); every cap under the knee carries the same within 1.2 %
    LargeBatchesCostMore loop = new LargeBatchesCostMore();
    loop.noisy = true;
    loop.run(40_000);
    assertThat(loop.controller.settledSize()).as("%s", loop.controller).isLessThanOrEqualTo(1_024);
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
}
