package dev.ringbatch.spring.boot;

import java.beans.PropertyDescriptor;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.springframework.beans.BeanUtils;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName.Form;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.boot.context.properties.source.IterableConfigurationPropertySource;
import org.springframework.core.env.Environment;

/**
 * Refuses a key under {@code ringbatch.batchers.<name>.} or {@code ringbatch.defaults.} that is no batcher
 * setting ({@code ring-sise}), naming the nearest one: Spring Boot binds a map of settings without a word
 * about keys it does not know, and the batcher would silently keep its default. Keys are compared as Boot
 * binds them: in any case, with or without dashes, underscores or (from environment variables) dots between
 * their words. Called once, at startup.
 */
final class SettingsKeyCheck {
  private static final ConfigurationPropertyName BATCHERS = ConfigurationPropertyName.of("ringbatch.batchers");
  private static final ConfigurationPropertyName DEFAULTS = ConfigurationPropertyName.of("ringbatch.defaults");

  /** Every setting, dashed: {@code ring-size}, ..., {@code retry.max-attempts}. */
  static final List<String> KEYS = keys();

  private SettingsKeyCheck() {}

  /**
   * @throws InvalidConfigurationPropertyValueException naming the first unknown key and the nearest known one
   */
  static void check(Environment environment) {
    for (ConfigurationPropertySource source : ConfigurationPropertySources.get(environment)) {
      if (source instanceof IterableConfigurationPropertySource names) {
        names.stream().forEach(name -> check(source, name));
      }
    }
  }

  private static void check(ConfigurationPropertySource source, ConfigurationPropertyName name) {
    int first = BATCHERS.isAncestorOf(name) ? 3 : DEFAULTS.isAncestorOf(name) ? 2 : -1;
    if (first < 0 || name.getNumberOfElements() <= first) {
      return;
    }
    StringBuilder key = new StringBuilder();
    StringBuilder uniform = new StringBuilder();
    for (int i = first; i < name.getNumberOfElements(); i++) {
      key.append(i == first ? "" : ".").append(name.getElement(i, Form.DASHED));
      uniform.append(name.getElement(i, Form.UNIFORM));
    }
    for (String known : KEYS) {
      if (uniform(known).equals(uniform.toString())) {
        return;
      }
    }
    ConfigurationProperty property = source.getConfigurationProperty(name);
    Object value = property == null ? "" : String.valueOf(property.getValue());
    throw new InvalidConfigurationPropertyValueException(name.toString(), value,
        key + " is not a batcher setting; the nearest is " + nearest(key.toString()));
  }

  /**
   * Without dashes and dots: an environment variable splits at every underscore, so
   * {@code RINGBATCH_DEFAULTS_RETRY_MAX_ATTEMPTS} reads {@code retry.max.attempts}, and Boot binds it.
   */
  private static String uniform(String dashed) {
    return dashed.replace("-", "").replace(".", "");
  }

  private static String nearest(String key) {
    String best = KEYS.get(0);
    int bestDistance = Integer.MAX_VALUE;
    for (String known : KEYS) {
      int distance = distance(key, known);
      if (distance < bestDistance) {
        best = known;
        bestDistance = distance;
      }
    }
    return best;
  }

  /** Levenshtein distance: the fewest single-character edits from {@code a} to {@code b}. */
  static int distance(String a, String b) {
    int[] previous = new int[b.length() + 1];
    int[] current = new int[b.length() + 1];
    for (int j = 0; j <= b.length(); j++) {
      previous[j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      current[0] = i;
      for (int j = 1; j <= b.length(); j++) {
        int substitution = previous[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
        current[j] = Math.min(substitution, Math.min(previous[j], current[j - 1]) + 1);
      }
      int[] swap = previous;
      previous = current;
      current = swap;
    }
    return previous[b.length()];
  }

  private static List<String> keys() {
    List<String> keys = new ArrayList<>();
    addKeys(keys, "", BatcherProperties.Settings.class);
    addKeys(keys, "retry.", BatcherProperties.Retry.class);
    return List.copyOf(keys);
  }

  /** The bean properties of {@code type} that bind a value (the nested retry is listed on its own). */
  private static void addKeys(List<String> keys, String prefix, Class<?> type) {
    for (PropertyDescriptor property : BeanUtils.getPropertyDescriptors(type)) {
      if (property.getReadMethod() != null && property.getWriteMethod() != null) {
        keys.add(prefix + property.getName().replaceAll("([a-z0-9])([A-Z])", "$1-$2").toLowerCase(Locale.ROOT));
      }
    }
  }
}
