package dev.ringbatch.spring.boot;

/** The kind of thread a batcher's consumer runs on: {@code ringbatch.batchers.<name>.consumer-thread}. */
public enum ConsumerThread {
  /** A platform daemon thread named {@code ringbatch-<name>}: the library default. */
  PLATFORM,
  /** A virtual thread named {@code ringbatch-<name>-<n>}; needs Java 21 or later. */
  VIRTUAL
}
