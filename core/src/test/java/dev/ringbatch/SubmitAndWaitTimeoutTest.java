package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 21, item 1: a caller can bound its wait on a hung sink with {@code submitAndWait(item, timeout)}, and
 * the item whose caller stopped waiting is still written exactly once and counted.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class SubmitAndWaitTimeoutTest {
  private final CountDownLatch release = new CountDownLatch(1);
  private final List<String> written = new CopyOnWriteArrayList<>();
  private Batcher<String, Integer> batcher;

  @AfterEach
  void close() {
    release.countDown();
    if (batcher != null) {
      batcher.close(Duration.ofSeconds(5));
    }
  }

  private BatchSink<String, Integer> hangingSink() {
    return BatchSink.withResults(items -> {
      release.await();
      written.addAll(items);
      return items.stream().map(String::length).toList();
    });
  }

  @Test
  void hungSink_callerGivesUpAfterItsTimeout_itemStillWrittenOnceAndCounted() throws Exception {
    batcher = Batcher.of("hung", BatcherConfig.ofDefaults(), hangingSink());

    assertThatThrownBy(() -> batcher.submitAndWait("abc", Duration.ofMillis(100)))
        .isInstanceOf(TimeoutException.class)
        .hasMessageContaining("batcher 'hung' gave no result for the item within PT0.1S")
        .hasMessageContaining("still written or failed exactly once");
    assertThat(written).as("the sink is still hung").isEmpty();

    release.countDown();
    batcher.flush().get(10, TimeUnit.SECONDS);
    assertThat(written).containsExactly("abc");
    assertThat(batcher.stats().written()).isEqualTo(1);
    assertThat(batcher.stats().failed()).isZero();
  }

  @Test
  void resultWithinTheTimeout_isReturned_andFailuresAreUnwrappedAsWithoutOne() throws Exception {
    batcher = Batcher.of("quick", BatcherConfig.ofDefaults(), BatchSink.withResults(items -> {
      if (items.contains("boom")) {
        throw new IllegalStateException("sink failed");
      }
      return items.stream().map(String::length).toList();
    }));
    assertThat(batcher.submitAndWait("abcd", Duration.ofSeconds(10))).isEqualTo(4);
    assertThatThrownBy(() -> batcher.submitAndWait("boom", Duration.ofSeconds(10)))
        .isInstanceOf(BatchWriteException.class).hasRootCauseMessage("sink failed");
  }

  @Test
  void ringFullUnderBlock_theWaitForRoomIsBoundedByTheTimeoutToo_andTheItemIsNotAccepted() throws Exception {
    batcher = Batcher.of("full", BatcherConfig.builder().ringSize(2).maxBatchSize(1)
        .overflowPolicy(OverflowPolicy.BLOCK).submitTimeout(Duration.ofSeconds(60)).build(), hangingSink());
    batcher.submit("a"); // in the hung sink
    for (int i = 0; i < 2; i++) {
      batcher.submit("b" + i); // fill the ring; the first may already be taken by the consumer
    }
    long acceptedBefore = batcher.stats().accepted();

    assertThatThrownBy(() -> batcher.submitAndWait("late", Duration.ofMillis(50)))
        .isInstanceOfSatisfying(BatcherFullException.class,
            e -> assertThat(e.reason()).isEqualTo(RejectionReason.TIMEOUT))
        .hasMessageContaining("after waiting 50 ms for room");
    assertThat(batcher.stats().accepted()).isEqualTo(acceptedBefore);
    assertThat(batcher.stats().rejected(RejectionReason.TIMEOUT)).isEqualTo(1);
  }

  @Test
  void badTimeout_isRefusedNamingTheValue() {
    batcher = Batcher.of("bad", BatcherConfig.ofDefaults(), hangingSink());
    assertThatThrownBy(() -> batcher.submitAndWait("x", Duration.ofMillis(-1)))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("timeout must not be negative but was PT-0.001S");
    assertThatThrownBy(() -> batcher.submitAndWait("x", null)).isInstanceOf(NullPointerException.class)
        .hasMessage("timeout");
    assertThat(batcher.stats().accepted()).isZero();
  }

  @Test
  void sharded_boundsTheWaitToo() throws Exception {
    batcher = Batcher.sharded("shards", BatcherConfig.ofDefaults(), 2, shard -> hangingSink());
    assertThatThrownBy(() -> batcher.submitAndWait("abc", Duration.ofMillis(50)))
        .isInstanceOf(TimeoutException.class);
    release.countDown();
    batcher.flush().get(10, TimeUnit.SECONDS);
    assertThat(written).containsExactly("abc");
  }
}
