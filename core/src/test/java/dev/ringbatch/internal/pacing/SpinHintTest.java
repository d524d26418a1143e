package dev.ringbatch.internal.pacing;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** When platform-thread callers spin before they park ({@link SpinHint}): a quick sink and small batches only. */
class SpinHintTest {
  private final SpinHint hint = new SpinHint();

  private void batches(int count, long writeNanos, int size) {
    for (int i = 0; i < count; i++) {
      hint.written(writeNanos, size);
    }
  }

  @Test
  void spinsWhileTheSinkIsQuickAndBatchesAreSmall() {
    batches(50, 500, 4);
    assertThat(hint.worthSpinning()).isTrue();
  }

  @Test
  void parksAtOnceBehindASlowSink() {
    batches(50, 20_000, 1);
    assertThat(hint.worthSpinning()).isFalse();
    batches(50, 500, 1);
    assertThat(hint.worthSpinning()).as("the sink is quick again").isTrue();
  }

  @Test
  void parksAtOnceAmongManyCallersAndSpinsAgainWhenTheyAreFew() {
    batches(50, 500, 4 * SpinHint.SPINNING_BATCH);
    assertThat(hint.worthSpinning()).as("batches of %d", 4 * SpinHint.SPINNING_BATCH).isFalse();
    batches(50, 500, SpinHint.SPINNING_BATCH / 2);
    assertThat(hint.worthSpinning()).as("batches of %d", SpinHint.SPINNING_BATCH / 2).isTrue();
  }

  @Test
  void oneLargeBatchAmongSmallOnesDoesNotStopTheSpin() {
    batches(50, 500, 2);
    hint.written(500, 4 * SpinHint.SPINNING_BATCH);
    assertThat(hint.worthSpinning()).as("a mean, not the last batch").isTrue();
  }
}
