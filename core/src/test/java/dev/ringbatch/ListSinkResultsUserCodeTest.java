package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.AbstractList;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Second hostile review: the results list a {@link BatchSink#withResults} writer returns is user code too. The
 * SyncBatchWriter reads it ({@code size()} in ListSink.misfit, {@code get(i)} in PendingBatch.recordAll) after
 * the writer returned, i.e. after the items were written.
 */
class ListSinkResultsUserCodeTest {
  private final List<Runnable> cleanups = new CopyOnWriteArrayList<>();

  @AfterEach
  void cleanup() {
    cleanups.forEach(Runnable::run);
  }

  /** A list of {@code size} results whose get() throws: the writer returned normally, so the items were written. */
  private static final class ThrowingResults extends AbstractList<Integer> {
    private final int size;

    ThrowingResults(int size) {
      this.size = size;
    }

    @Override
    public Integer get(int index) {
      throw new IllegalStateException("results list get() failed (e.g. a lazy, closed cursor)");
    }

    @Override
    public int size() {
      return size;
    }
  }

  /**
   * DUPLICATE: the writer wrote the items and returned; reading its results list throws inside
   * PendingBatch.recordAll, which SyncBatchWriter.attempt catches as if the sink had thrown: the batch is retried
   * and the items the writer already wrote are handed to it again (a wrong-size list is failed without retry for
   * exactly this reason).
   */
  @Test
  @Timeout(30)
  void resultsListWhoseGetThrows_writtenItemsAreHandedToTheWriterAgain() throws Exception {
    List<Integer> seen = Collections.synchronizedList(new ArrayList<>());
    Batcher<Integer, Integer> batcher = Batcher.of("sr-ls1", BatcherConfig.builder().ringSize(8).maxBatchSize(8)
        .retryPolicy(RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ofMillis(1)).build()).build(),
        BatchSink.<Integer, Integer>withResults(items -> {
          seen.addAll(items); // written
          return new ThrowingResults(items.size());
        }));
    cleanups.add(() -> batcher.close(Duration.ofMillis(100)));
    CompletableFuture<Integer> item = batcher.submit(5);
    item.handle((r, t) -> null).get(10, TimeUnit.SECONDS);
    assertThat(seen).as("items handed to the writer; outcome=%s", item).containsExactly(5);
  }

  /**
   * HANG: the results list's get() blocks. PendingBatch.recordAll calls it while holding the batch's monitor;
   * close(200 ms) times out, takes over (the consumer is CALLING_OUT) and SyncBatchWriter.failInFlight calls
   * batch.seal(), synchronized on the same monitor: close blocks for as long as the user's get() does.
   */
  @Test
  @Timeout(60)
  void resultsListWhoseGetBlocks_closeWithTimeoutHangs() throws Exception {
    CountDownLatch inGet = new CountDownLatch(1);
    CountDownLatch releaseGet = new CountDownLatch(1);
    cleanups.add(releaseGet::countDown);
    Batcher<Integer, Integer> batcher = Batcher.of("sr-ls2", BatcherConfig.builder().ringSize(8).maxBatchSize(8)
        .build(), BatchSink.<Integer, Integer>withResults(items -> new AbstractList<Integer>() {
          @Override
          public Integer get(int index) {
            inGet.countDown();
            boolean done = false;
            while (!done) {
              try {
                done = releaseGet.await(30, TimeUnit.SECONDS);
                done = true;
              } catch (InterruptedException ignored) {
                // a stuck driver ignoring interrupts
              }
            }
            return 1;
          }

          @Override
          public int size() {
            return items.size();
          }
        }));
    CompletableFuture<Integer> item = batcher.submit(5);
    assertThat(inGet.await(10, TimeUnit.SECONDS)).isTrue();
    ExecutorService closer = Executors.newSingleThreadExecutor();
    cleanups.add(closer::shutdownNow);
    long start = System.nanoTime();
    java.util.concurrent.atomic.AtomicReference<Thread> closing = new java.util.concurrent.atomic.AtomicReference<>();
    Future<CloseReport> report = closer.submit(() -> {
      closing.set(Thread.currentThread());
      return batcher.close(Duration.ofMillis(200));
    });
    CloseReport r = null;
    try {
      r = report.get(5, TimeUnit.SECONDS);
    } catch (java.util.concurrent.TimeoutException hang) {
      // fall through: asserted below
    }
    long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    StringBuilder stack = new StringBuilder();
    Thread c = closing.get();
    if (c != null) {
      for (StackTraceElement e : c.getStackTrace()) {
        stack.append("\n    at ").append(e);
        if (stack.length() > 600) {
          break;
        }
      }
    }
    assertThat(r).as("close(200ms) returned within 5 s (waited %d ms); item=%s; closing thread:%s", ms, item, stack)
        .isNotNull();
  }
}
