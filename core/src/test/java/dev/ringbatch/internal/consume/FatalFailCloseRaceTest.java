package dev.ringbatch.internal.consume;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.lmax.disruptor.RingBuffer;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.CloseReport;
import dev.ringbatch.internal.DisruptorBatcher;
import dev.ringbatch.internal.ring.PublishGate;
import dev.ringbatch.internal.ring.PublishWait;
import dev.ringbatch.internal.ring.SubmissionSlot;
import dev.ringbatch.internal.shared.Threads;
import dev.ringbatch.stats.StatsRecorder;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A close that comes while the consumer is failing what it holds after a fatal error of its own: the consumer
 * shows ORPHANED at once, then may wait up to 200 ms for a claimed but unpublished slot before it tells its
 * recorders. The close must still tell recordClosed after the consumer's recordAbandoned (found by the review of
 * 9ed366c, which published the consumer's recorders' future only after that wait). The consumer is descheduled
 * right there with Thread.suspend and stopped with Thread.stop (JDK < 20).
 */
class FatalFailCloseRaceTest {

  static final class Recorder implements StatsRecorder {
    final List<String> calls = new CopyOnWriteArrayList<>();
    final CountDownLatch abandoned = new CountDownLatch(1);
    final CountDownLatch closed = new CountDownLatch(1);

    @Override
    public void recordAbandoned(long count) {
      calls.add("abandoned " + count);
      abandoned.countDown();
    }

    @Override
    public void recordClosed(CloseReport report) {
      calls.add("closed");
      closed.countDown();
    }
  }

  static <V> V field(Object owner, String name, Class<V> type) throws ReflectiveOperationException {
    Field f = DisruptorBatcher.class.getDeclaredField(name);
    f.setAccessible(true);
    return type.cast(f.get(owner));
  }

  private static boolean inStack(Thread t, String cls) {
    for (StackTraceElement e : t.getStackTrace()) {
      if (e.getClassName().endsWith(cls)) {
        return true;
      }
    }
    return false;
  }

  private static boolean recorderPartWaits() {
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.getName().startsWith("ringbatch-fatal-race-close") && inStack(t, "Threads")) {
        return true;
      }
    }
    return false;
  }

  @Test
  @Timeout(60)
  @SuppressWarnings({"deprecation", "unchecked"})
  void closeDuringTheConsumersOwnFailure_recordsClosedAfterAbandoned() throws Exception {
    Method stop = Runtime.version().feature() < 20 ? Thread.class.getMethod("stop") : null;
    assumeTrue(stop != null, "Thread.stop works on this JDK");
    AtomicReference<Thread> consumer = new AtomicReference<>();
    Batcher<Integer, Integer> batcher = Batcher.of("fatal-race", BatcherConfig.builder().ringSize(8).maxBatchSize(8)
        .linger(Duration.ofSeconds(30)).threadFactory(r -> { // the close helper, then the consumer
          boolean helper = !r.getClass().getSimpleName().equals("CoalescingConsumer");
          Thread t = new Thread(r, helper ? "ringbatch-fatal-race-close" : "fatal-race-consumer");
          t.setDaemon(true);
          if (!helper) {
            consumer.set(t);
          }
          return t;
        }).build(), batch -> batch.completeRemaining(1));
    Recorder recorder = new Recorder();
    batcher.addStatsRecorder(recorder);
    CompletableFuture<Integer> item = batcher.submit(1); // lingers (30 s) in the batch being filled
    Thread thread = consumer.get();
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!(thread.getState() == Thread.State.TIMED_WAITING && inStack(thread, "ConsumerWaitStrategy"))
        && System.nanoTime() - until < 0) {
      Thread.onSpinWait();
    }
    // A producer that claimed a slot and is descheduled before its publish (as CloseStragglerTest plays it).
    PublishGate gate = field(batcher, "gate", PublishGate.class);
    RingBuffer<SubmissionSlot> ring = field(batcher, "ring", RingBuffer.class);
    long claimed = gate.tryClaim();
    assertThat(claimed).isNotNegative();

    stop.invoke(thread); // the consumer's own code fails: failFatally -> orphan -> failHoldings waits for the slot
    until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!inStack(thread, "PublishWait") && System.nanoTime() - until < 0) {
      Thread.onSpinWait();
    }
    assertThat(inStack(thread, "PublishWait")).as("consumer failing its holdings, waiting for the slot").isTrue();

    // The OS deschedules the consumer right there (between its orphan() and its ownRecorded): Thread.suspend
    // plays that, as SuspendableConsumer does. It runs again as soon as the close's recorder part either waits
    // for it (Threads.awaitQuietly: the order the commit promises) or has told recordClosed without it.
    Method suspend = Thread.class.getMethod("suspend");
    Method resume = Thread.class.getMethod("resume");
    suspend.invoke(thread);
    CompletableFuture<CloseReport> closing = CompletableFuture.supplyAsync(() -> batcher.close(Duration.ZERO));
    until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    boolean waitedFor = false;
    while (recorder.closed.getCount() > 0 && !(waitedFor = recorderPartWaits()) && System.nanoTime() - until < 0) {
      Thread.onSpinWait();
    }
    resume.invoke(thread);
    CloseReport report = closing.get(10, TimeUnit.SECONDS);
    assertThat(recorder.closed.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(recorder.abandoned.await(10, TimeUnit.SECONDS)).isTrue();
    ring.publish(claimed); // let the straggler go
    assertThat(item).failsWithin(Duration.ofSeconds(10)).withThrowableOfType(java.util.concurrent.ExecutionException.class);
    assertThat(recorder.calls).as("report=%s", report).containsExactly("abandoned 1", "closed");
  }
}
