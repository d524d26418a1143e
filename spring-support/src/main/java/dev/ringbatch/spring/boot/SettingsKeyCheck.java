package dev.ringbatch.spring.boot;

import java.beans.PropertyDescriptor;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.springframework.beans.BeanUtils;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName.Form;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.boot.context.properties.source.IterableConfigurationPropertySource;
import org.springframework.core.env.Environment;
import org.springframework.core.env.SystemEnvironmentPropertySource;

/**
 * Refuses a key under {@code ringbatch.} that is no setting ({@code ringbatch.batchers.audit.ring-sise},
 * {@code ringbatch.shutdown-timout}), naming the nearest one: Spring Boot binds the properties without a word
 * about keys it does not know, and the batcher, the shutdown or the health would silently keep its default. A
 * key under {@code ringbatch.batchers.<name>.} or {@code ringbatch.defaults.} is compared with the batcher
 * settings, any other with the rest, when its first word is one of theirs or a typo of one: a key such as
 * {@code ringbatch.stress.items} (a tool's system property) is nobody's setting and left alone. Keys are compared as Boot binds them: in any case, with or without dashes,
 * underscores or (from environment variables) dots between their words. Called once, at startup.
 */
final class SettingsKeyCheck {
  private static final ConfigurationPropertyName ROOT = ConfigurationPropertyName.of("ringbatch");
  private static final ConfigurationPropertyName BATCHERS = ConfigurationPropertyName.of("ringbatch.batchers");
  private static final ConfigurationPropertyName DEFAULTS = ConfigurationPropertyName.of("ringbatch.defaults");

  /** Every batcher setting, dashed: {@code ring-size}, ..., {@code retry.max-attempts}. */
  static final List<String> KEYS = keys(BatcherProperties.Settings.class);
  /** Every other key under {@code ringbatch.}, dashed: {@code enabled}, ..., {@code health.max-write-age}. */
  private static final List<String> OTHER_KEYS = keys(BatcherProperties.class);

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
    boolean setting = BATCHERS.isAncestorOf(name) || DEFAULTS.isAncestorOf(name);
    int first = BATCHERS.isAncestorOf(name) ? 3 : DEFAULTS.isAncestorOf(name) ? 2 : ROOT.isAncestorOf(name) ? 1 : -1;
    if (first < 0 || name.getNumberOfElements() <= first) {
      return;
    }
    // An environment variable splits at every underscore (RINGBATCH_DEFAULTS_RETRY_MAX_ATTEMPTS reads
    // retry.max.attempts, and Boot binds it): compared without its dots. Elsewhere a dot is a level of its own.
    boolean environment = source.getUnderlyingSource() instanceof SystemEnvironmentPropertySource;
    StringBuilder key = new StringBuilder();
    StringBuilder uniform = new StringBuilder();
    for (int i = first; i < name.getNumberOfElements(); i++) {
      key.append(i == first ? "" : ".").append(name.getElement(i, Form.DASHED));
      uniform.append(i == first || environment ? "" : ".").append(name.getElement(i, Form.UNIFORM));
    }
    List<String> known = setting ? KEYS : OTHER_KEYS;
    for (String k : known) {
      if (uniform(k, environment).equals(uniform.toString())) {
        return;
      }
    }
    if (!setting && !nearOurs(name.getElement(1, Form.DASHED), key.toString())) {
      return; // another's key in our namespace (a system property -Dringbatch.x of a tool): none of ours, no typo
    }
    ConfigurationProperty property = source.getConfigurationProperty(name);
    Object value = property == null ? "" : String.valueOf(property.getValue());
    throw new InvalidConfigurationPropertyValueException(name.toString(), value, setting
        ? key + " is not a batcher setting; the nearest is " + nearest(key.toString(), known)
        : "ringbatch." + key + " is not a ringbatch setting; the nearest is ringbatch." + nearest(key.toString(), known));
  }

  /**
   * Whether a key under {@code ringbatch.} is a typo of one of ours: its first word near a first word of ours
   * ({@code batcher}, {@code helth}), or the whole key near one of ours without its dots ({@code shutdown-timout},
   * {@code shutdown.timeout}). Near is two edits at most, one for a word of four letters or fewer, so that a short
   * word of another tool ({@code job}, {@code key}) is not taken for {@code jdbc} or {@code web}.
   */
  private static boolean nearOurs(String first, String key) {
    String word = uniform(first, true);
    String whole = uniform(key, true);
    for (String k : OTHER_KEYS) {
      if (near(word, uniform(k.contains(".") ? k.substring(0, k.indexOf('.')) : k, true))
          || near(whole, uniform(k, true))) {
        return true;
      }
    }
    return false;
  }

  private static boolean near(String a, String b) {
    return distance(a, b) <= (Math.min(a.length(), b.length()) <= 4 ? 1 : 2);
  }

  /** Without dashes; without dots too where the key came from an environment variable. */
  private static String uniform(String dashed, boolean environment) {
    String s = dashed.replace("-", "");
    return environment ? s.replace(".", "") : s;
  }

  private static String nearest(String key, List<String> keys) {
    String best = keys.get(0);
    int bestDistance = Integer.MAX_VALUE;
    for (String known : keys) {
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

  /**
   * The keys {@code type}'s bean properties bind, nested ones ({@code retry.max-attempts}) too; the batchers'
   * settings (the map and the defaults) are left out, being checked against {@link #KEYS}.
   */
  private static List<String> keys(Class<?> type) {
    List<String> keys = new ArrayList<>();
    addKeys(keys, "", type);
    return List.copyOf(keys);
  }

  private static void addKeys(List<String> keys, String prefix, Class<?> type) {
    for (PropertyDescriptor property : BeanUtils.getPropertyDescriptors(type)) {
      Class<?> value = property.getPropertyType();
      String key = prefix + property.getName().replaceAll("([a-z0-9])([A-Z])", "$1-$2").toLowerCase(Locale.ROOT);
      boolean group = value.getEnclosingClass() == BatcherProperties.class; // health, retry, defaults, ...
      if (property.getReadMethod() != null && (group || value == Map.class || property.getWriteMethod() != null)) {
        keys.add(key); // a group's own key too: YAML gives an empty one ("health: {}") as a property
      }
      if (group && value != BatcherProperties.Settings.class) {
        addKeys(keys, key + ".", value);
      }
    }
  }
}
