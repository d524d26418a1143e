package dev.ringbatch.internal.ring;

import java.util.Arrays;

/**
 * The consumer threads of batchers that must treat each other's consumers as their own: the shards of one
 * sharded batcher. A submission from any of them into any full member is refused at once rather than
 * blocked, so that shard A's sink waiting on shard B while B's sink waits on A cannot deadlock; and none of
 * them may wait on a member ({@code submitAndWait}, {@code close}). Thread-safe; membership changes only
 * while the batchers start.
 */
public final class ConsumerGroup {
  private volatile Thread[] threads = new Thread[0];

  public synchronized void add(Thread thread) {
    Thread[] next = Arrays.copyOf(threads, threads.length + 1);
    next[threads.length] = thread;
    threads = next;
  }

  public boolean contains(Thread thread) {
    for (Thread t : threads) {
      if (t == thread) {
        return true;
      }
    }
    return false;
  }
}
