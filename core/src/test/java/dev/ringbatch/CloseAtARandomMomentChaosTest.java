package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Close at a random moment under load, sync and async, with linger, byte limits and retries; checks after each
 * close: every future completes, the report balances, the sink is not entered after close returned, and no item
 * reaches the sink twice unless a retry was allowed.
 */
class CloseAtARandomMomentChaosTest {

  private static void spinMicros(long micros) {
    long end = System.nanoTime() + micros * 1000;
    while (System.nanoTime() - end < 0) {
      Thread.onSpinWait();
    }
  }

  @Test
  @Timeout(300)
  void closeAtRandomMoments_invariantsHold() throws Exception {
    List<String> problems = new ArrayList<>();
    for (int round = 0; round < 150 && problems.size() < 5; round++) {
      ThreadLocalRandom rnd = ThreadLocalRandom.current();
      boolean async = Boolean.getBoolean("ra.async") ? true : Boolean.getBoolean("ra.sync") ? false : rnd.nextBoolean();
      boolean retry = !async && rnd.nextBoolean();
      int maxBatch = 1 + rnd.nextInt(16);
      Duration linger = rnd.nextBoolean() ? Duration.ZERO : Duration.ofMillis(1);
      long maxBytes = async || rnd.nextBoolean() ? Long.MAX_VALUE : 10 + rnd.nextInt(40);
      AtomicBoolean closeReturned = new AtomicBoolean();
      AtomicInteger afterClose = new AtomicInteger();
      AtomicLong[] seen = new AtomicLong[4096];
      for (int i = 0; i < seen.length; i++) {
        seen[i] = new AtomicLong();
      }
      AtomicInteger failures = new AtomicInteger();
      BatcherConfig.Builder b = BatcherConfig.builder().ringSize(64).maxBatchSize(maxBatch).linger(linger)
          .maxBatchBytes(maxBytes);
      if (retry) {
        b.retryPolicy(RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ofMillis(1)).build());
      }
      if (async) {
        b.maxInFlightBatches(1 + rnd.nextInt(3));
      }
      String name = "ra-chaos-" + round;
      Batcher<Integer, Integer> batcher;
      if (async) {
        batcher = Batcher.ofAsync(name, b.build(), batch -> {
          if (closeReturned.get()) {
            afterClose.incrementAndGet();
          }
          for (int i = 0; i < batch.size(); i++) {
            seen[batch.item(i)].incrementAndGet();
          }
          batch.completeRemaining(1);
          CompletableFuture<Object> f = new CompletableFuture<>();
          int mode = ThreadLocalRandom.current().nextInt(3);
          if (mode == 0) {
            f.complete(null);
          } else {
            CompletableFuture.runAsync(() -> {
              spinMicros(ThreadLocalRandom.current().nextInt(300));
              f.complete(null);
            });
          }
          return f;
        });
      } else {
        batcher = Batcher.of(name, b.build(), (Weigher<Integer>) item -> 1 + item % 7, batch -> {
          if (closeReturned.get()) {
            afterClose.incrementAndGet();
          }
          for (int i = 0; i < batch.size(); i++) {
            seen[batch.item(i)].incrementAndGet();
          }
          spinMicros(ThreadLocalRandom.current().nextInt(200));
          if (ThreadLocalRandom.current().nextInt(4) == 0) {
            failures.incrementAndGet();
            if (ThreadLocalRandom.current().nextBoolean()) {
              batch.fail(0, new OutcomeUnknownException("first unknown", null));
            }
            throw new java.io.IOException("transient");
          }
          batch.completeRemaining(1);
        });
      }
      int n = 500 + rnd.nextInt(2000);
      List<CompletableFuture<Integer>> futures = new ArrayList<>();
      AtomicBoolean stop = new AtomicBoolean();
      Thread producer = new Thread(() -> {
        for (int i = 0; i < n && !stop.get(); i++) {
          CompletableFuture<Integer> f = batcher.submit(i);
          synchronized (futures) {
            futures.add(f);
          }
          if ((i & 31) == 0) {
            LockSupport.parkNanos(1000);
          }
        }
      });
      producer.start();
      spinMicros(rnd.nextInt(3000));
      CloseReport report = batcher.close(Duration.ofNanos(rnd.nextInt(2_000_000)));
      closeReturned.set(true);
      stop.set(true);
      producer.join(10_000);
      List<CompletableFuture<Integer>> all;
      synchronized (futures) {
        all = new ArrayList<>(futures);
      }
      for (CompletableFuture<Integer> f : all) {
        try {
          f.handle((r, t) -> null).get(5, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
          problems.add(name + ": a future never completed; report=" + report + " async=" + async);
          break;
        }
      }
      BatcherStats s = report.stats();
      if (report.written() + report.failed() + report.abandoned() != s.accepted()) {
        problems.add(name + ": report unbalanced " + report + " " + s + " async=" + async);
      }
      if (afterClose.get() > 0) {
        problems.add(name + ": sink entered " + afterClose.get() + " time(s) after close returned; report="
            + report + " async=" + async);
      }
      if (!retry) {
        for (int i = 0; i < seen.length; i++) {
          if (seen[i].get() > 1) {
            problems.add(name + ": item " + i + " handed to the sink " + seen[i].get() + " times, no retry");
            break;
          }
        }
      }
    }
    assertThat(problems).isEmpty();
  }
}
