package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.stats.StatsRecorder;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A factory's thread whose {@code start()} (not final: user code) blocks when the close starts its helper: the close
 * does not call it on the closing thread, and returns within its timeout and grace.
 */
@Timeout(value = 30, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class ThreadFactoryOverridingStartTest {

  @Test
  void factoryThreadWhoseStartBlocks_closeStillReturnsWithinTimeoutPlusGrace() throws Exception {
    CountDownLatch never = new CountDownLatch(1);
    AtomicReference<Thread> closingThread = new AtomicReference<>();
    BatcherConfig config = BatcherConfig.builder().threadFactory(r -> {
      Thread t = new Thread(r, "factory-" + r.getClass().getSimpleName()) {
        @Override
        public synchronized void start() {
          if (Thread.currentThread() == closingThread.get()) {
            try {
              never.await(5, TimeUnit.SECONDS); // a slow or stuck start, as an instrumented executor's may be
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
          }
          super.start();
        }
      };
      t.setDaemon(true);
      return t;
    }).build();
    Batcher<String, Void> batcher = Batcher.of("slow-start", config, BatchSink.noResult(items -> { }));
    batcher.addStatsRecorder(new StatsRecorder() { }); // a recorder to tell recordClosed: the helper is started
    batcher.submitAndWait("x");

    closingThread.set(Thread.currentThread());
    long start = System.nanoTime();
    CloseReport report = batcher.close(Duration.ofMillis(100));
    long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    never.countDown();

    assertThat(report.drained()).isTrue();
    assertThat(tookMillis).as("close(100 ms) took; documented bound 100 ms + 200 ms grace (+1 s for a pause)")
        .isLessThan(1_500);
  }
}
