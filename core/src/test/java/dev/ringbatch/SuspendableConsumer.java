package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Method;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A batcher's consumer thread that a test can suspend while it is parked idle, which is what a descheduled thread
 * looks like to a close (it cannot hand over, so the close has to leave it behind), and resume. Thread.suspend
 * works up to JDK 19 and is gone from JDK 23: tests assume {@link #supported()}.
 */
final class SuspendableConsumer {
  private static final Method SUSPEND = method("suspend");
  private static final Method RESUME = method("resume");

  private final AtomicReference<Thread> thread = new AtomicReference<>();

  private static Method method(String name) {
    try {
      return Runtime.version().feature() < 20 ? Thread.class.getMethod(name) : null;
    } catch (NoSuchMethodException gone) {
      return null;
    }
  }

  static boolean supported() {
    return SUSPEND != null && RESUME != null;
  }

  /** The thread factory that makes (and notes) the consumer thread. */
  ThreadFactory factory(String name) {
    return r -> {
      Thread t = new Thread(r, name + "-consumer");
      t.setDaemon(true);
      thread.compareAndSet(null, t); // the first thread made is the consumer, then the close helper
      return t;
    };
  }

  /** Waits until the consumer is parked idle in its wait strategy, then suspends it. */
  void suspendWhenIdle() throws Exception {
    Thread t = thread.get();
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!idleParked(t) && System.nanoTime() - until < 0) {
      Thread.onSpinWait();
    }
    assertThat(idleParked(t)).as("consumer parked idle").isTrue();
    SUSPEND.invoke(t);
  }

  void resume() throws Exception {
    RESUME.invoke(thread.get());
  }

  private static boolean idleParked(Thread t) {
    if (t.getState() != Thread.State.WAITING && t.getState() != Thread.State.TIMED_WAITING) {
      return false;
    }
    for (StackTraceElement e : t.getStackTrace()) {
      if (e.getClassName().endsWith("ConsumerWaitStrategy") && e.getMethodName().equals("park")) {
        return true;
      }
    }
    return false;
  }
}
