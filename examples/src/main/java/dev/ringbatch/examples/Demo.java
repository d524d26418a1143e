package dev.ringbatch.examples;

import java.io.PrintStream;

/**
 * The demos, one command each:
 * <pre>
 * mvn -q -B package -Pdemo -DskipTests -pl examples -am                          # jdbc (default)
 * mvn -q -B package -Pdemo -DskipTests -pl examples -am -Ddemo.args="fsync"
 * mvn -q -B package -Pdemo -DskipTests -pl examples -am -Ddemo.args="http"
 * mvn -q -B package -Pdemo -DskipTests -pl examples -am -Ddemo.args="quickstart"
 * </pre>
 * Options follow the demo's name, e.g. {@code -Ddemo.args="jdbc --callers 32 --rows 20000"}.
 */
public final class Demo {

  private Demo() {}

  public static void main(String[] args) throws Exception {
    String result = run(args, System.out);
    if (!result.contains(" lost=0")) {
      System.exit(1);
    }
  }

  /** Runs the demo named by the first argument and returns its RESULT line. */
  static String run(String[] args, PrintStream out) throws Exception {
    DemoOptions options = DemoOptions.parse(args, "jdbc");
    switch (options.demo()) {
      case "jdbc":
        return JdbcDemo.run(options, out);
      case "fsync":
        return FsyncDemo.run(options, out);
      case "http":
        return HttpDemo.run(options, out);
      case "quickstart":
        options.requireAllUsed("(none)");
        QuickStart.run(32, 2_000, out);
        return "RESULT quickstart lost=0";
      default:
        throw new IllegalArgumentException("unknown demo '" + options.demo()
            + "'; choose jdbc, fsync, http or quickstart");
    }
  }
}
