package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Regression tests for sizes a JVM cannot afford: they must be refused up front with a message that says
 * why, not end in an {@link OutOfMemoryError}.
 */
@Timeout(value = 30, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class ResourceLimitsTest {

  /** Defect 13. The builder accepts 2^30 or refuses it; either way no batcher starts and no OOM. */
  @Test
  void ringOfTwoToThe30_refusedNamingSizeAndMemory() {
    AtomicReference<Batcher<String, Void>> created = new AtomicReference<>();

    Throwable thrown = catchThrowable(() -> created.set(Batcher.of("huge",
        BatcherConfig.builder().ringSize(1 << 30).build(), BatchSink.<String>noResult(items -> {}))));
    if (created.get() != null) {
      created.get().close(Duration.ZERO);
    }

    assertThat(thrown).as("what creating a batcher with a ring of 2^30 slots threw")
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("ringSize")
        .hasMessageContaining("1073741824");
    assertThat(thrown.getMessage()).as("the message names the memory it would take").containsAnyOf("GiB", "MiB");
  }

  /** Defect 13. */
  @Test
  void maxIntShards_refusedNamingShards() {
    AtomicInteger sinksMade = new AtomicInteger();
    AtomicReference<Batcher<String, Void>> created = new AtomicReference<>();

    Throwable thrown = catchThrowable(() -> created.set(Batcher.sharded("s", BatcherConfig.ofDefaults(),
        Integer.MAX_VALUE, shard -> {
          if (sinksMade.incrementAndGet() > 64) {
            throw new AssertionError("started more than 64 of 2147483647 shards");
          }
          return BatchSink.<String>noResult(items -> {});
        })));
    if (created.get() != null) {
      created.get().close(Duration.ZERO);
    }

    assertThat(thrown).as("what creating 2147483647 shards threw")
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("shards")
        .hasMessageContaining("2147483647");
  }
}
