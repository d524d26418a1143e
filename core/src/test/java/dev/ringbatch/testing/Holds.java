package dev.ringbatch.testing;

import dev.ringbatch.Batcher;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The one harness for tests that hold a user hook (a sink, a recorder, a dependent action) until they let it go:
 * {@link Gate}s the hook waits on, and the batchers under test. After each test every gate opens and every batcher
 * closes, whatever the test did, so no thread of one test stays blocked into the next. Register it with
 * {@code @RegisterExtension final Holds holds = new Holds();}.
 */
public final class Holds implements AfterEachCallback {
  /** How long a gate holds a hook at most, so that a test that forgot to open it still ends. */
  private static final long MAX_HOLD_NANOS = TimeUnit.SECONDS.toNanos(30);

  private final List<Gate> gates = new CopyOnWriteArrayList<>();
  private final List<Batcher<?, ?>> batchers = new CopyOnWriteArrayList<>();

  /** A new gate, closed until the test (or the end of the test) opens it. */
  public Gate gate() {
    Gate gate = new Gate();
    gates.add(gate);
    return gate;
  }

  /** Closes {@code batcher} after the test. */
  public <B extends Batcher<?, ?>> B track(B batcher) {
    batchers.add(batcher);
    return batcher;
  }

  @Override
  public void afterEach(ExtensionContext context) {
    gates.forEach(Gate::open);
    for (Batcher<?, ?> batcher : batchers) {
      try {
        batcher.close(Duration.ofMillis(100));
      } catch (RuntimeException alreadyFailing) {
        // a test about a failing close has asserted it already; the next batcher is still closed
      }
    }
  }

  /** Holds the hooks that wait on it until opened (for {@link #MAX_HOLD_NANOS} at most). */
  public static final class Gate {
    private final CountDownLatch opened = new CountDownLatch(1);

    /** Waits until opened, through interrupts (set again on return): a hook that blocks whatever the batcher does. */
    public void await() {
      long deadline = System.nanoTime() + MAX_HOLD_NANOS;
      boolean interrupted = false;
      while (true) {
        try {
          opened.await(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
          break;
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }

    /** Waits until opened or interrupted (the flag set again): a hook in interruptible I/O. */
    public void awaitInterruptibly() {
      try {
        opened.await(MAX_HOLD_NANOS, TimeUnit.NANOSECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    public void open() {
      opened.countDown();
    }
  }
}
