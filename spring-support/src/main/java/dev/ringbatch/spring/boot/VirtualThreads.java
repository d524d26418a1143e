package dev.ringbatch.spring.boot;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.concurrent.ThreadFactory;
import org.jspecify.annotations.Nullable;

/**
 * Builds virtual-thread factories by reflection: the starter is compiled for Java 17, where
 * {@code Thread.ofVirtual()} does not exist.
 */
final class VirtualThreads {
  private static final @Nullable MethodHandle OF_VIRTUAL = find();

  private VirtualThreads() {}

  static boolean available() {
    return OF_VIRTUAL != null;
  }

  /** A factory of virtual threads named {@code prefix0}, {@code prefix1}, ... */
  static ThreadFactory factory(String prefix) {
    MethodHandle ofVirtual = OF_VIRTUAL;
    if (ofVirtual == null) {
      throw new IllegalStateException("virtual threads need Java 21 or later; this is Java "
          + Runtime.version().feature());
    }
    try {
      Object builder = ofVirtual.invoke();
      Class<?> builderType = Class.forName("java.lang.Thread$Builder");
      builder = builderType.getMethod("name", String.class, long.class).invoke(builder, prefix, 0L);
      return (ThreadFactory) builderType.getMethod("factory").invoke(builder);
    } catch (Throwable e) {
      throw new IllegalStateException("cannot create a virtual thread factory on Java "
          + Runtime.version().feature(), e);
    }
  }

  private static @Nullable MethodHandle find() {
    try {
      Class<?> ofVirtual = Class.forName("java.lang.Thread$Builder$OfVirtual");
      return MethodHandles.publicLookup().findStatic(Thread.class, "ofVirtual", MethodType.methodType(ofVirtual));
    } catch (ReflectiveOperationException e) {
      return null; // Java 17 to 20: the property check reports it, naming the property
    }
  }
}
