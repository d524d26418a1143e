package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 21, item 9: failed fire-and-forget items no longer log a stack trace per batch, and a per-batcher handler
 * can take each of them.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class OfferFailureTest {
  private static final Logger RINGBATCH = Logger.getLogger("dev.ringbatch");
  private final List<LogRecord> warnings = new CopyOnWriteArrayList<>();
  private final Handler capture = new Handler() {
    @Override
    public void publish(LogRecord record) {
      if (record.getLevel().intValue() >= Level.WARNING.intValue()) {
        warnings.add(record);
      }
    }

    @Override
    public void flush() {}

    @Override
    public void close() {}
  };
  private Batcher<Integer, Void> batcher;

  @BeforeEach
  void listen() {
    RINGBATCH.addHandler(capture);
  }

  @AfterEach
  void stop() {
    RINGBATCH.removeHandler(capture);
    if (batcher != null) {
      batcher.close(Duration.ofSeconds(5));
    }
  }

  private static BatchSink<Integer, Void> failingSink() {
    return BatchSink.noResult(items -> {
      throw new IllegalStateException("database down");
    });
  }

  @Test
  void hundredFailingOffers_logAtMostOneLinePerTenSeconds_andAreAllCounted() throws Exception {
    long start = System.nanoTime();
    batcher = Batcher.of("quiet", BatcherConfig.builder().maxBatchSize(1).build(), failingSink());
    for (int i = 0; i < 100; i++) {
      assertThat(batcher.offer(i)).isTrue();
      batcher.flush().get(5, TimeUnit.SECONDS); // one batch per offer: the flood the issue measured
    }

    assertThat(batcher.stats().failed()).isEqualTo(100);
    long tenSecondPeriods = (System.nanoTime() - start) / TimeUnit.SECONDS.toNanos(10);
    assertThat(warnings).as("lines for 100 failed batches").hasSizeBetween(1, (int) (1 + tenSecondPeriods));
    assertThat(warnings.get(0).getMessage()).contains("batcher 'quiet': 1 fire-and-forget item(s) of a batch of 1"
        + " failed").contains("offerFailureHandler");
    assertThat(warnings.get(0).getThrown()).hasMessage("database down");
  }

  @Test
  void handler_isToldEachFailedItemWithItsCause_inOrder_andNothingIsLogged() throws Exception {
    List<String> told = new CopyOnWriteArrayList<>();
    batcher = Batcher.of("handled", BatcherConfig.builder()
        .offerFailureHandler((item, cause) -> told.add(item + ":" + cause.getMessage())).build(), failingSink());
    for (int i = 0; i < 5; i++) {
      batcher.offer(i);
    }
    batcher.flush().get(5, TimeUnit.SECONDS);

    assertThat(told).containsExactly("0:database down", "1:database down", "2:database down", "3:database down",
        "4:database down");
    assertThat(batcher.stats().failed()).isEqualTo(5);
    assertThat(warnings).isEmpty();
  }

  @Test
  void handler_isNotToldOfItemsWithAFuture_norOfWrittenOnes() throws Exception {
    List<Object> told = new CopyOnWriteArrayList<>();
    batcher = Batcher.of("mixed", BatcherConfig.builder().offerFailureHandler((item, cause) -> told.add(item))
        .build(), BatchSink.<Integer>noResult(items -> {
          if (items.stream().anyMatch(i -> i < 0)) {
            throw new IllegalStateException("negative");
          }
        }));
    batcher.offer(1);
    batcher.flush().get(5, TimeUnit.SECONDS);
    assertThat(batcher.submit(-1)).failsWithin(Duration.ofSeconds(5)).withThrowableOfType(java.util.concurrent.ExecutionException.class);
    batcher.offer(-2);
    batcher.flush().get(5, TimeUnit.SECONDS);

    assertThat(told).containsExactly(-2);
  }

  @Test
  void handlerThatThrowsOrReenters_isLogged_andTheBatcherGoesOn() throws Exception {
    List<Object> told = new CopyOnWriteArrayList<>();
    java.util.concurrent.atomic.AtomicReference<Batcher<Integer, Void>> self =
        new java.util.concurrent.atomic.AtomicReference<>();
    batcher = Batcher.of("reentrant", BatcherConfig.builder().offerFailureHandler((item, cause) -> {
      told.add(item);
      self.get().offer(1_000 + (Integer) item); // re-enters on the completing thread: fails too, told too
      if ((Integer) item < 1_000) {
        throw new AssertionError("handler broke");
      }
    }).build(), BatchSink.noResult(items -> {
      if (items.stream().anyMatch(i -> i < 2_000)) {
        throw new IllegalStateException("down");
      }
    }));
    self.set(batcher);
    batcher.offer(1);
    batcher.flush().get(5, TimeUnit.SECONDS);
    batcher.flush().get(5, TimeUnit.SECONDS);

    assertThat(told).startsWith(1, 1_001);
    assertThat(warnings).hasSize(1);
    assertThat(warnings.get(0).getMessage()).contains("the offer failure handler threw");
    assertThat(batcher.stats().failed()).isGreaterThanOrEqualTo(2);
  }

  @Test
  void badHandler_isRefusedNamingTheField_andTheConfigCopiesIt() {
    assertThatThrownBy(() -> BatcherConfig.builder().offerFailureHandler(null))
        .isInstanceOf(NullPointerException.class).hasMessage("offerFailureHandler");
    OfferFailureHandler handler = (item, cause) -> { };
    BatcherConfig config = BatcherConfig.builder().offerFailureHandler(handler).build();
    assertThat(BatcherConfig.from(config).build().offerFailureHandler()).isSameAs(handler);
    assertThat(BatcherConfig.ofDefaults().offerFailureHandler()).isNull();
  }
}
