package dev.ringbatch.internal.shared;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.jspecify.annotations.Nullable;

/**
 * What the JDK this runs on tells of a thread, read without needing JDK 21's API at compile time; and the waits
 * of a close on other threads' progress.
 */
public final class Threads {
  /** {@code java.lang.BaseVirtualThread}, the class of every virtual thread (JDK 21+), or null before. */
  private static final @Nullable Class<?> VIRTUAL = virtualThreadClass();

  private static final long POLL_NANOS = TimeUnit.MICROSECONDS.toNanos(100);

  private Threads() {}

  private static @Nullable Class<?> virtualThreadClass() {
    try {
      return Class.forName("java.lang.BaseVirtualThread", false, Thread.class.getClassLoader());
    } catch (ClassNotFoundException | LinkageError noVirtualThreads) {
      return null; // JDK 17-20: every thread is a platform thread
    }
  }

  /** Waits for {@code future} until {@code deadline} ({@link System#nanoTime()}), an interrupt included (set again). */
  public static void awaitQuietly(CompletableFuture<?> future, long deadline) {
    boolean interrupted = false;
    while (true) {
      try {
        future.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        break;
      } catch (InterruptedException e) {
        interrupted = true;
      } catch (TimeoutException | ExecutionException givenUp) {
        break;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Polls, parked 100 µs between looks, until {@code busy} says no or {@code deadline} passes; an interrupt is
   * absorbed and set again on return. For rare waits on other threads' progress (a close meeting slow callbacks),
   * where a handshake would cost the common path.
   */
  public static void pollWhile(BooleanSupplier busy, long deadline) {
    boolean interrupted = false;
    while (busy.getAsBoolean() && deadline - System.nanoTime() > 0) {
      LockSupport.parkNanos(busy, POLL_NANOS);
      interrupted |= Thread.interrupted();
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  /** Whether {@code thread} is a virtual thread. */
  public static boolean isVirtual(Thread thread) {
    Class<?> virtual = VIRTUAL;
    return virtual != null && virtual.isInstance(thread);
  }

  /**
   * Whether {@code thread}'s class leaves the public no-argument {@code method} ({@code "start"}, {@code
   * "interrupt"}) to the JDK: a factory's subclass overriding it makes it user code, which may block.
   */
  public static boolean isJdkMethod(Thread thread, String method) {
    try {
      return thread.getClass().getMethod(method).getDeclaringClass().getModule() == Thread.class.getModule();
    } catch (ReflectiveOperationException | RuntimeException unknown) {
      return false; // treated as user code
    }
  }
}
