package dev.ringbatch.internal.pacing;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class GatheringLadderTest {
  private static final long MICROS = 1_000;

  @Test
  void climbsFromASixteenthOfTheCapThroughNaturalBatchingToTheMaximumLinger() {
    GatheringLadder ladder = new GatheringLadder(4096, 50 * MICROS, true);
    assertThat(ladder.natural()).isEqualTo(4);
    int[] sizes = new int[ladder.top() + 1];
    long[] lingers = new long[ladder.top() + 1];
    for (int i = 0; i <= ladder.top(); i++) {
      sizes[i] = ladder.size(i);
      lingers[i] = ladder.lingerNanos(i);
    }
    assertThat(sizes).containsExactly(256, 512, 1024, 2048, 4096, 4096, 4096, 4096, 4096);
    assertThat(lingers).containsExactly(0, 0, 0, 0, 0, 10 * MICROS, 20 * MICROS, 40 * MICROS, 50 * MICROS);
    assertThat(ladder.describe(2)).isEqualTo("size 1024");
    assertThat(ladder.describe(4)).isEqualTo("natural batching");
    assertThat(ladder.describe(6)).isEqualTo("linger 20 µs");
  }

  @Test
  void smallCapsAndTheLatencyModeHaveNoSizeRungs_noMaximumLingerNoLingerRungs() {
    assertThat(new GatheringLadder(20, 0, true).top()).isZero();
    GatheringLadder small = new GatheringLadder(40, 0, true);
    assertThat(small.natural()).isEqualTo(1);
    assertThat(small.size(0)).isEqualTo(20);
    assertThat(new GatheringLadder(4096, 0, false).top()).isZero();
  }
}
