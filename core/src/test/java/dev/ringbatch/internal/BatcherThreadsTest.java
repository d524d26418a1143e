package dev.ringbatch.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.lmax.disruptor.RingBuffer;
import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherClosedException;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.CloseReport;
import dev.ringbatch.internal.ring.ItemFuture;
import dev.ringbatch.internal.ring.PublishGate;
import dev.ringbatch.internal.ring.SubmissionSlot;
import dev.ringbatch.stats.StatsRecorder;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A batcher starts at most two threads in its whole life, its consumer and one close helper, and a sharded one a
 * consumer per shard and one helper; all from its {@code ThreadFactory} when it has one. JFR's {@code jdk.ThreadStart}
 * events record every thread the JVM starts with the stack of the thread that started it, so whatever else runs in
 * this JVM, the threads the library started are those whose starter's stack passes through
 * {@code dev.ringbatch.internal}. Each case lives through every kind of close: drained, and timed out with a batch
 * in the sink, items in the ring, a flush waiting, recorders, and a slot claimed but not published (a straggler).
 */
@Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class BatcherThreadsTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  @TempDir
  Path dir;

  /** What a factory made: the threads, in order. */
  private static final class CountingFactory implements ThreadFactory {
    final Set<String> made = ConcurrentHashMap.newKeySet();
    final AtomicInteger count = new AtomicInteger();

    @Override
    public Thread newThread(Runnable r) {
      Thread t = new Thread(r, "threads-test-" + count.getAndIncrement());
      t.setDaemon(true);
      made.add(t.getName()); // unique: a counter names them
      return t;
    }
  }

  @Test
  void aDrainedClose_startsTheConsumerOnly() throws Exception {
    List<RecordedEvent> started = startedByTheLibrary(() -> {
      Batcher<Integer, Integer> batcher = Batcher.of("threads-drained", BatcherConfig.ofDefaults(),
          batch -> batch.completeRemaining(1));
      assertThat(batcher.submit(1)).succeedsWithin(WAIT);
      assertThat(batcher.close(WAIT).drained()).isTrue();
    });
    assertThat(started).as(describe(started)).hasSize(1);
  }

  @Test
  void aTimedOutCloseWithEveryKindOfUserCode_startsTwoThreads() throws Exception {
    List<RecordedEvent> started = startedByTheLibrary(() -> closeTakingOverEverything("threads-single", null, 1));
    assertThat(started).as(describe(started)).hasSize(2);
  }

  @Test
  void aTimedOutCloseWithAThreadFactory_startsOnlyTheFactorysTwoThreads() throws Exception {
    CountingFactory factory = new CountingFactory();
    List<RecordedEvent> started = startedByTheLibrary(() -> closeTakingOverEverything("threads-factory", factory, 1));
    assertThat(started).as(describe(started)).hasSize(2);
    assertThat(started).as("every thread started came from the factory: " + describe(started))
        .allSatisfy(e -> assertThat(factory.made).contains(e.getThread("thread").getJavaName()));
    assertThat(factory.count).as("the factory made the consumer and the close helper").hasValue(2);
  }

  @Test
  void aShardedBatchersTimedOutClose_startsOneThreadPerShardAndOneHelper() throws Exception {
    CountingFactory factory = new CountingFactory();
    List<RecordedEvent> started = startedByTheLibrary(() -> closeTakingOverEverything("threads-sharded", factory, 3));
    assertThat(started).as(describe(started)).hasSize(3 + 1);
    assertThat(started).as("every thread started came from the factory: " + describe(started))
        .allSatisfy(e -> assertThat(factory.made).contains(e.getThread("thread").getJavaName()));
  }

  /**
   * A batcher of {@code shards} shards (1: a plain one) whose sink holds its first batch while items wait in the ring,
   * a flush waits and a slot is claimed but not published; closed with a short timeout, so that the close takes
   * over and runs every kind of user code after its report. Every future is told.
   */
  private static void closeTakingOverEverything(String name, ThreadFactory factory, int shards) throws Exception {
    CountDownLatch inSink = new CountDownLatch(shards);
    CountDownLatch release = new CountDownLatch(1);
    BatcherConfig.Builder config = BatcherConfig.builder().ringSize(8).maxBatchSize(1);
    if (factory != null) {
      config.threadFactory(factory);
    }
    BatchSink<Integer, Integer> sink = batch -> {
      inSink.countDown();
      release.await(30, TimeUnit.SECONDS);
      batch.completeRemaining(1);
    };
    Batcher<Integer, Integer> batcher = shards == 1 ? Batcher.of(name, config.build(), sink)
        : Batcher.sharded(name, config.build(), shards, s -> sink);
    CompletableFuture<Long> abandoned = new CompletableFuture<>();
    CompletableFuture<CloseReport> closed = new CompletableFuture<>();
    batcher.addStatsRecorder(new StatsRecorder() {
      @Override
      public void recordAbandoned(long count) {
        abandoned.complete(count);
      }

      @Override
      public void recordClosed(CloseReport report) {
        closed.complete(report);
      }
    });
    try {
      List<CompletableFuture<Integer>> items = new ArrayList<>();
      for (int i = 0; i < 2 * shards; i++) {
        items.add(batcher.submit(i));
      }
      assertThat(inSink.await(10, TimeUnit.SECONDS)).as("every shard's sink holds a batch").isTrue();
      CompletableFuture<Void> flush = batcher.flush();
      Batcher<?, ?> first = shards == 1 ? batcher : ((ShardedBatcher<?, ?>) batcher).shard(0);
      PublishGate gate = field(first, "gate", PublishGate.class);
      @SuppressWarnings("unchecked")
      RingBuffer<SubmissionSlot> ring = field(first, "ring", RingBuffer.class);
      long claimed = gate.tryClaim(); // a producer descheduled between its claim and its publish
      assertThat(claimed).isNotNegative();

      CloseReport report = batcher.close(Duration.ofMillis(50));

      assertThat(report.drained()).isFalse();
      ItemFuture<Object> late = new ItemFuture<>();
      ring.get(claimed).fill("late", late, 0, SubmissionSlot.NOT_STAMPED);
      ring.publish(claimed);
      assertThat(late).as("the straggler is failed").failsWithin(WAIT).withThrowableOfType(java.util.concurrent.ExecutionException.class);
      for (CompletableFuture<Integer> item : items) {
        assertThat(item).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
            .withCauseInstanceOf(BatcherClosedException.class);
      }
      assertThat(flush).failsWithin(WAIT).withThrowableOfType(java.util.concurrent.ExecutionException.class);
      assertThat(abandoned).succeedsWithin(WAIT);
      assertThat(closed).succeedsWithin(WAIT);
    } finally {
      release.countDown();
    }
  }

  /** The platform threads the library started while {@code life} ran, each a {@code jdk.ThreadStart} event. */
  private List<RecordedEvent> startedByTheLibrary(ThrowingRunnable life) throws Exception {
    Path file = dir.resolve("threads.jfr");
    try (Recording recording = new Recording()) {
      recording.enable("jdk.ThreadStart").withStackTrace();
      recording.start();
      life.run();
      recording.stop();
      recording.dump(file);
    }
    List<RecordedEvent> started = new ArrayList<>();
    for (RecordedEvent event : RecordingFile.readAllEvents(file)) {
      if (event.getEventType().getName().equals("jdk.ThreadStart") && startedInTheLibrary(event)) {
        started.add(event);
      }
    }
    Files.deleteIfExists(file);
    return started;
  }

  private static boolean startedInTheLibrary(RecordedEvent event) {
    if (event.getStackTrace() == null) {
      return false;
    }
    for (RecordedFrame frame : event.getStackTrace().getFrames()) {
      String type = frame.getMethod().getType().getName();
      if (type.startsWith("dev.ringbatch.internal.") && !type.endsWith("Test") && !type.contains("Test$")) {
        return true;
      }
    }
    return false;
  }

  private static String describe(List<RecordedEvent> started) {
    StringBuilder s = new StringBuilder("threads started by the library:");
    for (RecordedEvent e : started) {
      s.append(' ').append(e.getThread("thread").getJavaName());
    }
    return s.toString();
  }

  private static <V> V field(Object owner, String name, Class<V> type) throws ReflectiveOperationException {
    Field f = DisruptorBatcher.class.getDeclaredField(name);
    f.setAccessible(true);
    return type.cast(f.get(owner));
  }

  @FunctionalInterface
  private interface ThrowingRunnable {
    void run() throws Exception;
  }
}
