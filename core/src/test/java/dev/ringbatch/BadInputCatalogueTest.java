package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.ringbatch.sink.ByteSink;
import dev.ringbatch.sink.JdbcBatchSink;
import java.io.ByteArrayOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every kind of bad input and misuse, with the exact exception and message it gets; {@code docs/errors.md}
 * lists the same cases, and {@link #everyMessage_isInTheErrorsPage()} fails when the page misses one.
 */
class BadInputCatalogueTest {
  private static final Batcher<String, Void> OPEN = Batcher.of("catalogue", BatcherConfig.ofDefaults(),
      BatchSink.noResult(items -> { }));

  @AfterAll
  static void close() {
    OPEN.close(Duration.ofSeconds(5));
  }

  /** A case: what the caller did, the exception type and the exact message. */
  record Case(String what, ThrowingCallable action, Class<? extends Throwable> type, String message) {
    @Override
    public String toString() {
      return what;
    }
  }

  static List<Case> cases() {
    return List.of(
        new Case("submit(null)", () -> OPEN.submit(null), NullPointerException.class, "item"),
        new Case("offer(null)", () -> OPEN.offer(null), NullPointerException.class, "item"),
        new Case("ringSize not a power of two", () -> BatcherConfig.builder().ringSize(1000),
            IllegalArgumentException.class, "ringSize must be a positive power of two but was 1000"),
        new Case("ringSize zero", () -> BatcherConfig.builder().ringSize(0),
            IllegalArgumentException.class, "ringSize must be a positive power of two but was 0"),
        new Case("maxBatchSize zero", () -> BatcherConfig.builder().maxBatchSize(0),
            IllegalArgumentException.class, "maxBatchSize must be positive but was 0"),
        new Case("maxBatchSize negative", () -> BatchLimits.ofDefaults().withMaxBatchSize(-5),
            IllegalArgumentException.class, "maxBatchSize must be positive but was -5"),
        new Case("maxBatchBytes zero", () -> BatcherConfig.builder().maxBatchBytes(0),
            IllegalArgumentException.class, "maxBatchBytes must be positive but was 0"),
        new Case("linger negative", () -> BatcherConfig.builder().linger(Duration.ofMillis(-1)),
            IllegalArgumentException.class, "linger must not be negative but was PT-0.001S"),
        new Case("submitTimeout zero", () -> BatcherConfig.builder().submitTimeout(Duration.ZERO),
            IllegalArgumentException.class, "submitTimeout must be positive but was PT0S"),
        new Case("closeTimeout negative", () -> BatcherConfig.builder().closeTimeout(Duration.ofSeconds(-1)),
            IllegalArgumentException.class, "closeTimeout must not be negative but was PT-1S"),
        new Case("maxBatchSize above ringSize", () -> BatcherConfig.builder().maxBatchSize(32_768).build(),
            IllegalStateException.class, "maxBatchSize (32768) must not exceed ringSize (16384)"),
        new Case("maxInFlightBatches out of range", () -> BatcherConfig.builder().maxInFlightBatches(5000),
            IllegalArgumentException.class, "maxInFlightBatches must be from 1 to 1024 but was 5000"),
        new Case("overflowPolicy null", () -> BatcherConfig.builder().overflowPolicy(null),
            NullPointerException.class, "overflowPolicy"),
        new Case("blank name", () -> Batcher.of("", BatcherConfig.ofDefaults(), BatchSink.noResult(i -> { })),
            IllegalArgumentException.class, "name must not be blank but was ''"),
        new Case("byte limit without weigher",
            () -> Batcher.of("x", BatcherConfig.builder().maxBatchBytes(512).build(), BatchSink.noResult(i -> { })),
            IllegalStateException.class,
            "maxBatchBytes (512) needs a weigher: use Batcher.of(name, config, weigher, sink)"),
        new Case("setLimits above the ring", () -> OPEN.setLimits(BatchLimits.ofDefaults().withMaxBatchSize(32_768)),
            IllegalStateException.class, "maxBatchSize (32768) must not exceed ringSize (16384)"),
        new Case("setLimits byte limit without weigher", () -> OPEN.setLimits(OPEN.limits().withMaxBatchBytes(99)),
            IllegalStateException.class,
            "maxBatchBytes (99) needs a weigher, but batcher 'catalogue' was created without one"),
        new Case("weigher returns a negative weight", () -> withBatcher(
            Batcher.of("w", BatcherConfig.ofDefaults(), s -> -1, BatchSink.<String>noResult(i -> { })),
            b -> b.submit("x")),
            IllegalArgumentException.class, "weigher must return a weight of zero or more but returned -1 for x"),
        new Case("sink returns too few results", () -> failureOf(
            BatchSink.<String, Integer>withResults(items -> List.of())),
            OutcomeUnknownException.class, "sink returned 0 results for a batch of 1 items; it may have written them"),
        new Case("sink returns a null result list", () -> failureOf(
            BatchSink.<String, Integer>withResults(items -> null)),
            OutcomeUnknownException.class,
            "sink returned null instead of a list of 1 results; it may have written the items"),
        new Case("sink records an outcome twice", () -> failureOf((Batch<String, Integer> batch) -> {
          batch.complete(0, 1);
          batch.complete(0, 2);
        }), IllegalStateException.class, "item 0 of the batch already has an outcome"),
        new Case("sink uses the batch after write", BadInputCatalogueTest::useBatchAfterWrite,
            IllegalStateException.class, "the batch is no longer being written; record outcomes inside write()"),
        new Case("sink records no outcome for an item", BadInputCatalogueTest::forgetOutcome,
            IllegalStateException.class, "the sink of batcher 'orders' recorded no outcome for item 0 of a batch of"
                + " 1; a sink must complete or fail every item (Batch.completeRemaining marks the rest written)"),
        new Case("async sink returns null", BadInputCatalogueTest::asyncNull, NullPointerException.class,
            "the async sink returned null instead of a CompletionStage"),
        new Case("submit after close", BadInputCatalogueTest::submitAfterClose, BatcherClosedException.class,
            "Batcher 'closed' is closed (capacity 16384); item rejected"),
        new Case("close with a negative timeout", () -> OPEN.close(Duration.ofMillis(-1)),
            IllegalArgumentException.class, "timeout must not be negative but was PT-0.001S"),
        new Case("submitAndWait on the consumer thread", BadInputCatalogueTest::waitOnConsumer,
            IllegalStateException.class, "submitAndWait must not be called on the consumer thread of batcher"
                + " 'self' (for example from its sink): it would wait for itself; use submit or offer"),
        new Case("thread factory returns a started thread", BadInputCatalogueTest::startedConsumerThread,
            IllegalStateException.class, "threadFactory returned a thread that was already started ('early'):"
                + " batcher 'early' needs a new thread for its consumer"),
        new Case("shards zero", () -> Batcher.sharded("s", BatcherConfig.ofDefaults(), 0,
            s -> BatchSink.<String>noResult(i -> { })),
            IllegalArgumentException.class, "shards must be positive but was 0"),
        new Case("retry attempts zero", () -> RetryPolicy.builder().maxAttempts(0),
            IllegalArgumentException.class, "maxAttempts must be from 1 to 100 but was 0"),
        new Case("retry jitter above 1", () -> RetryPolicy.builder().jitter(2),
            IllegalArgumentException.class, "jitter must be from 0 to 1 but was 2.0"),
        new Case("JDBC sink with blank SQL", () -> JdbcBatchSink.of(new NoDataSource(), " ", (ps, x) -> { }),
            IllegalArgumentException.class, "sql must not be blank but was ' '"),
        new Case("byte sink buffer of 0", () -> ByteSink.toStream(new ByteArrayOutputStream(),
            (String s, java.nio.ByteBuffer b) -> { }).bufferSize(0),
            IllegalArgumentException.class, "bufferSize must be positive but was 0"),
        new Case("fsync on a stream", () -> ByteSink.toStream(new ByteArrayOutputStream(),
            (String s, java.nio.ByteBuffer b) -> { }).fsync(true).build(),
            IllegalStateException.class, "fsync needs a file or a FileChannel, but the target is an OutputStream"),
        new Case("fsync on a device or a pipe", () -> ByteSink.toFile(java.nio.file.Path.of("/dev/null"),
            (String s, java.nio.ByteBuffer b) -> { }).fsync(true).build(),
            IllegalStateException.class, "fsync needs a regular file, but /dev/null is not one (a pipe or a"
                + " device?)"));
  }

  static Stream<Arguments> catalogue() {
    return cases().stream().map(Arguments::of);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("catalogue")
  void badInput_getsItsExactExceptionAndMessage(Case c) {
    Throwable thrown = catchThrowable(c.action());

    assertThat(thrown).as(c.what()).isExactlyInstanceOf(c.type()).hasMessage(c.message());
  }

  @Test
  void catalogue_hasAtLeastTwentyCases() {
    assertThat(cases()).hasSizeGreaterThanOrEqualTo(20);
  }

  @Test
  void everyMessage_isInTheErrorsPage() throws Exception {
    String page = Files.readString(Path.of("..", "docs", "errors.md"));
    for (Case c : cases()) {
      assertThat(page).as("docs/errors.md lists %s", c.what()).contains(c.message());
    }
  }

  /** A consumer runnable the factory started itself ends with the batcher it was made for, which never started. */
  @Test
  void aThreadFactoryThatStartsItsThread_leavesNoConsumerRunning() throws Exception {
    AtomicReference<Thread> made = new AtomicReference<>();
    Throwable thrown = catchThrowable(() -> Batcher.of("early", BatcherConfig.builder().threadFactory(r -> {
      made.set(startedDaemon(r));
      return made.get();
    }).build(), BatchSink.<String>noResult(i -> { })));
    assertThat(thrown).isInstanceOf(IllegalStateException.class);
    made.get().join(TimeUnit.SECONDS.toMillis(10));
    assertThat(made.get().isAlive()).as("the consumer thread the factory started").isFalse();
  }

  // ---- helpers: each runs a scenario and throws what the caller would see ----

  private static Thread startedDaemon(Runnable r) {
    Thread t = new Thread(r, "early");
    t.setDaemon(true);
    t.start();
    return t;
  }

  private static void startedConsumerThread() {
    Batcher.of("early", BatcherConfig.builder().threadFactory(BadInputCatalogueTest::startedDaemon).build(),
        BatchSink.<String>noResult(i -> { })).close();
  }

  private static <B extends Batcher<?, ?>> void withBatcher(B batcher, java.util.function.Consumer<B> use) {
    try {
      use.accept(batcher);
    } finally {
      batcher.close(Duration.ofSeconds(5));
    }
  }

  /** Submits one item into a batcher with {@code sink} and throws the cause its future failed with. */
  private static void failureOf(BatchSink<String, Integer> sink) throws Throwable {
    Batcher<String, Integer> b = Batcher.of("failing", BatcherConfig.ofDefaults(), sink);
    try {
      b.submit("x").get(10, TimeUnit.SECONDS);
    } catch (java.util.concurrent.ExecutionException e) {
      throw e.getCause();
    } finally {
      b.close(Duration.ofSeconds(5));
    }
  }

  private static void useBatchAfterWrite() {
    AtomicReference<Batch<String, Void>> leaked = new AtomicReference<>();
    Batcher<String, Void> b = Batcher.of("leak", BatcherConfig.ofDefaults(), batch -> {
      leaked.set(batch);
      batch.completeRemaining(null);
    });
    try {
      b.submit("x").join();
      leaked.get().complete(0, null);
    } finally {
      b.close(Duration.ofSeconds(5));
    }
  }

  private static void forgetOutcome() throws Throwable {
    Batcher<String, Void> b = Batcher.of("orders", BatcherConfig.ofDefaults(), batch -> { });
    try {
      b.submit("x").join();
    } catch (CompletionException e) {
      throw e.getCause();
    } finally {
      b.close(Duration.ofSeconds(5));
    }
  }

  private static void asyncNull() throws Throwable {
    Batcher<String, Void> b = Batcher.ofAsync("async", BatcherConfig.ofDefaults(), batch -> null);
    try {
      b.submit("x").join();
    } catch (CompletionException e) {
      throw e.getCause();
    } finally {
      b.close(Duration.ofSeconds(5));
    }
  }

  private static void submitAfterClose() throws Throwable {
    Batcher<String, Void> b = Batcher.of("closed", BatcherConfig.ofDefaults(), BatchSink.noResult(i -> { }));
    b.close(Duration.ofSeconds(5));
    try {
      b.submit("x").join();
    } catch (CompletionException e) {
      throw e.getCause();
    }
  }

  private static void waitOnConsumer() throws Throwable {
    AtomicReference<Batcher<String, Void>> self = new AtomicReference<>();
    Batcher<String, Void> b = Batcher.of("self", BatcherConfig.ofDefaults(), (Batch<String, Void> batch) -> {
      if (batch.item(0).equals("outer")) {
        self.get().submitAndWait("inner");
      }
    });
    self.set(b);
    try {
      CompletableFuture<Void> f = b.submit("outer");
      f.join();
    } catch (CompletionException e) {
      throw e.getCause();
    } finally {
      b.close(Duration.ofSeconds(5));
    }
  }

  /** A DataSource that is never used: the sink is refused before it would connect. */
  private static final class NoDataSource implements javax.sql.DataSource {
    @Override
    public java.sql.Connection getConnection() {
      throw new UnsupportedOperationException("never called");
    }

    @Override
    public java.sql.Connection getConnection(String u, String p) {
      throw new UnsupportedOperationException("never called");
    }

    @Override
    public java.io.PrintWriter getLogWriter() {
      return null;
    }

    @Override
    public void setLogWriter(java.io.PrintWriter out) {
      throw new UnsupportedOperationException("never called");
    }

    @Override
    public void setLoginTimeout(int seconds) {
      throw new UnsupportedOperationException("never called");
    }

    @Override
    public int getLoginTimeout() {
      return 0;
    }

    @Override
    public java.util.logging.Logger getParentLogger() {
      throw new UnsupportedOperationException("never called");
    }

    @Override
    public <T> T unwrap(Class<T> iface) {
      throw new UnsupportedOperationException("never called");
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) {
      return false;
    }
  }
}
