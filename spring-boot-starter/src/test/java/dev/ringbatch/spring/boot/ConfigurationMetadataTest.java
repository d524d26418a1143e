package dev.ringbatch.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The generated configuration metadata, which IDEs complete keys from, holds what the docs say it does: the
 * health contributor's switch and the library defaults of {@code ringbatch.defaults.*} (issue 21, docs).
 */
class ConfigurationMetadataTest {

  @Test
  void metadata_hasTheHealthSwitchAndTheDefaultsOfTheBatcherSettings() throws IOException {
    String metadata;
    try (InputStream in = getClass().getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
      assertThat(in).as("the generated metadata").isNotNull();
      metadata = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    assertThat(property(metadata, "management.health.ringbatch.enabled", "true")).isTrue();
    assertThat(property(metadata, "ringbatch.defaults.ring-size", "16384")).isTrue();
    assertThat(property(metadata, "ringbatch.defaults.adaptive", "\"throughput\"")).isTrue();
    assertThat(property(metadata, "ringbatch.defaults.overflow-policy", "\"block\"")).isTrue();
    assertThat(property(metadata, "ringbatch.health.max-write-age", "\"30s\"")).isTrue();
  }

  /** Whether the entry named {@code name} has the default value {@code json}, in either order of keys. */
  private static boolean property(String metadata, String name, String json) {
    String q = Pattern.quote(name);
    String v = Pattern.quote(json);
    return Pattern.compile("\\{[^{}]*\"name\"\\s*:\\s*\"" + q + "\"[^{}]*\"defaultValue\"\\s*:\\s*" + v
        + "[^{}]*}|\\{[^{}]*\"defaultValue\"\\s*:\\s*" + v + "[^{}]*\"name\"\\s*:\\s*\"" + q + "\"[^{}]*}")
        .matcher(metadata).find();
  }
}
