package dev.ringbatch.jmh;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.ThreadFactory;

/** Virtual threads, which this Java 17 build reaches by reflection: present from JDK 21 on. */
final class VirtualThreads {
  private VirtualThreads() {}

  /** An executor with one new virtual thread per task; fails with a clear message before JDK 21. */
  static ExecutorService perTaskExecutor() {
    try {
      return (ExecutorService) java.util.concurrent.Executors.class
          .getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
    } catch (ReflectiveOperationException e) {
      throw needsJdk21(e);
    }
  }

  /** A factory of virtual threads; fails with a clear message before JDK 21. */
  static ThreadFactory factory() {
    try {
      Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
      return (ThreadFactory) Class.forName("java.lang.Thread$Builder").getMethod("factory").invoke(builder);
    } catch (ReflectiveOperationException e) {
      throw needsJdk21(e);
    }
  }

  private static UnsupportedOperationException needsJdk21(ReflectiveOperationException cause) {
    return new UnsupportedOperationException("virtual threads need JDK 21 or later; this is "
        + Runtime.version() + ": run this benchmark on JDK 21+", cause);
  }
}
