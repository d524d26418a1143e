package dev.ringbatch.internal.close;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;

import com.lmax.disruptor.RingBuffer;
import dev.ringbatch.BatchSink;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherClosedException;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.CloseReport;
import dev.ringbatch.internal.consume.CoalescingConsumer;
import dev.ringbatch.internal.ring.ItemFuture;
import dev.ringbatch.internal.ring.PublishGate;
import dev.ringbatch.internal.ring.SubmissionSlot;
import dev.ringbatch.testing.Holds;
import dev.ringbatch.testing.Holds.Gate;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Field;
import java.nio.channels.spi.AbstractInterruptibleChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The close helper's fallback thread, the order tells, recordClosed, watch, overridden interrupt, and the JDK's own
 * interrupt of a consumer the close took from its sink, called by the closing thread: what each must keep.
 */
@Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class CloseHelperFallbackTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  @RegisterExtension
  final Holds holds = new Holds();

  /**
   * A channel whose close (user code: a driver's or library's own channel) waits; the sink is inside one of its
   * blocking operations ({@code begin()} .. {@code end()}). The JDK's {@code Thread.interrupt()} of a thread blocked
   * in an interruptible channel closes that channel on the interrupting thread: the close's interrupt of its
   * consumer runs user code, which the close leaves to its helper: it still returns by its timeout and grace.
   */
  @Test
  void consumerBlockedInAnInterruptibleChannelWhoseCloseBlocks_closeStillReturnsInTime() throws Exception {
    Gate ioRelease = holds.gate();
    Gate channelCloseRelease = holds.gate();
    CountDownLatch inSink = new CountDownLatch(1);
    HangingChannel channel = new HangingChannel(channelCloseRelease);
    Batcher<String, Void> batcher = holds.track(Batcher.of("fallback-nio", BatcherConfig.ofDefaults(),
        BatchSink.noResult(items -> {
          inSink.countDown();
          channel.io(ioRelease);
        })));
    CompletableFuture<Void> item = batcher.submit("held");
    assertThat(inSink.await(10, SECONDS)).isTrue();

    CompletableFuture<CloseReport> closed = new CompletableFuture<>();
    Thread closer = closeOnItsOwnThread(batcher, Duration.ofMillis(100), closed);

    assertThat(channel.closing.await(10, SECONDS)).as("the close's interrupt closes the channel").isTrue();
    assertThat(closed).as(() -> "close(100 ms) returned by its timeout and grace; " + stackOf(closer))
        .succeedsWithin(Duration.ofSeconds(2));
    // The helper interrupts first (so that callbacks find what the sink held given up): a channel close of your
    // own that blocks holds up the callers after it, as any blocking user code in the helper's sequence does.
    assertThat(item).as("told once the channel's close returns").isNotDone();
    channelCloseRelease.open();
    assertThat(item).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
        .withCauseInstanceOf(BatcherClosedException.class);
  }

  /**
   * A consumer thread whose class overrides interrupt() (it also closes a connection, say; then interrupts), taken
   * from a sink in interruptible I/O, and a producer that claimed a slot and has not published it yet. The override
   * is user code that may block, so the helper calls it last, after the straggler watch (which it must not hold up):
   * the consumer is interrupted once the slot is published (a producer that never publishes has died between its
   * claim and its publish; then the override is never called: the one cost of that order).
   */
  @Test
  void overriddenInterrupt_slotClaimedAndNotPublished_consumerIsInterruptedOnceItIsPublished() throws Exception {
    CountDownLatch interrupted = new CountDownLatch(1);
    ThreadFactory factory = r -> {
      Thread t = new Thread(r, "fallback-override-" + r.getClass().getSimpleName()) {
        @Override
        public void interrupt() {
          if (Thread.currentThread() != this) {
            interrupted.countDown();
          }
          super.interrupt();
        }
      };
      t.setDaemon(true);
      return t;
    };
    Gate sinkRelease = holds.gate();
    CountDownLatch inSink = new CountDownLatch(1);
    CountDownLatch sinkGaveUp = new CountDownLatch(1);
    Batcher<String, Void> batcher = holds.track(Batcher.of("fallback-override",
        BatcherConfig.builder().threadFactory(factory).build(), BatchSink.noResult(items -> {
          inSink.countDown();
          sinkRelease.awaitInterruptibly();
          sinkGaveUp.countDown();
        })));
    CompletableFuture<Void> first = batcher.submit("first");
    assertThat(inSink.await(10, SECONDS)).isTrue();
    PublishGate gate = CloseStragglerTest.field(batcher, "gate", PublishGate.class);
    @SuppressWarnings("unchecked")
    RingBuffer<SubmissionSlot> ring = CloseStragglerTest.field(batcher, "ring", RingBuffer.class);
    long claimed = gate.tryClaim();
    assertThat(claimed).isNotNegative();
    CloseReport report = batcher.close(Duration.ofMillis(50));

    assertThat(first).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
        .withCauseInstanceOf(BatcherClosedException.class);
    assertThat(interrupted.getCount()).as("not before the watch; report %s", report).isOne();
    ItemFuture<Object> late = new ItemFuture<>();
    ring.get(claimed).fill("late", late, 0, SubmissionSlot.NOT_STAMPED);
    ring.publish(claimed); // the watch fails it and ends
    assertThat(late).failsWithin(WAIT).withThrowableOfType(java.util.concurrent.ExecutionException.class);
    assertThat(interrupted.await(WAIT.toSeconds(), SECONDS)).as("then the close interrupted its consumer").isTrue();
    assertThat(sinkGaveUp.await(WAIT.toSeconds(), SECONDS)).as("the sink was interrupted").isTrue();
  }

  /**
   * A thread factory whose threads re-run their Runnable whenever it returns (a supervising worker), started as
   * they are made. The helper's thread thus calls run() on its own, over and over, and may call it while the close
   * starts the helper: the close's user code must still run exactly once, never not at all.
   */
  @Test
  void helperRunnableRunByItsFactoryThreadConcurrently_theSequenceRunsExactlyOnce() throws Exception {
    int rounds = 1_000;
    int never = 0;
    int twice = 0;
    for (int round = 0; round < rounds; round++) {
      AtomicBoolean stop = new AtomicBoolean();
      ThreadFactory supervising = r -> {
        Thread t = new Thread(() -> {
          while (!stop.get()) {
            r.run();
          }
        }, "fallback-supervised");
        t.setDaemon(true);
        t.start();
        return t;
      };
      CloseHelper helper = new CloseHelper("fallback-race", supervising);
      Field toldField = CloseHelper.class.getDeclaredField("told");
      toldField.setAccessible(true);
      CountDownLatch told = (CountDownLatch) toldField.get(helper);
      AtomicInteger ran = new AtomicInteger();
      try {
        helper.runAndAwait(List.of(), ran::incrementAndGet,
            System.nanoTime() + CloseProtocol.GRACE_NANOS + TimeUnit.SECONDS.toNanos(1));
        // told is counted down only after the sequence's steps ran, whoever ran them
        assertThat(told.await(10, SECONDS)).as("round %s: the helper says its sequence ran", round).isTrue();
      } finally {
        stop.set(true);
      }
      if (ran.get() == 0) {
        never++;
      } else if (ran.get() > 1) {
        twice++;
      }
    }
    assertThat(never).as("rounds (of %s) whose helper said it ran but recordClosed never ran", rounds).isZero();
    assertThat(twice).as("rounds (of %s) whose recordClosed ran twice", rounds).isZero();
  }

  /**
   * A factory whose close helper thread cannot start (it started it already: an eager factory). A close that does
   * not block in user code tells its callers before it returns, as with any other factory (and as this close did
   * before, running them itself): close() returning must mean every caller was told, when no callback blocks.
   */
  @Test
  void helperThreadThatCannotStart_quickCallbacks_callersToldByTheTimeCloseReturns() throws Exception {
    int rounds = 10;
    List<String> untold = new ArrayList<>();
    for (int round = 0; round < rounds; round++) {
      ThreadFactory eager = r -> {
        boolean consumer = r.getClass().getSimpleName().equals("CoalescingConsumer");
        Thread t = new Thread(r, "fallback-eager-" + (consumer ? "consumer" : "close"));
        t.setDaemon(true);
        if (!consumer) {
          t.start(); // runs the helper's Runnable once, before any close: it returns at once
        }
        return t;
      };
      Gate sinkRelease = holds.gate();
      CountDownLatch inSink = new CountDownLatch(1);
      Batcher<String, Void> batcher = holds.track(Batcher.of("fallback-eager-" + round,
          BatcherConfig.builder().threadFactory(eager).build(), BatchSink.noResult(items -> {
            inSink.countDown();
            sinkRelease.await();
          })));
      CompletableFuture<Void> item = batcher.submit("held");
      assertThat(inSink.await(10, SECONDS)).isTrue();

      CloseReport report = batcher.close(Duration.ofMillis(20));

      if (!item.isDone()) {
        untold.add("round " + round + ": " + report);
      }
      assertThat(item).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
          .withCauseInstanceOf(BatcherClosedException.class);
    }
    assertThat(untold).as("closes that returned before their (quick) callers were told").isEmpty();
  }

  /**
   * The same factory, and a log handler that blocks on the library's warning that it replaced the factory's thread:
   * the warning is logged by the thread that runs the close's sequence, after the callers are told, never by the
   * closing thread, so close(timeout) still returns within its timeout and grace.
   */
  @Test
  void helperThreadThatCannotStart_blockingLogHandler_closeReturnsInTime_callersTold() throws Exception {
    java.util.logging.Logger jul = java.util.logging.Logger.getLogger(CloseHelper.class.getName());
    Gate logRelease = holds.gate();
    CountDownLatch warned = new CountDownLatch(1);
    java.util.logging.Handler blocking = new java.util.logging.Handler() {
      @Override
      public void publish(java.util.logging.LogRecord record) {
        if (String.valueOf(record.getMessage()).contains("made for its close helper")) {
          warned.countDown();
          logRelease.await(); // a log backend stalled on its disk or socket
        }
      }

      @Override
      public void flush() {}

      @Override
      public void close() {}
    };
    jul.addHandler(blocking);
    try {
      ThreadFactory eager = r -> {
        boolean consumer = r.getClass().getSimpleName().equals("CoalescingConsumer");
        Thread t = new Thread(r, "fallback-log-" + (consumer ? "consumer" : "close"));
        t.setDaemon(true);
        if (!consumer) {
          t.start(); // runs the helper's Runnable once, before any close: start() throws at the close
        }
        return t;
      };
      Gate sinkRelease = holds.gate();
      CountDownLatch inSink = new CountDownLatch(1);
      Batcher<String, Void> batcher = holds.track(Batcher.of("fallback-log", BatcherConfig.builder()
          .threadFactory(eager).build(), BatchSink.noResult(items -> {
            inSink.countDown();
            sinkRelease.await();
          })));
      CompletableFuture<Void> item = batcher.submit("held");
      assertThat(inSink.await(10, SECONDS)).isTrue();

      CompletableFuture<CloseReport> closed = CompletableFuture.supplyAsync(() -> batcher.close(Duration.ofMillis(100)));

      assertThat(closed).as("close(100 ms) while the log handler blocks").succeedsWithin(WAIT);
      assertThat(item).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
          .withCauseInstanceOf(BatcherClosedException.class);
      assertThat(warned.await(10, SECONDS)).as("the warning, logged all the same").isTrue();
    } finally {
      jul.removeHandler(blocking);
    }
  }

  /**
   * The close interrupts a consumer it took from its sink; the sink gives up and, as the JDK's idiom asks, sets the
   * flag again before it returns. The interrupt was meant for the sink: once the consumer's Runnable has returned,
   * the factory's own code on that thread (a pool's worker loop, a clean-up) must not find itself interrupted.
   */
  @Test
  void consumerTakenFromItsSink_interruptDoesNotOutliveTheConsumersRunnable() throws Exception {
    CompletableFuture<Boolean> interruptedAfterRun = new CompletableFuture<>();
    ThreadFactory factory = r -> {
      boolean consumer = r.getClass().getSimpleName().equals("CoalescingConsumer");
      Thread t = new Thread(consumer ? () -> {
        r.run();
        interruptedAfterRun.complete(Thread.currentThread().isInterrupted()); // the factory's code after it
      } : r, "fallback-flag-" + (consumer ? "consumer" : "close"));
      t.setDaemon(true);
      return t;
    };
    Gate sinkRelease = holds.gate();
    CountDownLatch inSink = new CountDownLatch(1);
    Batcher<String, Void> batcher = holds.track(Batcher.of("fallback-flag",
        BatcherConfig.builder().threadFactory(factory).build(), BatchSink.noResult(items -> {
          inSink.countDown();
          sinkRelease.awaitInterruptibly(); // sets the flag again when interrupted
        })));
    CompletableFuture<Void> item = batcher.submit("held");
    assertThat(inSink.await(10, SECONDS)).isTrue();

    CloseReport report = batcher.close(Duration.ofMillis(50));

    assertThat(item).failsWithin(WAIT).withThrowableOfType(ExecutionException.class)
        .withCauseInstanceOf(BatcherClosedException.class);
    assertThat(interruptedAfterRun).as("the factory's code after the consumer's Runnable finds the thread"
        + " interrupted; report %s", report).succeedsWithin(WAIT).isEqualTo(false);
  }

  private static Thread closeOnItsOwnThread(Batcher<?, ?> batcher, Duration timeout,
      CompletableFuture<CloseReport> closed) {
    Thread closer = new Thread(() -> {
      try {
        closed.complete(batcher.close(timeout));
      } catch (Throwable t) {
        closed.completeExceptionally(t);
      }
    }, "fallback-closer");
    closer.setDaemon(true);
    closer.start();
    return closer;
  }

  private static String stackOf(Thread thread) {
    StringBuilder out = new StringBuilder(thread.getName()).append(" is at:");
    for (StackTraceElement frame : thread.getStackTrace()) {
      out.append("\n    ").append(frame);
    }
    return out.toString();
  }

  /** A channel of user code whose close waits for {@code closeRelease}. */
  private static final class HangingChannel extends AbstractInterruptibleChannel {
    private final Gate closeRelease;
    final CountDownLatch closing = new CountDownLatch(1);

    HangingChannel(Gate closeRelease) {
      this.closeRelease = closeRelease;
    }

    /** A blocking operation that cannot be cut short but by the channel's close (here: until released). */
    void io(Gate ioRelease) {
      boolean completed = false;
      begin();
      try {
        ioRelease.await();
        completed = true;
      } finally {
        try {
          end(completed);
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      }
    }

    @Override
    protected void implCloseChannel() {
      closing.countDown();
      closeRelease.await();
    }
  }
}
