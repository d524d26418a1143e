package dev.ringbatch.sink;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * One ByteSink given to every shard ({@code i -> sink}) is called by two consumer threads: it writes one batch at a
 * time, so every item told written is at its offset. The encoders' latches force, on a sink that let two batches
 * in at once, the interleaving where one record is put over another; here they time out once (2 s).
 */
@Timeout(60)
class ByteSinkSharedByShardsTest {
  @TempDir
  Path dir;

  private static void await(CountDownLatch latch) {
    try {
      latch.await(2, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Test
  void oneSinkForTwoShards_isRefused_orEveryItemToldWrittenIsAtItsOffset() throws Exception {
    Path file = dir.resolve("log");
    CountDownLatch bothInside = new CountDownLatch(2);
    CountDownLatch aPut = new CountDownLatch(1);
    CountDownLatch bPut = new CountDownLatch(1);
    CountDownLatch aNext = new CountDownLatch(1);
    ByteSink.Encoder<String> lines = (line, buffer) -> {
      // "first-a" (shard 1) and "first-b" (shard 0) are encoded at once; "first-b" puts after "first-a" did, which
      // returns only after that; "first-b" returns only once shard 1 encodes its next item ("next-a"), so the interleaving is the same every run
      if (line.startsWith("first")) {
        bothInside.countDown();
        await(bothInside);
        if (line.equals("first-b")) {
          await(aPut);
        }
      }
      if (line.equals("next-a")) {
        aNext.countDown();
      }
      buffer.put((line + "\n").getBytes(StandardCharsets.UTF_8));
      if (line.equals("first-a")) {
        aPut.countDown();
        await(bPut); // "first-b" is put over this record before it goes out
      } else if (line.equals("first-b")) {
        bPut.countDown();
        await(aNext);
      }
    };
    List<String> items = new ArrayList<>();
    List<CompletableFuture<Long>> futures = new ArrayList<>();
    Throwable refused = null;
    try (ByteSink<String> sink = ByteSink.toFile(file, lines).bufferSize(64).build()) {
      try (Batcher<String, Long> batcher = Batcher.sharded("shared", BatcherConfig.builder().maxBatchSize(40)
          .linger(Duration.ofMillis(50)).build(), 2, line -> line.charAt(line.length() - 1) % 2, i -> sink)) {
        for (int i = 0; i < 200; i++) {
          String line = i == 0 ? "first-a" : i == 1 ? "first-b" : i == 2 ? "next-a" : "item-" + i;
          items.add(line);
          futures.add(batcher.submit(line));
        }
        for (CompletableFuture<Long> future : futures) {
          future.handle((r, e) -> null).get(20, TimeUnit.SECONDS);
        }
      }
    } catch (Exception e) {
      refused = e;
    }
    if (refused != null) {
      return; // refused at once: fine
    }
    String content = Files.readString(file);
    List<String> wrong = new ArrayList<>();
    for (int i = 0; i < items.size(); i++) {
      CompletableFuture<Long> future = futures.get(i);
      if (!future.isCompletedExceptionally()) {
        int offset = future.join().intValue();
        if (!content.startsWith(items.get(i) + "\n", offset)) {
          wrong.add(items.get(i) + " told written at " + offset);
        }
      }
    }
    assertThat(wrong).isEmpty();
  }
}
