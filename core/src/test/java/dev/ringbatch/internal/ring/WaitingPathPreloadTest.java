package dev.ringbatch.internal.ring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.internal.shared.Threads;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.net.URL;
import java.net.URLClassLoader;
import org.junit.jupiter.api.Test;

/**
 * Building a batcher loads the classes a caller's wait needs ({@link ItemFuture#join} and its spin), so that the
 * first burst of virtual-thread callers does not load them: class loading runs native frames, and a virtual thread
 * that blocks there pins its carrier (JFR {@code jdk.VirtualThreadPinned}). Checked in a class loader of its own,
 * where nothing of ringbatch is loaded before the batcher is built.
 */
class WaitingPathPreloadTest {

  @Test
  void batcherBuilt_waitingPathClassesLoaded_beforeAnyCallerWaits() throws Exception {
    URL core = ItemFuture.class.getProtectionDomain().getCodeSource().getLocation();
    URL disruptor = com.lmax.disruptor.RingBuffer.class.getProtectionDomain().getCodeSource().getLocation();
    try (Isolated loader = new Isolated(new URL[] {core, disruptor})) {
      Class<?> config = loader.loadClass("dev.ringbatch.BatcherConfig");
      Class<?> sink = loader.loadClass("dev.ringbatch.BatchSink");
      Class<?> writer = loader.loadClass("dev.ringbatch.BatchSink$ItemsWriter");
      Object items = Proxy.newProxyInstance(loader, new Class<?>[] {writer},
          (proxy, method, args) -> method.getDeclaringClass() == Object.class ? objectMethod(proxy, method, args)
              : null);
      Object noResult = sink.getMethod("noResult", writer).invoke(null, items);
      assertThat(loader.loaded("dev.ringbatch.internal.shared.Threads")).as("loaded before the batcher is built").isFalse();

      Object batcher = loader.loadClass("dev.ringbatch.Batcher").getMethod("of", String.class, config, sink)
          .invoke(null, "preload", config.getMethod("ofDefaults").invoke(null), noResult);
      try {
        assertThat(loader.loaded("dev.ringbatch.internal.shared.Threads")).isTrue();
      } finally {
        batcher.getClass().getMethod("close").invoke(batcher);
      }
    }
  }

  private static Object objectMethod(Object proxy, Method method, Object[] args) {
    return switch (method.getName()) {
      case "equals" -> proxy == args[0];
      case "hashCode" -> System.identityHashCode(proxy);
      default -> "items writer";
    };
  }

  /** Loads ringbatch and the Disruptor itself, nothing from the test's class path; tells what it loaded. */
  private static final class Isolated extends URLClassLoader {
    Isolated(URL[] urls) {
      super("isolated-ringbatch", urls, ClassLoader.getPlatformClassLoader());
    }

    boolean loaded(String name) {
      synchronized (getClassLoadingLock(name)) {
        return findLoadedClass(name) != null;
      }
    }
  }
}
