package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.OutcomeUnknownException;
import dev.ringbatch.OverflowPolicy;
import dev.ringbatch.RetryPolicy;
import dev.ringbatch.stats.StatsRecorder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.BufferOverflowException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Random faults against a {@link ByteSink} behind a batcher with retries on: a disk that fills up in the middle
 * of batches (a real 1 MiB tmpfs where the test may mount one, else a write budget on the channel), rollbacks and
 * forces that fail, and encoders that throw after a partial put, flip the buffer, or overflow every buffer.
 * Faults are drawn on the consumer thread before each write or truncate call, and the disk is often freed
 * before a retry.
 *
 * <p>After each round the file is parsed record by record (a record is its id, its length and that many copies
 * of the id's low byte, so torn or stray bytes do not parse), and every answer is checked: an item told written
 * is in the file once, at its offset; no record is there twice; a record in the file belongs to an item told
 * written or told {@link OutcomeUnknownException}; an item that failed with anything else is not in the file.
 * Seeds: {@code -Dringbatch.bytesink.seed=N} replays a run.
 */
@Tag("chaos")
@Timeout(180)
class ByteSinkChaosTest {
  private static final int ROUNDS = 8;
  private static final int ITEMS = 600;
  private static final int MAX_RECORD = 2048;
  private static final Duration WAIT = Duration.ofSeconds(30);

  private static TmpfsMount disk;

  @TempDir
  Path tmp;

  @BeforeAll
  static void mount() throws Exception {
    disk = TmpfsMount.mount("bytesink-chaos", "1m");
  }

  @AfterAll
  static void unmount() throws Exception {
    disk.unmount();
  }

  /** What an item's encoder does. */
  enum Kind { GOOD, THROWS, FLIPS, TOO_LARGE, ENDLESS }

  record Item(int id, int size, Kind kind) {}

  private static final ByteSink.Encoder<Item> ENCODER = (item, buffer) -> {
    if (item.kind() == Kind.ENDLESS) {
      throw new BufferOverflowException();
    }
    buffer.putInt(item.id()).putInt(item.size());
    if (item.kind() == Kind.THROWS) {
      throw new IllegalArgumentException("cannot encode " + item.id());
    }
    for (int i = 0; i < item.size(); i++) {
      buffer.put((byte) item.id());
    }
    if (item.kind() == Kind.FLIPS) {
      buffer.flip();
    }
  };

  @Test
  void realDiskFull_retries_everyAnswerTrue() throws Exception {
    disk.assumeMounted();
    Totals totals = run(disk.dir, true);
    assertThat(totals.violations).as("seed %s", totals.seed).isEmpty();
    assertThat(totals.counts).as("the faults happened").containsKeys("written", "unknown", "retried", "encoder failed");
  }

  @Test
  void injectedDiskFull_retries_everyAnswerTrue() throws Exception {
    Totals totals = run(tmp, false);
    assertThat(totals.violations).as("seed %s", totals.seed).isEmpty();
    assertThat(totals.counts).as("the faults happened").containsKeys("written", "unknown", "retried", "encoder failed");
  }

  private static final class Totals {
    final long seed = Long.getLong("ringbatch.bytesink.seed", System.nanoTime());
    final List<String> violations = new ArrayList<>();
    final Map<String, Integer> counts = new HashMap<>();

    void count(String what) {
      counts.merge(what, 1, Integer::sum);
    }
  }

  private Totals run(Path dir, boolean realDisk) throws Exception {
    Totals totals = new Totals();
    for (int round = 0; round < ROUNDS; round++) {
      long seed = totals.seed + round;
      SplittableRandom rnd = new SplittableRandom(seed);
      Path file = dir.resolve("round-" + round);
      ObservingFileChannel channel = new ObservingFileChannel(FileChannel.open(file, StandardOpenOption.CREATE,
          StandardOpenOption.WRITE, StandardOpenOption.APPEND));
      SplittableRandom faults = rnd.split();
      int[] calls = {0};
      channel.beforeChange = () -> inject(faults, ++calls[0], channel, realDisk);
      List<Item> items = items(rnd);
      AtomicReferenceArray<CompletableFuture<Long>> futures = new AtomicReferenceArray<>(ITEMS); // by id
      RetryPolicy retry = RetryPolicy.builder().maxAttempts(2 + rnd.nextInt(3))
          .initialBackoff(Duration.ofMillis(1)).maxBackoff(Duration.ofMillis(5)).build();
      ByteSink<Item> sink = ByteSink.toChannel(channel, ENCODER).bufferSize(256 + rnd.nextInt(4096))
          .maxRecordBytes(MAX_RECORD).fsync(rnd.nextBoolean()).build();
      try (Batcher<Item, Long> batcher = Batcher.of("chaos-" + round, BatcherConfig.builder()
          .maxBatchSize(1 + rnd.nextInt(200)).overflowPolicy(OverflowPolicy.BLOCK).retryPolicy(retry).build(), sink)) {
        SplittableRandom freer = rnd.split();
        batcher.addStatsRecorder(new StatsRecorder() {
          @Override
          public void recordRetry(int attempt, Throwable cause) {
            totals.count("retried");
            if (freer.nextInt(10) < 7) {
              free(channel, realDisk);
            }
          }
        });
        Thread second = new Thread(() -> submit(batcher, items.subList(ITEMS / 2, ITEMS), futures));
        second.start();
        submit(batcher, items.subList(0, ITEMS / 2), futures);
        second.join(WAIT.toMillis());
        assertThat(second.isAlive()).as("second producer finished").isFalse();
        for (int id = 0; id < ITEMS; id++) {
          futures.get(id).handle((r, e) -> r).get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        }
      } finally {
        channel.beforeChange = () -> { };
        free(channel, realDisk);
        channel.failTruncate = false;
        channel.forceFailures = 0;
        sink.close(); // truncates the file back if a rollback failed at the end
      }
      check(Files.readAllBytes(file), items, futures, seed, totals);
      Files.delete(file);
    }
    System.out.println("ByteSinkChaosTest " + (realDisk ? "tmpfs" : "in-process") + " seed=" + totals.seed + " "
        + new java.util.TreeMap<>(totals.counts) + " violations=" + totals.violations.size());
    return totals;
  }

  private static List<Item> items(SplittableRandom rnd) {
    List<Item> items = new ArrayList<>();
    for (int id = 0; id < ITEMS; id++) {
      int roll = rnd.nextInt(100);
      Kind kind = roll < 4 ? Kind.THROWS : roll < 6 ? Kind.FLIPS : roll < 7 ? Kind.TOO_LARGE
          : roll < 8 ? Kind.ENDLESS : Kind.GOOD;
      items.add(new Item(id, kind == Kind.TOO_LARGE ? MAX_RECORD : rnd.nextInt(600), kind));
    }
    return items;
  }

  private static void submit(Batcher<Item, Long> batcher, List<Item> items,
      AtomicReferenceArray<CompletableFuture<Long>> futures) {
    for (Item item : items) {
      futures.set(item.id(), batcher.submit(item));
    }
  }

  /**
   * On the consumer thread, before write or truncate call number {@code call} of a round: sometimes fill the
   * disk, free it, break truncation or force. Calls 3 and 9 always find the disk full, and calls 9 and 10
   * truncation broken too, so that each round sees a batch rolled back and retried, and one whose outcome is
   * unknown.
   */
  private static void inject(SplittableRandom rnd, int call, ObservingFileChannel channel, boolean realDisk) {
    int roll = rnd.nextInt(100);
    try {
      if (call == 3 || call == 9) {
        channel.writeBudget = 0;
      } else if (roll < 4) {
        int pages = rnd.nextInt(4);
        if (realDisk) {
          disk.fill();
          disk.free(pages);
        } else {
          channel.writeBudget = pages * 4096L + rnd.nextInt(4096);
        }
      } else if (roll < 34) {
        free(channel, realDisk);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    if (call == 9 || call == 10 || rnd.nextInt(20) == 0) {
      channel.failTruncate = true;
    } else if (call == 3 || rnd.nextInt(4) == 0) {
      channel.failTruncate = false;
    }
    if (rnd.nextInt(30) == 0) {
      channel.forceFailures = 1 + rnd.nextInt(2);
    }
  }

  private static void free(ObservingFileChannel channel, boolean realDisk) {
    try {
      if (realDisk) {
        disk.release();
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    channel.writeBudget = Long.MAX_VALUE;
  }

  private static void check(byte[] content, List<Item> items, AtomicReferenceArray<CompletableFuture<Long>> futures,
      long seed, Totals totals) {
    Map<Integer, Long> present = new HashMap<>(); // id -> offset
    ByteBuffer in = ByteBuffer.wrap(content);
    while (in.hasRemaining()) {
      int offset = in.position();
      if (in.remaining() < 8) {
        totals.violations.add("seed " + seed + ": " + in.remaining() + " stray bytes at the end, offset " + offset);
        break;
      }
      int id = in.getInt();
      int size = in.getInt();
      if (id < 0 || id >= ITEMS || size < 0 || size > in.remaining() || !payloadIs(in, size, (byte) id)) {
        totals.violations.add("seed " + seed + ": torn or stray bytes at offset " + offset);
        break;
      }
      if (present.put(id, (long) offset) != null) {
        totals.violations.add("seed " + seed + ": item " + id + " written twice");
      }
    }
    for (Item item : items) {
      int id = item.id();
      Long at = present.get(id);
      CompletableFuture<Long> future = futures.get(id);
      if (!future.isCompletedExceptionally()) {
        totals.count("written");
        if (!future.join().equals(at)) {
          totals.violations.add("seed " + seed + ": item " + id + " told written at " + future.join() + ", found at "
              + at);
        }
        continue;
      }
      Throwable failure = cause(future);
      boolean unknown = OutcomeUnknownException.isIn(failure);
      totals.count(unknown ? "unknown" : item.kind() == Kind.GOOD ? "failed" : "encoder failed");
      if (at != null && !unknown) {
        totals.violations.add("seed " + seed + ": item " + id + " told failed (" + failure + ") but in the file");
      }
    }
  }

  private static boolean payloadIs(ByteBuffer in, int size, byte value) {
    for (int i = 0; i < size; i++) {
      if (in.get() != value) {
        return false;
      }
    }
    return true;
  }

  private static Throwable cause(CompletableFuture<Long> future) {
    try {
      future.join();
      throw new AssertionError("not failed");
    } catch (CompletionException e) {
      return e.getCause();
    }
  }
}
