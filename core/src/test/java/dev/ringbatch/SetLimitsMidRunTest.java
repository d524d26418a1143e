package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** setLimits applies from the consumer's next item on, within a run of items already in the ring too. */
@Timeout(value = 30, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class SetLimitsMidRunTest {

  @Test
  void setLimitsWhileSinkWrites_appliesToTheItemsTakenAfterIt() throws Exception {
    List<List<Integer>> batches = new CopyOnWriteArrayList<>();
    LinkedBlockingQueue<List<Integer>> entered = new LinkedBlockingQueue<>();
    CountDownLatch first = new CountDownLatch(1);
    CountDownLatch second = new CountDownLatch(1);
    BatchSink<Integer, Void> sink = BatchSink.noResult(items -> {
      List<Integer> copy = List.copyOf(items);
      batches.add(copy);
      entered.add(copy);
      if (batches.size() == 1) {
        first.await(10, TimeUnit.SECONDS);
      } else if (batches.size() == 2) {
        second.await(10, TimeUnit.SECONDS);
      }
    });
    BatcherConfig config = BatcherConfig.builder().ringSize(64)
        .limits(BatchLimits.of(4, BatchLimits.NO_BYTE_LIMIT, Duration.ZERO)).build();
    try (Batcher<Integer, Void> batcher = Batcher.of("limits", config, sink)) {
      List<CompletableFuture<Void>> futures = new ArrayList<>();
      futures.add(batcher.submit(0));
      assertThat(entered.poll(10, TimeUnit.SECONDS)).containsExactly(0);
      for (int i = 1; i <= 12; i++) {
        futures.add(batcher.submit(i)); // all published while the sink holds item 0: one run for the consumer
      }
      first.countDown();
      assertThat(entered.poll(10, TimeUnit.SECONDS)).containsExactly(1, 2, 3, 4);
      batcher.setLimits(BatchLimits.of(1, BatchLimits.NO_BYTE_LIMIT, Duration.ZERO)); // items 5..12 not taken yet
      assertThat(batcher.limits().maxBatchSize()).isEqualTo(1);
      second.countDown();
      CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).get(10, TimeUnit.SECONDS);

      assertThat(batches.subList(2, batches.size()))
          .as("batches of the items taken after setLimits(maxBatchSize=1) returned")
          .allSatisfy(b -> assertThat(b).hasSize(1));
    }
  }
}
