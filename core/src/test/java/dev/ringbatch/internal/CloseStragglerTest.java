package dev.ringbatch.internal;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.lmax.disruptor.RingBuffer;
import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherClosedException;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.BatcherStats;
import dev.ringbatch.CloseReport;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A producer descheduled between its claim and its publish (no user code runs there, but the OS may stop a thread
 * anywhere) while a close times out and takes over. The close waits 200 ms for the slot and then must return; the
 * item the producer publishes afterwards was accepted (the producer read the batcher open before it paused), so
 * its caller must still be told. Before the fix the close only logged "its item, if accepted, is not failed by
 * this close" and the caller waited for ever. The test plays the producer itself: it claims a slot and publishes
 * it later, exactly as {@code PublishGate.publish} does after reading the batcher open.
 */
@Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class CloseStragglerTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  @Test
  void itemPublishedAfterAnAbandoningCloseFailsAsAbandoned() throws Exception {
    CountDownLatch inSink = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    BatchSink<String, Void> sink = BatchSink.noResult(items -> {
      inSink.countDown();
      release.await(30, SECONDS);
    });
    Batcher<String, Void> batcher = Batcher.of("straggler", BatcherConfig.builder().build(), sink);
    try {
      CompletableFuture<Void> first = batcher.submit("first");
      assertThat(inSink.await(10, SECONDS)).as("the sink holds the first batch").isTrue();
      PublishGate gate = field(batcher, "gate", PublishGate.class);
      @SuppressWarnings("unchecked")
      RingBuffer<SubmissionSlot> ring = field(batcher, "ring", RingBuffer.class);
      long claimed = gate.tryClaim(); // the producer claimed, read the batcher open, and was descheduled
      assertThat(claimed).isNotNegative();

      CloseReport report = batcher.close(Duration.ofMillis(50)); // times out, takes over, skips the claimed slot

      assertThat(report.drained()).isFalse();
      ItemFuture<Object> late = new ItemFuture<>();
      ring.get(claimed).fill("late", late, 0, SubmissionSlot.NOT_STAMPED); // the producer runs again
      ring.publish(claimed);

      assertThat(late).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
          .havingCause().isInstanceOfSatisfying(BatcherClosedException.class,
              closed -> assertThat(closed.isAbandoned()).isTrue());
      assertThat(first).failsWithin(WAIT);
      await().atMost(WAIT).untilAsserted(() -> {
        BatcherStats stats = batcher.stats();
        assertThat(stats.abandoned()).as("both items counted as abandoned in %s", stats).isEqualTo(2);
        assertThat(stats.accepted()).as("accepted == written + failed + abandoned in %s", stats)
            .isEqualTo(stats.written() + stats.failed() + stats.abandoned());
      });
    } finally {
      release.countDown();
    }
  }

  private static <V> V field(Object owner, String name, Class<V> type) throws ReflectiveOperationException {
    Field field = DisruptorBatcher.class.getDeclaredField(name);
    field.setAccessible(true);
    return type.cast(field.get(owner));
  }
}
