package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BiFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * submitAndWait(item, timeout) bounds the whole call: user code run before the wait for room (a weigher; a sharded
 * batcher's key function) counts against the timeout.
 */
@Timeout(value = 30, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class SubmitAndWaitBoundsUserCodeTest {
  private static final BatcherConfig RING_OF_TWO = BatcherConfig.builder().ringSize(2)
      .limits(BatchLimits.of(1, BatchLimits.NO_BYTE_LIMIT, Duration.ZERO))
      .submitTimeout(Duration.ofSeconds(10)).build();

  /** An expensive weighing or key (serialising, parsing the item): 1 s for the item "slow". */
  private static void slowFor(String item) {
    if (item.equals("slow")) {
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1000));
    }
  }

  @Test
  void slowWeigherAndFullRing_submitAndWaitReturnsWithinItsTimeout() throws Exception {
    assertWithinTimeout("submitAndWait(item, 1 s)", (config, sink) -> Batcher.of("bound", config, item -> {
      slowFor(item);
      return 1;
    }, sink));
  }

  @Test
  void slowKeyFunctionAndFullRing_shardedSubmitAndWaitReturnsWithinItsTimeout() throws Exception {
    assertWithinTimeout("sharded submitAndWait(item, 1 s)", (config, sink) -> Batcher.sharded("bound", config, 1,
        item -> {
          slowFor(item);
          return "k";
        }, shard -> sink));
  }

  private static void assertWithinTimeout(String call,
      BiFunction<BatcherConfig, BatchSink<String, Void>, Batcher<String, Void>> start) throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch entered = new CountDownLatch(1);
    Batcher<String, Void> batcher = start.apply(RING_OF_TWO, BatchSink.noResult(items -> {
      entered.countDown();
      release.await(20, TimeUnit.SECONDS);
    }));
    try {
      batcher.submit("in-sink");
      assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
      batcher.submit("a");
      batcher.submit("b"); // the ring of 2 is full now
      long begin = System.nanoTime();
      Throwable thrown = catchThrowable(() -> batcher.submitAndWait("slow", Duration.ofMillis(1000)));
      long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - begin);

      assertThat(thrown).isInstanceOf(BatcherFullException.class);
      assertThat(tookMillis).as(call + " took").isLessThan(1_600);
    } finally {
      release.countDown();
      batcher.close(Duration.ofSeconds(5));
    }
  }
}
