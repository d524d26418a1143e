package dev.ringbatch.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every Java snippet in the docs and the README is marked with the source region it was taken from:
 * {@code <!-- snippet: path/File.java#region -->} before the fence. This test fails when a snippet no
 * longer equals its region, and when a Java snippet has no marker, so the docs only show code that compiles.
 */
class DocSnippetsTest {
  private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
  private static final Pattern SNIPPET = Pattern.compile(
      "<!-- snippet: (\\S+)#(\\S+) -->\\s*```java\\n(.*?)```", Pattern.DOTALL);
  private static final Pattern MARKER_LINE = Pattern.compile("\\s*<!-- snippet: \\S+#\\S+ -->\\s*");

  @Test
  void snippets_matchTheirCompiledSource() throws IOException {
    List<String> checked = new ArrayList<>();
    for (Path doc : docs()) {
      Matcher m = SNIPPET.matcher(Files.readString(doc));
      while (m.find()) {
        String region = region(ROOT.resolve(m.group(1)), m.group(2));
        assertThat(normalize(m.group(3)))
            .as("snippet %s#%s in %s", m.group(1), m.group(2), ROOT.relativize(doc))
            .isEqualTo(normalize(region));
        checked.add(m.group(2));
      }
    }
    assertThat(checked).as("snippets found in the docs").hasSizeGreaterThanOrEqualTo(5);
  }

  @Test
  void everyJavaSnippet_isMarkedWithItsSource() throws IOException {
    List<String> unmarked = new ArrayList<>();
    for (Path doc : docs()) {
      List<String> lines = Files.readAllLines(doc);
      for (int i = 0; i < lines.size(); i++) {
        boolean marked = i > 0 && MARKER_LINE.matcher(lines.get(i - 1)).matches();
        if (lines.get(i).strip().startsWith("```java") && !marked) {
          unmarked.add(ROOT.relativize(doc) + ":" + (i + 1));
        }
      }
    }
    assertThat(unmarked).as("```java blocks without a <!-- snippet: path#region --> line just before them").isEmpty();
  }

  private static List<Path> docs() throws IOException {
    List<Path> docs = new ArrayList<>();
    docs.add(ROOT.resolve("README.md"));
    try (Stream<Path> files = Files.list(ROOT.resolve("docs"))) {
      files.filter(p -> p.toString().endsWith(".md")).sorted().forEach(docs::add);
    }
    return docs;
  }

  private static String region(Path source, String name) throws IOException {
    String text = Files.readString(source);
    String start = "// tag::" + name + "[]";
    String end = "// end::" + name + "[]";
    int from = text.indexOf(start);
    int to = text.indexOf(end);
    assertThat(from).as("region %s in %s", name, source).isNotNegative();
    assertThat(to).as("end of region %s in %s", name, source).isGreaterThan(from);
    String body = text.substring(text.indexOf('\n', from) + 1, to);
    return body.substring(0, body.lastIndexOf('\n') + 1);
  }

  /** Removes the common indentation and trailing blanks, so a snippet may sit at the margin. */
  private static String normalize(String code) {
    List<String> lines = new ArrayList<>(List.of(code.split("\n", -1)));
    while (!lines.isEmpty() && lines.get(lines.size() - 1).isBlank()) {
      lines.remove(lines.size() - 1);
    }
    int indent = lines.stream().filter(l -> !l.isBlank())
        .mapToInt(l -> l.length() - l.stripLeading().length()).min().orElse(0);
    StringBuilder out = new StringBuilder();
    for (String line : lines) {
      out.append(line.isBlank() ? "" : line.substring(indent).stripTrailing()).append('\n');
    }
    return out.toString();
  }
}
