package dev.ringbatch.internal.close;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.lmax.disruptor.RingBuffer;
import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherClosedException;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.BatcherStats;
import dev.ringbatch.CloseReport;
import dev.ringbatch.internal.DisruptorBatcher;
import dev.ringbatch.internal.consume.CoalescingConsumer;
import dev.ringbatch.internal.ring.ItemFuture;
import dev.ringbatch.internal.ring.PublishGate;
import dev.ringbatch.internal.ring.SubmissionSlot;
import dev.ringbatch.stats.StatsRecorder;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A producer descheduled between its claim and its publish (no user code runs there, but the OS may stop a thread
 * anywhere) while a close times out and takes over. The close waits 200 ms for the slot and then must return; the
 * item the producer publishes afterwards was accepted (the producer read the batcher open before it paused), so
 * its caller must still be told. Before the fix the close only logged "its item, if accepted, is not failed by
 * this close" and the caller waited for ever. The test plays the producer itself: it claims a slot and publishes
 * it later, exactly as {@code PublishGate.publish} does after reading the batcher open. The review of the first
 * fix added the report, flush, recorder and no-thread cases.
 */
@Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class CloseStragglerTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  private final CountDownLatch release = new CountDownLatch(1);

  @AfterEach
  void releaseSinks() {
    release.countDown();
  }

  /** The parts of a batcher a test plays the descheduled producer with. */
  private record Producer(PublishGate gate, RingBuffer<SubmissionSlot> ring) {
    @SuppressWarnings("unchecked")
    static Producer of(Batcher<?, ?> batcher) throws ReflectiveOperationException {
      return new Producer(field(batcher, "gate", PublishGate.class), field(batcher, "ring", RingBuffer.class));
    }

    /** Claims a slot, as a producer does before it reads the batcher open and is descheduled. */
    long claim() {
      long claimed = gate.tryClaim();
      assertThat(claimed).isNotNegative();
      return claimed;
    }

    /** The producer runs again and publishes the item it accepted. */
    ItemFuture<Object> publish(long claimed) {
      return publish(claimed, new ItemFuture<>());
    }

    ItemFuture<Object> publish(long claimed, ItemFuture<Object> late) {
      ring.get(claimed).fill("late", late, 0, SubmissionSlot.NOT_STAMPED);
      ring.publish(claimed);
      return late;
    }
  }

  @Test
  void itemPublishedAfterAnAbandoningCloseFailsAsAbandoned_onAThreadTheCloseDoesNotWaitFor() throws Exception {
    CountDownLatch inSink = new CountDownLatch(1);
    Batcher<String, Void> batcher = Batcher.of("straggler", BatcherConfig.builder().build(),
        BatchSink.noResult(items -> {
          inSink.countDown();
          release.await(30, SECONDS);
        }));
    CompletableFuture<Void> first = batcher.submit("first");
    assertThat(inSink.await(10, SECONDS)).as("the sink holds the first batch").isTrue();
    Producer producer = Producer.of(batcher);
    long claimed = producer.claim();

    CloseReport report = batcher.close(Duration.ofMillis(50)); // times out, takes over, cannot read the slot

    assertThat(report.drained()).isFalse();
    ItemFuture<Object> late = new ItemFuture<>();
    CompletableFuture<String> toldOn = late.handle((value, failure) -> Thread.currentThread().getName());
    producer.publish(claimed, late);
    // toldOn first: a thread waiting on 'late' itself may run late's dependent actions (CompletableFuture's
    // waiters help complete them), which would name the test thread instead of the one that failed the item
    assertThat(toldOn).succeedsWithin(WAIT).isEqualTo("ringbatch-straggler-close"); // the close helper, last after its user code
    assertThat(late).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
        .havingCause().isInstanceOfSatisfying(BatcherClosedException.class,
            closed -> assertThat(closed.isAbandoned()).isTrue());
    assertThat(first).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
        .havingCause().isInstanceOf(BatcherClosedException.class);
    await().atMost(WAIT).untilAsserted(() -> {
      BatcherStats stats = batcher.stats();
      assertThat(stats.abandoned()).as("both items counted as abandoned in %s", stats).isEqualTo(2);
      assertThat(stats.accepted()).as("accepted == written + failed + abandoned in %s", stats)
          .isEqualTo(stats.written() + stats.failed() + stats.abandoned());
    });
  }

  /** Only a straggler is left: the close must not report a clean drain, nor a flush say its items were written. */
  @Test
  void onlyAStraggler_reportIsNotDrainedAndFlushFails() throws Exception {
    Batcher<String, Void> batcher = idle("straggler-flush");
    Producer producer = Producer.of(batcher);
    long claimed = producer.claim();
    CompletableFuture<Void> flush = batcher.flush(); // covers the claimed item

    CloseReport report = batcher.close(Duration.ofMillis(50));

    assertThat(report.drained()).as("report %s", report).isFalse();
    assertThat(flush).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
        .havingCause().isInstanceOf(BatcherClosedException.class);
    assertThat(batcher.flush()).as("a flush after the close").failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
        .havingCause().isInstanceOf(BatcherClosedException.class);
    ItemFuture<Object> late = producer.publish(claimed);
    assertThat(late).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
        .havingCause().isInstanceOf(BatcherClosedException.class);
    await().atMost(WAIT).untilAsserted(() -> assertThat(batcher.stats().abandoned()).isEqualTo(1));
  }

  /**
   * The late item's dependent action is user code, run on the watch thread: one that calls back into the closed
   * batcher (close, flush().join(), submitAndWait, stats) finds it closed, is answered at once, and sees its own
   * item counted.
   */
  @Test
  void aLateItemsDependentActionCallingBackFindsTheBatcherClosedAndItsItemCounted() throws Exception {
    Batcher<String, Void> batcher = idle("straggler-callback");
    Producer producer = Producer.of(batcher);
    long claimed = producer.claim();
    CloseReport report = batcher.close(Duration.ofMillis(50));

    ItemFuture<Object> late = new ItemFuture<>();
    CompletableFuture<String> callback = late.handle((value, failure) -> {
      CloseReport again = batcher.close(Duration.ofSeconds(5));
      boolean flushFailed = batcher.flush().handle((v, t) -> t != null).join();
      String submitted;
      try {
        batcher.submitAndWait("from the callback");
        submitted = "accepted";
      } catch (BatcherClosedException refused) {
        submitted = "refused";
      } catch (InterruptedException e) {
        submitted = "interrupted";
      }
      BatcherStats stats = batcher.stats();
      return (again == report) + " " + flushFailed + " " + submitted + " abandoned=" + stats.abandoned();
    });
    producer.publish(claimed, late);

    assertThat(callback).succeedsWithin(WAIT).isEqualTo("true true refused abandoned=1");
  }

  /** A straggler that turns out a tombstone (the producer read the batcher closing) is nobody's item. */
  @Test
  void stragglerThatBecomesATombstoneCountsNothing() throws Exception {
    Batcher<String, Void> batcher = idle("straggler-tombstone");
    Producer producer = Producer.of(batcher);
    long claimed = producer.claim();
    batcher.close(Duration.ofMillis(50));

    ItemFuture<Object> refused = new ItemFuture<>();
    assertThat(producer.gate().publish(claimed, "late", refused, 0, SubmissionSlot.NOT_STAMPED))
        .as("the batcher is closed: published as a tombstone").isFalse();

    await().atMost(WAIT).untilAsserted(() -> {
      BatcherStats stats = batcher.stats();
      assertThat(stats.accepted()).as("%s", stats).isZero();
      assertThat(stats.abandoned()).as("%s", stats).isZero();
    });
    assertThat(refused).isNotDone(); // the producer tells its caller itself (REJECTED_CLOSED)
  }

  /** The recorders heard recordClosed already: a straggler is counted in stats() but not told to them. */
  @Test
  void recordersAreNotToldAfterRecordClosed() throws Exception {
    List<String> calls = new CopyOnWriteArrayList<>();
    Batcher<String, Void> batcher = idle("straggler-recorder");
    batcher.addStatsRecorder(new StatsRecorder() {
      @Override
      public void recordAbandoned(long count) {
        calls.add("abandoned " + count);
      }

      @Override
      public void recordClosed(CloseReport report) {
        calls.add("closed");
      }
    });
    Producer producer = Producer.of(batcher);
    long claimed = producer.claim();
    batcher.close(Duration.ofMillis(50));
    await().atMost(WAIT).until(() -> calls.contains("closed"));

    assertThat(producer.publish(claimed)).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
        .havingCause().isInstanceOf(BatcherClosedException.class);

    await().atMost(WAIT).untilAsserted(() -> assertThat(batcher.stats().abandoned()).isEqualTo(1));
    assertThat(calls).containsExactly("closed");
  }

  /**
   * The close helper cannot be started (out of memory or threads; played by a factory's thread whose start() throws
   * as the JDK does then): a thread of the close's own runs its user code; the close still must not wait for the
   * producer, and keeps its caller's interrupt. The producer publishes only after close() returned.
   */
  @Test
  void helperThatCannotStart_closeDoesNotWaitForTheProducerAndKeepsItsInterrupt() throws Exception {
    AtomicInteger refused = new AtomicInteger();
    CompletableFuture<CloseReport> recorded = new CompletableFuture<>();
    Batcher<String, Void> batcher = Batcher.of("straggler-nothread", BatcherConfig.builder().threadFactory(r -> {
      boolean consumer = r.getClass().getSimpleName().equals("CoalescingConsumer");
      Thread t = consumer ? new Thread(r, "straggler-nothread-consumer") : new Thread(r, "straggler-nothread-close") {
        @Override
        public synchronized void start() {
          refused.incrementAndGet();
          throw new OutOfMemoryError("unable to create native thread: possibly out of memory or process/resource"
              + " limits reached");
        }
      };
      t.setDaemon(true);
      return t;
    }).build(), BatchSink.noResult(items -> { }));
    batcher.addStatsRecorder(new StatsRecorder() {
      @Override
      public void recordClosed(CloseReport report) {
        recorded.complete(report);
      }
    });
    Producer producer = Producer.of(batcher);
    long claimed = producer.claim();
    Thread.currentThread().interrupt();
    CloseReport report = batcher.close(Duration.ofMillis(50));
    boolean interruptKept = Thread.interrupted();
    producer.publish(claimed); // after the close returned: a close that waited for it would never have

    assertThat(refused.get()).as("an overridden start() is user code: never called by the close").isZero();
    assertThat(report.drained()).isFalse();
    assertThat(recorded).as("a thread of the close's own told its recorders").succeedsWithin(WAIT).isEqualTo(report);
    assertThat(interruptKept).as("the closing thread's interrupt is set again on return").isTrue();
  }

  static Batcher<String, Void> idle(String name) {
    return Batcher.of(name, BatcherConfig.builder().build(), BatchSink.noResult(items -> { }));
  }

  static <V> V field(Object owner, String name, Class<V> type) throws ReflectiveOperationException {
    Field field = DisruptorBatcher.class.getDeclaredField(name);
    field.setAccessible(true);
    return type.cast(field.get(owner));
  }
}
