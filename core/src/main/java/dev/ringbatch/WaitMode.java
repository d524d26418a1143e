package dev.ringbatch;

/**
 * How the consumer thread waits for items when the ring is empty. This is the trade between idle CPU and
 * the latency of the first item after a quiet spell; under steady load the consumer rarely waits at all.
 */
public enum WaitMode {
  /**
   * Spin briefly, then park the consumer thread until a producer publishes. An idle batcher costs no CPU;
   * a producer pays for an unpark only when the consumer is actually parked (one volatile read otherwise).
   * The default.
   */
  BLOCKING,

  /** Spin briefly, then {@link Thread#yield()} in a loop. Lower wake-up latency; a core stays busy while idle. */
  YIELDING,

  /** Spin without pause. Lowest latency, one core fully used even when idle: only for dedicated cores. */
  BUSY_SPIN
}
