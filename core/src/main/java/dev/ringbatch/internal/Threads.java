package dev.ringbatch.internal;

import org.jspecify.annotations.Nullable;

/** What the JDK this runs on tells of a thread, read without needing JDK 21's API at compile time. */
final class Threads {
  /** {@code java.lang.BaseVirtualThread}, the class of every virtual thread (JDK 21+), or null before. */
  private static final @Nullable Class<?> VIRTUAL = virtualThreadClass();

  private Threads() {}

  private static @Nullable Class<?> virtualThreadClass() {
    try {
      return Class.forName("java.lang.BaseVirtualThread", false, Thread.class.getClassLoader());
    } catch (ClassNotFoundException | LinkageError noVirtualThreads) {
      return null; // JDK 17-20: every thread is a platform thread
    }
  }

  /** Whether {@code thread} is a virtual thread. */
  static boolean isVirtual(Thread thread) {
    Class<?> virtual = VIRTUAL;
    return virtual != null && virtual.isInstance(thread);
  }
}
