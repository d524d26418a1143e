package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A sharded batcher's submitAndWait(item, timeout) bounds the whole call: the key function's time (user code run
 * before the shard's wait for room) counts against the timeout, as a weigher's does.
 */
@Timeout(value = 30, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class ShardedSubmitAndWaitSlowKeyTest {

  @Test
  void slowKeyFunctionAndFullRing_submitAndWaitReturnsWithinItsTimeout() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch entered = new CountDownLatch(1);
    Function<String, Object> key = item -> {
      if (item.equals("slow")) {
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1000)); // an expensive key (parsing the item)
      }
      return "k";
    };
    BatcherConfig config = BatcherConfig.builder().ringSize(2)
        .limits(BatchLimits.of(1, BatchLimits.NO_BYTE_LIMIT, Duration.ZERO))
        .submitTimeout(Duration.ofSeconds(10)).build();
    Batcher<String, Void> batcher = Batcher.sharded("bound", config, 1, key,
        shard -> BatchSink.noResult(items -> {
          entered.countDown();
          release.await(20, TimeUnit.SECONDS);
        }));
    try {
      batcher.submit("in-sink");
      assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
      batcher.submit("a");
      batcher.submit("b"); // the ring of 2 is full now
      long start = System.nanoTime();
      Throwable thrown = catchThrowable(() -> batcher.submitAndWait("slow", Duration.ofMillis(1000)));
      long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);

      assertThat(thrown).isInstanceOf(BatcherFullException.class);
      assertThat(tookMillis).as("sharded submitAndWait(item, 1 s) took").isLessThan(1_600);
    } finally {
      release.countDown();
      batcher.close(Duration.ofSeconds(5));
    }
  }
}
