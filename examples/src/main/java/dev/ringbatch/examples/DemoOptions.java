package dev.ringbatch.examples;

import java.util.HashMap;
import java.util.Map;

/**
 * The demo's command line: {@code <demo> [--name value]...}. Unknown options are an error that lists the
 * known ones, so a typo does not silently run with defaults.
 */
final class DemoOptions {
  private final String demo;
  private final Map<String, String> values;

  private DemoOptions(String demo, Map<String, String> values) {
    this.demo = demo;
    this.values = values;
  }

  static DemoOptions parse(String[] args, String defaultDemo) {
    String demo = defaultDemo;
    int start = 0;
    if (args.length > 0 && !args[0].startsWith("--")) {
      demo = args[0];
      start = 1;
    }
    Map<String, String> values = new HashMap<>();
    for (int i = start; i < args.length; i++) {
      String arg = args[i];
      if (!arg.startsWith("--") || i + 1 >= args.length) {
        throw new IllegalArgumentException("expected --option value but found '" + arg + "'");
      }
      values.put(arg.substring(2), args[++i]);
    }
    return new DemoOptions(demo, values);
  }

  String demo() {
    return demo;
  }

  int intValue(String name, int defaultValue) {
    return intValue(name, defaultValue, 1);
  }

  /** The option's whole-number value, at least {@code min}. */
  int intValue(String name, int defaultValue, int min) {
    String value = values.remove(name);
    if (value == null) {
      return defaultValue;
    }
    try {
      int parsed = Integer.parseInt(value.replace("_", ""));
      if (parsed < min) {
        throw new IllegalArgumentException("--" + name + " must be at least " + min + " but was " + value);
      }
      return parsed;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("--" + name + " must be a whole number but was '" + value + "'", e);
    }
  }

  String stringValue(String name, String defaultValue) {
    String value = values.remove(name);
    return value == null ? defaultValue : value;
  }

  /** Throws if any option was given that the demo did not read. */
  void requireAllUsed(String known) {
    if (!values.isEmpty()) {
      throw new IllegalArgumentException("unknown option(s) " + values.keySet() + " for demo '" + demo
          + "'; known: " + known);
    }
  }
}
