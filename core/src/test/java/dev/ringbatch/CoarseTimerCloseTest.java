package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A close's hand-over grace is 200 ms of time, not a count of parks, whose length is the platform's timer
 * granularity (Windows rounds a park up to 1 ms and often to 15.6 ms; Linux with a coarse timer slack, such as
 * systemd's TimerSlackNSec, too). Here the closing thread's own timer slack is set to 5 ms (Linux,
 * /proc/<tid>/timerslack_ns; its own, no privilege needed) to stand in for such a platform. A version that also
 * required 1,000 parks (review of fb1ab7b) took about 5 s to orphan the consumer here.
 */
class CoarseTimerCloseTest {
  /** This thread's timer slack: /proc/<tid>/timerslack_ns, the tid read from the /proc/thread-self link. */
  private static Path slackOfThisThread() {
    try {
      Path link = Files.readSymbolicLink(Path.of("/proc/thread-self")); // "<pid>/task/<tid>"
      return Path.of("/proc", link.getFileName().toString(), "timerslack_ns");
    } catch (Exception | Error notLinux) {
      return Path.of("/nonexistent");
    }
  }

  @Test
  @Timeout(60)
  void aCloseThatOrphansTheConsumer_endsWithinItsGrace_whenParksAreCoarse() throws Exception {
    assumeTrue(SuspendableConsumer.supported(), "Thread.suspend works on this JDK");
    Path slackFile = slackOfThisThread();
    assumeTrue(Files.isWritable(slackFile), "Linux timer slack can be set");
    SuspendableConsumer consumer = new SuspendableConsumer();
    Batcher<Integer, Integer> batcher = Batcher.of("coarse-timer", BatcherConfig.builder().ringSize(8).maxBatchSize(8)
        .threadFactory(consumer.factory("coarse-timer")).build(), batch -> batch.completeRemaining(1));
    assertThat(batcher.submit(0)).succeedsWithin(Duration.ofSeconds(10));
    String slack = Files.readString(slackFile).trim();
    consumer.suspendWhenIdle(); // a descheduled consumer: the close must orphan it
    long elapsedMs;
    CloseReport report;
    try {
      batcher.submit(1); // unread in the ring: the consumer holds it
      Files.writeString(slackFile, Long.toString(TimeUnit.MILLISECONDS.toNanos(5))); // this (the closing) thread only
      long start = System.nanoTime();
      try {
        report = batcher.close(Duration.ZERO);
      } finally {
        elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        Files.writeString(slackFile, slack);
      }
    } finally {
      consumer.resume();
    }
    assertThat(report.drained()).as("orphaned; report=%s", report).isFalse();
    assertThat(elapsedMs).as("close(0) that orphans its consumer took, ms (documented grace: 200 ms)")
        .isLessThan(2_000);
  }
}
