package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Null arguments other than items throw NullPointerException naming the parameter (docs/errors.md). */
class NullArgumentNamesTest {

  @Test
  void removeStatsRecorderNull_throwsNamingRecorder() {
    Batcher<String, Void> batcher = Batcher.of("nulls", BatcherConfig.ofDefaults(), BatchSink.noResult(i -> { }));
    try {
      assertThatThrownBy(() -> batcher.removeStatsRecorder(null))
          .isExactlyInstanceOf(NullPointerException.class).hasMessage("recorder");
    } finally {
      batcher.close(Duration.ofSeconds(5));
    }
  }
}
