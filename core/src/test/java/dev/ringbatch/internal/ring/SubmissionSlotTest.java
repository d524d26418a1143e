package dev.ringbatch.internal.ring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.lmax.disruptor.BlockingWaitStrategy;
import com.lmax.disruptor.RingBuffer;
import java.util.BitSet;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The ring's two reference layouts ({@link SubmissionSlot}). Dense: every position owns its own array element,
 * the elements of consecutive sequences lie a cache line apart, and one block of positions fills one card. In
 * the slot: each slot keeps its own. Either way a slot holds what its producer filled until it is marked.
 */
class SubmissionSlotTest {

  @ParameterizedTest
  @ValueSource(ints = {1, 2, 32, 64, 128, 256, 1024, 2048, 16_384, 65_536})
  void everyPositionHasItsOwnElement(int size) {
    BitSet seen = new BitSet(size);
    for (int position = 0; position < size; position++) {
      int index = SubmissionSlot.index(position, size);
      assertThat(index).as("index of position %d in a ring of %d", position, size).isBetween(0, size - 1);
      assertThat(seen.get(index)).as("index %d taken twice (position %d)", index, position).isFalse();
      seen.set(index);
    }
    assertThat(seen.cardinality()).isEqualTo(size);
  }

  @ParameterizedTest
  @ValueSource(ints = {64, 128, 1024, 2048, 16_384})
  void consecutiveSequencesLieALineApartAndEachBlockOnItsCard(int size) {
    for (int position = 0; position < size; position++) {
      int here = SubmissionSlot.index(position, size);
      int next = SubmissionSlot.index((position + 1) % size, size); // the last position wraps to the first
      assertThat(Math.abs(next - here)).as("positions %d and %d", position, position + 1).isGreaterThanOrEqualTo(16);
      int block = Math.min(size, SubmissionSlot.BLOCK);
      assertThat(here / block).as("block of position %d", position).isEqualTo(position / block);
    }
  }

  @ParameterizedTest
  @CsvSource({"4,true", "256,true", "2048,true", "4,false", "256,false", "2048,false"})
  void aSlotKeepsWhatItsProducerFilledUntilMarked(int size, boolean dense) {
    RingBuffer<SubmissionSlot> ring = SubmissionSlot.newRing(size, new BlockingWaitStrategy(), dense);
    assertThat(ring.get(0).items != null).as("dense arrays").isEqualTo(dense);
    CompletableFuture<Object> future = new CompletableFuture<>();
    for (long sequence = 0; sequence < 2L * size; sequence++) {
      SubmissionSlot slot = ring.get(sequence);
      slot.fill("item" + sequence, sequence % 2 == 0 ? future : null, 7, 11);
      assertThat(ring.get(sequence).item()).isEqualTo("item" + sequence);
      assertThat(ring.get(sequence).future()).isSameAs(sequence % 2 == 0 ? future : null);
      assertThat(ring.get(sequence + 1).item()).as("the next slot").isNull();
      slot.mark(SubmissionSlot.EMPTY);
      assertThat(slot.item()).isNull();
      assertThat(slot.future()).isNull();
      assertThat(slot.weight).isZero();
      assertThat(slot.awaited).isFalse();
    }
  }

  @Test
  void theLayoutFollowsTheJvmUnlessThePropertyChoosesIt() {
    String before = System.getProperty(SubmissionSlot.DENSE_PROPERTY);
    try {
      System.clearProperty(SubmissionSlot.DENSE_PROPERTY);
      assertThat(SubmissionSlot.denseByDefault()).as("JDK %s", Runtime.version().feature())
          .isEqualTo(Runtime.version().feature() < 20);
      System.setProperty(SubmissionSlot.DENSE_PROPERTY, "true");
      assertThat(SubmissionSlot.newRing(64, new BlockingWaitStrategy()).get(0).items).isNotNull();
      System.setProperty(SubmissionSlot.DENSE_PROPERTY, "false");
      assertThat(SubmissionSlot.newRing(64, new BlockingWaitStrategy()).get(0).items).isNull();
      System.setProperty(SubmissionSlot.DENSE_PROPERTY, "yes");
      assertThatThrownBy(() -> SubmissionSlot.newRing(64, new BlockingWaitStrategy()))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining(SubmissionSlot.DENSE_PROPERTY)
          .hasMessageContaining("'yes'");
    } finally {
      if (before == null) {
        System.clearProperty(SubmissionSlot.DENSE_PROPERTY);
      } else {
        System.setProperty(SubmissionSlot.DENSE_PROPERTY, before);
      }
    }
  }
}
