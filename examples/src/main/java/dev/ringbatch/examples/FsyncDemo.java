package dev.ringbatch.examples;

import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.sink.ByteSink;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * C concurrent callers append records durably to a file: first each record written and forced to disk on its
 * own (what a careful service does without batching), then through a ringbatch {@link ByteSink} with fsync, one
 * force per batch (group commit). In both runs a call returns only once its record is on disk. Checks that
 * each file holds exactly the records acknowledged and ends with one {@code RESULT} line.
 *
 * <p>Options: {@code --callers 64 --records 20000 --dir DIR}.
 */
final class FsyncDemo {
  static final String OPTIONS = "--callers --records --dir";

  private FsyncDemo() {}

  static String run(DemoOptions options, PrintStream out) throws Exception {
    int callers = options.intValue("callers", 64);
    int records = options.intValue("records", 20_000);
    String dirOption = options.stringValue("dir", "");
    options.requireAllUsed(OPTIONS);
    Path dir = dirOption.isEmpty() ? Files.createTempDirectory("ringbatch-fsync") : Path.of(dirOption);
    Path unbatchedFile = dir.resolve("unbatched.log");
    Path batchedFile = dir.resolve("batched.log");
    Files.deleteIfExists(unbatchedFile);
    Files.deleteIfExists(batchedFile);
    out.printf("fsync demo: %d callers append %,d records durably to files in %s%n", callers, records, dir);

    CallerHarness.Outcome unbatched;
    try (FileChannel channel = FileChannel.open(unbatchedFile, StandardOpenOption.CREATE,
        StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
      Object lock = new Object();
      unbatched = CallerHarness.run("fsync-per-record", callers, records, (caller, i) -> {
        ByteBuffer bytes = ByteBuffer.wrap(record(caller, i).getBytes(StandardCharsets.UTF_8));
        synchronized (lock) {
          while (bytes.hasRemaining()) {
            channel.write(bytes);
          }
          channel.force(false);
        }
      }, out);
    }

    CallerHarness.Outcome batched;
    long forces;
    double meanBatch;
    // tag::group-commit[]
    try (ByteSink<String> sink = ByteSink.<String>toFile(batchedFile,
            (line, buffer) -> buffer.put(line.getBytes(StandardCharsets.UTF_8))).fsync(true).build();
         Batcher<String, Long> batcher = Batcher.of("fsync-demo", BatcherConfig.builder().ringSize(4096)
             .maxBatchSize(4096).build(), sink)) {
      // end::group-commit[]
      batched = CallerHarness.run("group-commit", callers, records,
          (caller, i) -> batcher.submitAndWait(record(caller, i)), out);
      meanBatch = batcher.close(Duration.ofSeconds(30)).stats().meanBatchSize();
      forces = sink.forces();
    }

    long unbatchedLines = lines(unbatchedFile);
    long batchedLines = lines(batchedFile);
    long lost = Math.abs((records - unbatched.failed()) - unbatchedLines)
        + Math.abs((records - batched.failed()) - batchedLines);
    out.println();
    out.println("                    records/s    p50 µs    p99 µs   fsyncs");
    out.printf(Locale.ROOT, "%-19s %10.0f %9.0f %9.0f %8d%n", "fsync per record", unbatched.perSecond(),
        unbatched.p50Micros(), unbatched.p99Micros(), records);
    out.printf(Locale.ROOT, "%-19s %10.0f %9.0f %9.0f %8d  (mean batch %.1f)%n", "group commit",
        batched.perSecond(), batched.p50Micros(), batched.p99Micros(), forces, meanBatch);
    out.printf("records in each file: %d and %d (expected %d)%n", unbatchedLines, batchedLines, records);
    String result = String.format(Locale.ROOT, "RESULT fsync callers=%d records=%d unbatched_records_per_s=%.0f"
            + " batched_records_per_s=%.0f speedup=%.2f fsyncs_batched=%d mean_batch=%.1f lost=%d",
        callers, records, unbatched.perSecond(), batched.perSecond(), batched.perSecond() / unbatched.perSecond(),
        forces, meanBatch, lost);
    out.println(result);
    return result;
  }

  private static String record(int caller, long index) {
    return "record " + index + " from caller " + caller + "\n";
  }

  private static long lines(Path file) throws java.io.IOException {
    try (Stream<String> lines = Files.lines(file)) {
      return lines.count();
    }
  }
}
