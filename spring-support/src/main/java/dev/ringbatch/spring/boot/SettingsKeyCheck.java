package dev.ringbatch.spring.boot;

import java.beans.PropertyDescriptor;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.BeanUtils;
import org.springframework.boot.context.properties.bind.BindContext;
import org.springframework.boot.context.properties.bind.BindException;
import org.springframework.boot.context.properties.bind.BindHandler;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.bind.UnboundConfigurationPropertiesException;
import org.springframework.boot.context.properties.bind.handler.NoUnboundElementsBindHandler;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName.Form;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.core.env.Environment;
import org.springframework.core.env.PropertySource;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.core.env.SystemEnvironmentPropertySource;

/**
 * Refuses a key under {@code ringbatch.} in the application's configuration that binds to no setting
 * ({@code ringbatch.batchers.audit.ring-sise}, {@code ringbatch.shutdown-timout}, {@code ringbatch.ring-size}),
 * naming the nearest one: Spring Boot binds the properties without a word about keys it does not know, and the
 * batcher, the shutdown or the health would silently keep its default. Which keys bind is Boot's own answer (its
 * binder, with a {@link NoUnboundElementsBindHandler}), so every form Boot binds is accepted and nothing else.
 * Environment variables and {@code -D} system properties are not checked: other tools' keys share the prefix
 * there ({@code RINGBATCH_HOME}, a Kubernetes service's {@code RINGBATCH_WEB_SERVICE_HOST}, a harness's
 * {@code -Dringbatch.stress.items}), and Boot's check cannot tell which of an environment variable's forms it bound
 * ({@code RINGBATCH_DEFAULTS_RING_SIZE} binds {@code ring-size} yet reads as {@code ring.size}). Called once, at
 * startup.
 */
final class SettingsKeyCheck {
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
    try {
      Binder.get(environment).bind("ringbatch", Bindable.ofInstance(new BatcherProperties()), new Unbound());
    } catch (BindException e) {
      if (e.getCause() instanceof UnboundConfigurationPropertiesException unbound) {
        throw refusal(unbound.getUnboundProperties().iterator().next());
      }
      // a value Boot cannot convert: the properties' own binding fails startup with it, naming the key
    }
  }

  /**
   * Boot's check of the keys nothing bound, over the application's configuration. A key whose value is empty
   * ({@code linger=}, {@code ${ORDERS_RING_SIZE:}}) binds to null, which Boot's handler does not count as bound: it
   * is counted here, as the properties' own binding takes it (the default stays).
   */
  private static final class Unbound extends NoUnboundElementsBindHandler {
    Unbound() {
      super(BindHandler.DEFAULT, SettingsKeyCheck::configuration);
    }

    @Override
    public void onFinish(ConfigurationPropertyName name, Bindable<?> target, BindContext context,
        @Nullable Object result) throws Exception {
      if (result == null && context.getConfigurationProperty() != null) {
        super.onSuccess(name, target, context, "");
      }
      super.onFinish(name, target, context, result);
    }
  }

  /** Whether {@code source} is the application's configuration: not environment variables, nor system properties. */
  private static Boolean configuration(ConfigurationPropertySource source) {
    return !(source.getUnderlyingSource() instanceof PropertySource<?> underlying
        && (underlying instanceof SystemEnvironmentPropertySource
        || StandardEnvironment.SYSTEM_PROPERTIES_PROPERTY_SOURCE_NAME.equals(underlying.getName())));
  }

  private static InvalidConfigurationPropertyValueException refusal(ConfigurationProperty property) {
    ConfigurationPropertyName name = property.getName();
    boolean setting = BATCHERS.isAncestorOf(name) && name.getNumberOfElements() > 3 || DEFAULTS.isAncestorOf(name);
    int first = BATCHERS.isAncestorOf(name) && setting ? 3 : setting ? 2 : 1;
    StringBuilder key = new StringBuilder();
    for (int i = first; i < name.getNumberOfElements(); i++) {
      key.append(i == first ? "" : ".").append(name.getElement(i, Form.DASHED));
    }
    String value = String.valueOf(property.getValue());
    String nearest = nearest(key.toString(), setting ? KEYS : OTHER_KEYS);
    String prefix = setting ? "" : "ringbatch.";
    return new InvalidConfigurationPropertyValueException(name.toString(), value, nearest.equals(key.toString())
        ? "Boot binds nothing to this form of " + prefix + nearest + "; write it as " + prefix + nearest
        : prefix + key + " is not a " + (setting ? "batcher" : "ringbatch") + " setting; the nearest is " + prefix
            + nearest);
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
   * The keys {@code type}'s bean properties bind, nested ones ({@code retry.max-attempts}) too, for the refusal's
   * nearest key; the batchers' settings under the map and the defaults are {@link #KEYS}.
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
