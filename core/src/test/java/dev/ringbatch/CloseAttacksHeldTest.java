package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Attacks of the review that the change survived; kept as regression tests. */
class CloseAttacksHeldTest {

  private static Throwable outcome(CompletableFuture<?> f) throws Exception {
    return f.handle((r, t) -> t).get(10, TimeUnit.SECONDS);
  }

  private static Throwable root(Throwable t) {
    return t instanceof java.util.concurrent.CompletionException && t.getCause() != null ? t.getCause() : t;
  }

  /** A retry hands over only the items without a recorded failure, and records map back to the right items. */
  @Test
  @Timeout(30)
  void retryView_indicesMapToTheRightItems() throws Exception {
    CountDownLatch held = new CountDownLatch(1);
    CountDownLatch inFirst = new CountDownLatch(1);
    AtomicInteger calls = new AtomicInteger();
    List<List<Integer>> views = new CopyOnWriteArrayList<>();
    IllegalArgumentException bad = new IllegalArgumentException("item 0 rejected");
    Batcher<Integer, Integer> batcher = Batcher.of("ras-retry", BatcherConfig.builder().ringSize(8).maxBatchSize(8)
        .retryPolicy(RetryPolicy.builder().maxAttempts(2).initialBackoff(Duration.ofMillis(1)).build()).build(),
        batch -> {
          int call = calls.incrementAndGet();
          if (call == 1) {
            inFirst.countDown();
            held.await(10, TimeUnit.SECONDS);
            batch.completeRemaining(0);
            return;
          }
          views.add(new ArrayList<>(batch.items()));
          if (call == 2) {
            batch.fail(0, bad);
            batch.complete(1, 99); // voided by the throw
            throw new java.io.IOException("transient");
          }
          batch.complete(0, 11); // storage item 1
          batch.fail(1, new IllegalStateException("item 2 rejected")); // storage item 2
          batch.completeRemaining(33); // storage item 3
        });
    try {
      batcher.submit(100);
      assertThat(inFirst.await(10, TimeUnit.SECONDS)).isTrue();
      CompletableFuture<Integer> a = batcher.submit(0);
      CompletableFuture<Integer> b = batcher.submit(1);
      CompletableFuture<Integer> c = batcher.submit(2);
      CompletableFuture<Integer> d = batcher.submit(3);
      held.countDown();
      Throwable at = outcome(a);
      assertThat(at).as("views=%s calls=%s a=%s", views, calls.get(), a).isNotNull();
      assertThat(root(at)).isSameAs(bad);
      assertThat(b.get(10, TimeUnit.SECONDS)).isEqualTo(11);
      assertThat(root(outcome(c))).hasMessageContaining("item 2 rejected");
      assertThat(d.get(10, TimeUnit.SECONDS)).isEqualTo(33);
      assertThat(views).containsExactly(List.of(0, 1, 2, 3), List.of(1, 2, 3));
      BatcherStats s = batcher.stats();
      assertThat(s.written() + s.failed()).isEqualTo(s.accepted());
      assertThat(s.failed()).isEqualTo(2);
    } finally {
      batcher.close(Duration.ofSeconds(5));
    }
  }

  /** A close that takes over during a retry backoff keeps the recorded failures and fails the rest "not written". */
  @Test
  @Timeout(30)
  void closeDuringBackoff_keepsRecordedFailures() throws Exception {
    OutcomeUnknownException unknown = new OutcomeUnknownException("item 0 unknown", null);
    CountDownLatch inRetryOn = new CountDownLatch(1);
    AtomicBoolean release = new AtomicBoolean();
    Batcher<Integer, Integer> batcher = Batcher.of("ras-backoff", BatcherConfig.builder().ringSize(8)
        .maxBatchSize(8).linger(Duration.ofMillis(50))
        .retryPolicy(RetryPolicy.builder().maxAttempts(3).retryOn(e -> {
          inRetryOn.countDown();
          while (!release.get()) {
            LockSupport.parkNanos(1_000_000);
          }
          return true;
        }).build()).build(), batch -> {
          batch.fail(0, unknown);
          throw new java.io.IOException("transient");
        });
    CompletableFuture<Integer> a = batcher.submit(0);
    CompletableFuture<Integer> b = batcher.submit(1);
    assertThat(inRetryOn.await(10, TimeUnit.SECONDS)).isTrue();
    CloseReport report = batcher.close(Duration.ofMillis(100));
    release.set(true);
    // a keeps the failure its sink recorded, so it counts as failed; b, which had none, is abandoned
    assertThat(report.abandoned()).isEqualTo(1);
    assertThat(report.stats().failed()).isEqualTo(1);
    assertThat(root(outcome(a))).isSameAs(unknown);
    Throwable bt = root(outcome(b));
    assertThat(bt).isInstanceOf(BatcherClosedException.class);
    assertThat(((BatcherClosedException) bt).isOutcomeUnknown()).isFalse();
    BatcherStats s = report.stats();
    assertThat(s.written() + s.failed() + s.abandoned()).isEqualTo(s.accepted());
  }

  /** Stray interrupts of the consumer (idle, in the sink, in a backoff) lose nothing and stop nothing. */
  @Test
  @Timeout(60)
  void strayInterruptsOfTheConsumer_loseNothing() throws Exception {
    AtomicInteger attempts = new AtomicInteger();
    Batcher<Integer, Integer> batcher = Batcher.of("ras-intr", BatcherConfig.builder().ringSize(64).maxBatchSize(8)
        .linger(Duration.ofMillis(1))
        .retryPolicy(RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ofMillis(2)).build()).build(),
        batch -> {
          if (attempts.incrementAndGet() % 5 == 0) {
            throw new java.io.IOException("transient");
          }
          batch.completeRemaining(1);
        });
    Thread consumer = Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.getName().equals("ringbatch-ras-intr")).findFirst().orElseThrow();
    AtomicBoolean stop = new AtomicBoolean();
    Thread interrupter = new Thread(() -> {
      while (!stop.get()) {
        consumer.interrupt();
        LockSupport.parkNanos(20_000);
      }
    });
    interrupter.start();
    List<CompletableFuture<Integer>> all = new ArrayList<>();
    for (int i = 0; i < 3000; i++) {
      all.add(batcher.submit(i));
    }
    CompletableFuture.allOf(all.toArray(new CompletableFuture<?>[0])).handle((r, t) -> null).get(30, TimeUnit.SECONDS);
    stop.set(true);
    interrupter.join();
    CloseReport report = batcher.close(Duration.ofSeconds(5));
    assertThat(report.drained()).isTrue();
    assertThat(report.written() + report.failed()).isEqualTo(report.stats().accepted());
  }

  /** stats() hammered while producers and a close run: outcomes never exceed accepted. */
  @Test
  @Timeout(60)
  void statsSnapshotsNeverShowMoreOutcomesThanAccepted() throws Exception {
    for (int round = 0; round < 20; round++) {
      Batcher<Integer, Integer> batcher = Batcher.of("ras-stats-" + round, BatcherConfig.builder().ringSize(256)
          .maxBatchSize(16).build(), batch -> batch.completeRemaining(1));
      AtomicBoolean stop = new AtomicBoolean();
      AtomicReference<String> bad = new AtomicReference<>();
      Thread monitor = new Thread(() -> {
        while (!stop.get()) {
          BatcherStats s = batcher.stats();
          if (s.written() + s.failed() + s.abandoned() > s.accepted()) {
            bad.compareAndSet(null, s.toString());
          }
        }
      });
      Thread producer = new Thread(() -> {
        while (!stop.get()) {
          batcher.offer(1);
        }
      });
      monitor.start();
      producer.start();
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5)); // load, not synchronisation
      batcher.close(Duration.ofNanos(round * 50_000L));
      stop.set(true);
      monitor.join();
      producer.join();
      assertThat(bad.get()).isNull();
    }
  }

  /** An async stage completed twice, and one never completed: each item told once, the latter by the close. */
  @Test
  @Timeout(30)
  void asyncStageTwiceAndNever() throws Exception {
    AtomicInteger calls = new AtomicInteger();
    List<CompletableFuture<Object>> stages = new CopyOnWriteArrayList<>();
    Batcher<Integer, Integer> batcher = Batcher.ofAsync("ras-async", BatcherConfig.builder().ringSize(8)
        .maxBatchSize(1).maxInFlightBatches(4).build(), batch -> {
          int call = calls.incrementAndGet();
          batch.completeRemaining(call);
          CompletableFuture<Object> f = new CompletableFuture<>();
          stages.add(f);
          if (call == 1) {
            f.complete(null);
            f.obtrudeValue(null); // fires nothing new
          }
          return f;
        });
    CompletableFuture<Integer> first = batcher.submit(1);
    assertThat(first.get(10, TimeUnit.SECONDS)).isEqualTo(1);
    CompletableFuture<Integer> never = batcher.submit(2);
    CloseReport report = batcher.close(Duration.ofMillis(100));
    assertThat(outcome(never)).isInstanceOf(BatcherClosedException.class);
    stages.forEach(s -> s.complete(null));
    assertThat(report.stats().written() + report.abandoned()).isEqualTo(report.stats().accepted());
    try {
      never.get();
    } catch (ExecutionException expected) {
      assertThat(((BatcherClosedException) expected.getCause()).isOutcomeUnknown()).isTrue();
    }
  }
}
