package dev.ringbatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class BatcherConfigTest {

  @Test
  void ofDefaults_documentedValues() {
    BatcherConfig config = BatcherConfig.ofDefaults();

    assertThat(config.ringSize()).isEqualTo(16_384);
    assertThat(config.adaptive()).isEqualTo(Adaptive.throughput());
    assertThat(config.limits()).isEqualTo(BatchLimits.of(4096, BatchLimits.NO_BYTE_LIMIT, Duration.ZERO));
    assertThat(config.overflowPolicy()).isEqualTo(OverflowPolicy.BLOCK);
    assertThat(config.submitTimeout()).isEqualTo(Duration.ofSeconds(5));
    assertThat(config.waitMode()).isEqualTo(WaitMode.BLOCKING);
    assertThat(config.closeTimeout()).isEqualTo(Duration.ofSeconds(10));
    assertThat(config.threadFactory()).isNull();
  }

  @Test
  void ringSize_notPowerOfTwo() {
    assertThatThrownBy(() -> BatcherConfig.builder().ringSize(1000))
        .isExactlyInstanceOf(IllegalArgumentException.class)
        .hasMessage("ringSize must be a positive power of two but was 1000");
  }

  @Test
  void ringSize_zero() {
    assertThatThrownBy(() -> BatcherConfig.builder().ringSize(0))
        .isExactlyInstanceOf(IllegalArgumentException.class)
        .hasMessage("ringSize must be a positive power of two but was 0");
  }

  @Test
  void ringSize_negative() {
    assertThatThrownBy(() -> BatcherConfig.builder().ringSize(Integer.MIN_VALUE))
        .isExactlyInstanceOf(IllegalArgumentException.class)
        .hasMessage("ringSize must be a positive power of two but was -2147483648");
  }

  @Test
  void maxBatchSize_zero() {
    assertThatThrownBy(() -> BatcherConfig.builder().maxBatchSize(0))
        .isExactlyInstanceOf(IllegalArgumentException.class)
        .hasMessage("maxBatchSize must be positive but was 0");
  }

  @Test
  void maxBatchBytes_negative() {
    assertThatThrownBy(() -> BatcherConfig.builder().maxBatchBytes(-1))
        .isExactlyInstanceOf(IllegalArgumentException.class)
        .hasMessage("maxBatchBytes must be positive but was -1");
  }

  @Test
  void linger_negative() {
    assertThatThrownBy(() -> BatcherConfig.builder().linger(Duration.ofMillis(-5)))
        .isExactlyInstanceOf(IllegalArgumentException.class)
        .hasMessage("linger must not be negative but was PT-0.005S");
  }

  @Test
  void submitTimeout_zero() {
    assertThatThrownBy(() -> BatcherConfig.builder().submitTimeout(Duration.ZERO))
        .isExactlyInstanceOf(IllegalArgumentException.class)
        .hasMessage("submitTimeout must be positive but was PT0S");
  }

  @Test
  void closeTimeout_negative() {
    assertThatThrownBy(() -> BatcherConfig.builder().closeTimeout(Duration.ofSeconds(-1)))
        .isExactlyInstanceOf(IllegalArgumentException.class)
        .hasMessage("closeTimeout must not be negative but was PT-1S");
  }

  @Test
  void nullArguments_namedInMessage() {
    BatcherConfig.Builder builder = BatcherConfig.builder();
    assertThatThrownBy(() -> builder.overflowPolicy(null)).hasMessage("overflowPolicy");
    assertThatThrownBy(() -> builder.waitMode(null)).hasMessage("waitMode");
    assertThatThrownBy(() -> builder.linger(null)).hasMessage("linger");
    assertThatThrownBy(() -> builder.submitTimeout(null)).hasMessage("submitTimeout");
    assertThatThrownBy(() -> builder.threadFactory(null)).hasMessage("threadFactory");
    assertThatThrownBy(() -> builder.ticker(null)).hasMessage("ticker");
    assertThatThrownBy(() -> BatcherConfig.from(null)).hasMessage("config");
  }

  @Test
  void build_maxBatchSizeAboveRingSize() {
    BatcherConfig.Builder builder = BatcherConfig.builder().ringSize(64).maxBatchSize(128);

    assertThatThrownBy(builder::build)
        .isExactlyInstanceOf(IllegalStateException.class)
        .hasMessage("maxBatchSize (128) must not exceed ringSize (64)");
  }

  @Test
  void theLimitsTuneThemselvesUntilALingerOrLimitsAreSet_andASizeAloneIsACap() {
    BatcherConfig capped = BatcherConfig.builder().maxBatchSize(100).maxBatchBytes(1 << 20).build();
    assertThat(capped.adaptive()).isEqualTo(Adaptive.throughput());
    assertThat(capped.limits()).isEqualTo(BatchLimits.of(100, 1 << 20, Duration.ZERO));
    assertThat(BatcherConfig.builder().ringSize(64).build().limits().maxBatchSize()).as("the ring caps the tuning")
        .isEqualTo(64);

    BatcherConfig noLinger = BatcherConfig.builder().linger(Duration.ZERO).build();
    assertThat(noLinger.adaptive()).isNull();
    assertThat(noLinger.limits()).isEqualTo(BatchLimits.ofDefaults());
    BatcherConfig fixed = BatcherConfig.builder().limits(BatchLimits.ofDefaults()).build();
    assertThat(fixed.adaptive()).isNull();
    assertThat(fixed.limits()).isEqualTo(BatchLimits.of(256, BatchLimits.NO_BYTE_LIMIT, Duration.ZERO));
    BatcherConfig lingering = BatcherConfig.from(BatcherConfig.ofDefaults()).linger(Duration.ofMillis(2)).build();
    assertThat(lingering.adaptive()).isNull();
    assertThat(lingering.limits()).isEqualTo(BatchLimits.of(256, BatchLimits.NO_BYTE_LIMIT, Duration.ofMillis(2)));
    assertThat(BatcherConfig.from(lingering).build().adaptive()).as("a copy keeps the choice").isNull();

    BatcherConfig latency = BatcherConfig.builder().limits(BatchLimits.ofDefaults())
        .adaptive(Adaptive.latency(Duration.ofMillis(5))).build();
    assertThat(latency.adaptive()).as("a mode set outright wins; the limits are its caps")
        .isEqualTo(Adaptive.latency(Duration.ofMillis(5)));
    assertThat(latency.limits().maxBatchSize()).isEqualTo(256);
  }

  @Test
  void from_copiesEveryField() {
    BatcherConfig original = BatcherConfig.builder()
        .ringSize(64).maxBatchSize(32).maxBatchBytes(4096).linger(Duration.ofMillis(3))
        .overflowPolicy(OverflowPolicy.DROP).submitTimeout(Duration.ofMillis(7))
        .waitMode(WaitMode.YIELDING).closeTimeout(Duration.ofSeconds(2))
        .build();

    BatcherConfig copy = BatcherConfig.from(original).build();

    assertThat(copy).usingRecursiveComparison().isEqualTo(original);
    assertThat(copy.toString()).isEqualTo(original.toString())
        .isEqualTo("BatcherConfig{ringSize=64, limits=BatchLimits{maxBatchSize=32, maxBatchBytes=4096,"
            + " linger=PT0.003S}, overflowPolicy=DROP, submitTimeout=PT0.007S, waitMode=YIELDING,"
            + " closeTimeout=PT2S, fixed limits}");
  }

  @Test
  void submitTimeout_noTimeout_accepted() {
    BatcherConfig config = BatcherConfig.builder().submitTimeout(BatcherConfig.NO_TIMEOUT).build();

    assertThat(config.submitTimeout()).isEqualTo(BatcherConfig.NO_TIMEOUT);
    assertThat(config.toString()).contains("submitTimeout=none");
  }

  @Test
  void limits_withers_validateAndCopy() {
    BatchLimits limits = BatchLimits.ofDefaults().withMaxBatchSize(10).withMaxBatchBytes(100)
        .withLinger(Duration.ofMillis(1));

    assertThat(limits.maxBatchSize()).isEqualTo(10);
    assertThat(limits.maxBatchBytes()).isEqualTo(100);
    assertThat(limits.hasByteLimit()).isTrue();
    assertThat(limits.linger()).isEqualTo(Duration.ofMillis(1));
    assertThat(BatchLimits.ofDefaults().hasByteLimit()).isFalse();
    assertThatThrownBy(() -> limits.withMaxBatchSize(-3))
        .hasMessage("maxBatchSize must be positive but was -3");
  }

  @Test
  void config_afterItsBuilderOrACopyChanges_keepsItsOwnValues() {
    BatcherConfig.Builder builder = BatcherConfig.builder().ringSize(64).adaptive(Adaptive.throughput());
    BatcherConfig config = builder.build();
    String before = config.toString();

    builder.ringSize(128).maxBatchSize(16).overflowPolicy(OverflowPolicy.DROP);
    BatcherConfig.Builder copy = BatcherConfig.from(config);
    copy.ringSize(256).closeTimeout(Duration.ZERO);
    BatcherConfig fromCopy = copy.build();

    assertThat(config.toString()).isEqualTo(before);
    assertThat(config.ringSize()).isEqualTo(64);
    assertThat(config.limits().maxBatchSize()).as("an adaptive config's cap is its own ring").isEqualTo(64);
    assertThat(fromCopy.limits().maxBatchSize()).as("a copy's cap follows its own ring").isEqualTo(256);
    assertThat(BatcherConfig.from(config).build().toString()).isEqualTo(before);
  }
}
