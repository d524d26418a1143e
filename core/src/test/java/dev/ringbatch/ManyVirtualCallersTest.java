package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.Timeout;

/** Review 22: 10,000 virtual callers in submitAndWait against the gather; every caller answered, nothing spins idle. */
@Timeout(300)
class ManyVirtualCallersTest {
  private ExecutorService callers;
  private Batcher<Integer, Integer> batcher;
  private final AtomicReference<Thread> consumer = new AtomicReference<>();

  enum Setup { DEFAULT, LINGER, MAX_BATCH_1, SLOW_SINK, THROWING_SINK, YIELDING, SMALL_RING }

  @BeforeEach
  void virtualThreads() {
    try {
      callers = (ExecutorService) java.util.concurrent.Executors.class
          .getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
    } catch (ReflectiveOperationException e) {
      Assumptions.abort("virtual threads need JDK 21+");
    }
  }

  @AfterEach
  void stop() throws InterruptedException {
    if (batcher != null) {
      batcher.close(Duration.ofSeconds(10));
    }
    if (callers != null) { // null on JDK 17: the test was skipped
      callers.shutdownNow();
      assertThat(callers.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
    }
  }

  @ParameterizedTest
  @EnumSource(Setup.class)
  void tenThousandVirtualCallers_eachAnswered_andTheConsumerIdlesWithoutSpinning(Setup setup) throws Exception {
    int callerCount = 10_000;
    int calls = setup == Setup.MAX_BATCH_1 || setup == Setup.SLOW_SINK ? 3 : 10;
    BatcherConfig.Builder config = BatcherConfig.builder().ringSize(setup == Setup.SMALL_RING ? 64 : 1024)
        .maxBatchSize(setup == Setup.MAX_BATCH_1 ? 1 : setup == Setup.SMALL_RING ? 64 : 512)
        .overflowPolicy(OverflowPolicy.BLOCK).submitTimeout(BatcherConfig.NO_TIMEOUT)
        .threadFactory(r -> {
          Thread t = new Thread(r, "review22-consumer");
          consumer.compareAndSet(null, t); // the first thread made is the consumer, then the close helper
          return t;
        });
    if (setup == Setup.LINGER) {
      config.linger(Duration.ofMillis(1));
    }
    if (setup == Setup.YIELDING) {
      config.waitMode(WaitMode.YIELDING);
    }
    AtomicLong sinkCalls = new AtomicLong();
    batcher = Batcher.of("review22-virtual-" + setup, config.build(), (Batch<Integer, Integer> batch) -> {
      long n = sinkCalls.incrementAndGet();
      if (setup == Setup.SLOW_SINK) {
        long until = System.nanoTime() + 50_000;
        while (System.nanoTime() < until) {
          Thread.onSpinWait();
        }
      }
      if (setup == Setup.THROWING_SINK && n % 7 == 0) {
        throw new IllegalStateException("sink fails batch " + n);
      }
      for (int i = 0; i < batch.size(); i++) {
        batch.complete(i, batch.item(i) * 2 + 1);
      }
    });
    Queue<String> wrong = new ConcurrentLinkedQueue<>();
    AtomicLong failures = new AtomicLong();
    List<Future<?>> running = new ArrayList<>();
    for (int c = 0; c < callerCount; c++) {
      int first = c * calls;
      running.add(callers.submit(() -> {
        for (int item = first; item < first + calls; item++) {
          try {
            int result = batcher.submitAndWait(item, Duration.ofSeconds(60));
            if (result != 2 * item + 1) {
              wrong.add("item " + item + " got " + result);
            }
          } catch (BatchWriteException e) {
            failures.incrementAndGet();
          } catch (java.util.concurrent.TimeoutException e) {
            wrong.add("item " + item + " timed out: " + e);
          }
          if (ThreadLocalRandom.current().nextInt(8) == 0) {
            Thread.yield();
          }
        }
        return null;
      }));
    }
    for (Future<?> caller : running) {
      caller.get(200, TimeUnit.SECONDS);
    }
    assertThat(wrong).as("wrong or missing results").isEmpty();
    BatcherStats stats = batcher.stats();
    assertThat(stats.written() + stats.failed()).isEqualTo((long) callerCount * calls);
    assertThat(stats.failed()).isEqualTo(failures.get());

    // Idle now: the consumer must not burn CPU.
    Object mx = Class.forName("java.lang.management.ManagementFactory").getMethod("getThreadMXBean").invoke(null);
    java.lang.reflect.Method cpuTime = Class.forName("java.lang.management.ThreadMXBean")
        .getMethod("getThreadCpuTime", long.class);
    long id = consumer.get().getId();
    long cpu0 = (Long) cpuTime.invoke(mx, id);
    long wall0 = System.nanoTime();
    java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(500)); // a measuring window
    long cpu = (Long) cpuTime.invoke(mx, id) - cpu0;
    long wall = System.nanoTime() - wall0;
    if (setup != Setup.YIELDING) {
      assertThat(cpu).as("consumer CPU ns while idle for %d ns", wall).isLessThan(wall / 10);
    }
    assertThat(batcher.flush()).succeedsWithin(Duration.ofSeconds(10));
  }
}
