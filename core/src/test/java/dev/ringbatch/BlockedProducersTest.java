package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Producers blocked on a full ring under {@code BLOCK} (issue 14, item 1): they park until the consumer frees
 * room, burning no CPU however long they wait, and every one of them is woken when room comes back.
 */
@Timeout(60)
class BlockedProducersTest {
  private static final int PRODUCERS = 16;
  private final CountDownLatch sinkGate = new CountDownLatch(1);
  private final List<Thread> producers = new ArrayList<>();
  private Batcher<Integer, Integer> batcher;

  @AfterEach
  void release() throws InterruptedException {
    sinkGate.countDown();
    if (batcher != null) {
      batcher.close(Duration.ofSeconds(10));
    }
    for (Thread t : producers) {
      t.join(10_000);
    }
  }

  private Batcher<Integer, Integer> heldBatcher() {
    CountDownLatch entered = new CountDownLatch(1);
    batcher = Batcher.of("held", BatcherConfig.builder().ringSize(16).maxBatchSize(16)
        .overflowPolicy(OverflowPolicy.BLOCK).submitTimeout(BatcherConfig.NO_TIMEOUT).build(),
        (Batch<Integer, Integer> batch) -> {
          entered.countDown();
          if (!sinkGate.await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("the test never opened the sink");
          }
          batch.completeRemaining(0);
        });
    batcher.offer(-1); // the consumer takes it and holds in the sink: from now on nothing frees room
    try {
      assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
    } catch (InterruptedException e) {
      throw new AssertionError(e);
    }
    for (int i = 0; i < 16; i++) {
      assertThat(batcher.offer(i)).isTrue(); // fills the ring
    }
    return batcher;
  }

  @Test
  void blockedProducers_burnNoCpu_andAllAreWokenWhenRoomComesBack() throws Exception {
    org.junit.jupiter.api.Assumptions.assumeTrue(Files.isDirectory(Path.of("/proc/self/task")),
        "per-thread CPU is read from Linux's /proc");
    Batcher<Integer, Integer> b = heldBatcher();
    List<CompletableFuture<Integer>> results = new ArrayList<>();
    for (int p = 0; p < PRODUCERS; p++) {
      CompletableFuture<Integer> result = new CompletableFuture<>();
      results.add(result);
      int item = 100 + p;
      Thread t = new Thread(() -> b.submit(item).whenComplete((r, e) -> {
        if (e != null) {
          result.completeExceptionally(e);
        } else {
          result.complete(r);
        }
      }), "blocked-" + p);
      producers.add(t);
      t.start();
    }
    Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> producers.stream()
        .allMatch(t -> t.getState() == Thread.State.WAITING || t.getState() == Thread.State.TIMED_WAITING));

    // Checks that something does not happen. First, for 500 ms, no blocked producer is ever seen running
    // (polling every 50 us, as before, they always were); then the producers' own threads use no CPU for
    // 500 ms (16 polling producers took about half a core). Their CPU is read per thread from /proc (Linux),
    // not for the whole process, whose JIT and other tests' threads are no business of this test.
    Awaitility.await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(5))
        .pollInterval(Duration.ofMillis(1))
        .until(() -> producers.stream().noneMatch(t -> t.getState() == Thread.State.RUNNABLE));
    long before = producersCpuTicks();
    Awaitility.await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(5))
        .until(() -> producersCpuTicks() - before <= 1); // clock ticks of 10 ms: at most one, for all 16

    sinkGate.countDown();
    for (CompletableFuture<Integer> result : results) {
      assertThat(result).succeedsWithin(Duration.ofSeconds(10)).isEqualTo(0);
    }
    assertThat(b.stats().rejected(RejectionReason.TIMEOUT)).isZero();
  }

  @Test
  void close_wakesBlockedProducers_whoAreToldItIsClosed() throws Exception {
    Batcher<Integer, Integer> b = heldBatcher();
    CompletableFuture<Throwable> refused = new CompletableFuture<>();
    startBlocked(b, refused);

    CompletableFuture<CloseReport> closing = CompletableFuture.supplyAsync(() -> b.close(Duration.ofSeconds(10)));

    assertThat(refused).succeedsWithin(Duration.ofSeconds(5)).isInstanceOf(BatcherClosedException.class);
    sinkGate.countDown();
    assertThat(closing).succeedsWithin(Duration.ofSeconds(15));
  }

  @Test
  void interruptedBlockedProducer_isToldInterrupted() throws Exception {
    Batcher<Integer, Integer> b = heldBatcher();
    CompletableFuture<Throwable> refused = new CompletableFuture<>();
    Thread t = startBlocked(b, refused);

    t.interrupt();

    assertThat(refused).succeedsWithin(Duration.ofSeconds(5)).isInstanceOfSatisfying(BatcherFullException.class,
        e -> assertThat(e.reason()).isEqualTo(RejectionReason.INTERRUPTED));
  }

  /** Starts a producer that blocks on the full ring; its outcome (null or the failure) goes to {@code outcome}. */
  private Thread startBlocked(Batcher<Integer, Integer> b, CompletableFuture<Throwable> outcome) {
    Thread t = new Thread(() -> b.submit(7).whenComplete((r, e) -> outcome.complete(e)), "blocked");
    producers.add(t);
    t.start();
    Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> t.getState() == Thread.State.WAITING
        || t.getState() == Thread.State.TIMED_WAITING);
    return t;
  }

  /**
   * CPU time (utime + stime, in clock ticks) of this JVM's threads named {@code blocked-*}: HotSpot names each
   * native thread after its Java thread, and Linux shows it in {@code /proc/self/task/<tid>/comm}.
   */
  private static long producersCpuTicks() throws IOException {
    long ticks = 0;
    try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Path.of("/proc/self/task"))) {
      for (Path task : tasks) {
        try {
          if (Files.readString(task.resolve("comm")).trim().startsWith("blocked-")) {
            String stat = Files.readString(task.resolve("stat"));
            String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            ticks += Long.parseLong(fields[11]) + Long.parseLong(fields[12]); // stat fields 14 and 15
          }
        } catch (NoSuchFileException ended) {
          // a thread of another test ended meanwhile: not one of ours, which are all parked
        }
      }
    }
    return ticks;
  }
}
