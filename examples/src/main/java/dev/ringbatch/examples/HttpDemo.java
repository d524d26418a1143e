package dev.ringbatch.examples;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.zaxxer.hikari.HikariDataSource;
import dev.ringbatch.Batcher;
import dev.ringbatch.BatcherConfig;
import dev.ringbatch.postgresql.PgUnnest;
import dev.ringbatch.sink.JdbcBatchSink;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * A small HTTP service with two endpoints that store the posted event in PostgreSQL: {@code /unbatched} with
 * one autocommit {@code INSERT} per request, {@code /batched} through ringbatch, each request thread still
 * answering only after its own row is committed. A built-in load generator sends a bounded number of
 * requests over loopback from C concurrent clients, to each endpoint in turn. The same experiment as the Go
 * fan-in batcher's README.
 *
 * <p>Options: {@code --callers 64 --requests 20000 --pool 16 --jdbc-url URL --durability on|off}.
 */
final class HttpDemo {
  static final String OPTIONS = "--callers --requests --pool --jdbc-url --durability";

  private HttpDemo() {}

  record Event(long id, String payload) {}

  static String run(DemoOptions options, PrintStream out) throws Exception {
    int callers = options.intValue("callers", 64);
    int requests = options.intValue("requests", 20_000);
    int poolSize = options.intValue("pool", Math.min(callers, 16));
    String jdbcUrl = options.stringValue("jdbc-url", "");
    String durability = options.stringValue("durability", "on");
    options.requireAllUsed(OPTIONS);
    out.printf("http demo: %d clients send %,d requests to each endpoint over loopback%n", callers, requests);

    ExecutorService handlers = Executors.newFixedThreadPool(callers * 2);
    try (DemoDatabase database = DemoDatabase.start(jdbcUrl, durability, out);
         HikariDataSource pool = database.pool("ringbatch-http", poolSize);
         JdbcBatchSink<Event> sink = PgUnnest.<Event>sink(pool,
                 "INSERT INTO http_events (id, payload) SELECT * FROM unnest(?::bigint[], ?::text[])")
             .column("bigint", Event::id).column("text", Event::payload).build();
         Batcher<Event, Integer> batcher = Batcher.of("http-events", BatcherConfig.builder().ringSize(4096)
             .maxBatchSize(4096).build(), sink)) {
      DemoDatabase.execute(pool, "DROP TABLE IF EXISTS http_events");
      DemoDatabase.execute(pool, "CREATE TABLE http_events (id BIGINT PRIMARY KEY, payload TEXT NOT NULL)");

      HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1024);
      server.setExecutor(handlers);
      server.createContext("/unbatched", exchange -> handle(exchange, event -> {
        try (Connection c = pool.getConnection();
             PreparedStatement ps = c.prepareStatement("INSERT INTO http_events (id, payload) VALUES (?, ?)")) {
          ps.setLong(1, event.id());
          ps.setString(2, event.payload());
          ps.executeUpdate();
        }
      }));
      server.createContext("/batched", exchange -> handle(exchange, batcher::submitAndWait));
      server.start();
      try {
        String base = "http://127.0.0.1:" + server.getAddress().getPort();
        HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();
        CallerHarness.Outcome unbatched = load(client, base + "/unbatched", "http-unbatched", callers, requests,
            0, out);
        long unbatchedRows = DemoDatabase.count(pool, "SELECT count(*) FROM http_events");
        DemoDatabase.execute(pool, "TRUNCATE http_events");
        CallerHarness.Outcome batched = load(client, base + "/batched", "http-batched", callers, requests,
            0, out);
        long batchedRows = DemoDatabase.count(pool, "SELECT count(*) FROM http_events");

        long lost = Math.abs((requests - unbatched.failed()) - unbatchedRows)
            + Math.abs((requests - batched.failed()) - batchedRows);
        out.println();
        out.println("                 requests/s    p50 µs    p99 µs   failed");
        out.printf(Locale.ROOT, "%-16s %11.0f %9.0f %9.0f %8d%n", "/unbatched", unbatched.perSecond(),
            unbatched.p50Micros(), unbatched.p99Micros(), unbatched.failed());
        out.printf(Locale.ROOT, "%-16s %11.0f %9.0f %9.0f %8d  (mean batch %.1f)%n", "/batched",
            batched.perSecond(), batched.p50Micros(), batched.p99Micros(), batched.failed(),
            batcher.stats().meanBatchSize());
        out.printf("rows in table after each run: %d and %d (expected %d each)%n", unbatchedRows, batchedRows,
            requests);
        String result = String.format(Locale.ROOT, "RESULT http callers=%d requests=%d unbatched_rps=%.0f"
                + " batched_rps=%.0f speedup=%.2f failed=%d lost=%d", callers, requests, unbatched.perSecond(),
            batched.perSecond(), batched.perSecond() / unbatched.perSecond(), unbatched.failed() + batched.failed(),
            lost);
        out.println(result);
        return result;
      } finally {
        server.stop(0);
      }
    } finally {
      handlers.shutdownNow();
    }
  }

  /** Something that stores one event. */
  @FunctionalInterface
  interface Store {
    void store(Event event) throws Exception;
  }

  private static void handle(HttpExchange exchange, Store store) throws IOException {
    try (exchange; InputStream body = exchange.getRequestBody()) {
      String text = new String(body.readAllBytes(), StandardCharsets.UTF_8);
      int comma = text.indexOf(',');
      int status;
      try {
        store.store(new Event(Long.parseLong(text.substring(0, comma)), text.substring(comma + 1)));
        status = 204;
      } catch (Exception e) {
        status = 503;
      }
      exchange.sendResponseHeaders(status, -1);
      try (OutputStream ignored = exchange.getResponseBody()) {
        ignored.flush();
      }
    }
  }

  private static CallerHarness.Outcome load(HttpClient client, String url, String label, int callers,
      int requests, long idOffset, PrintStream out) throws InterruptedException {
    URI uri = URI.create(url);
    return CallerHarness.run(label, callers, requests, (caller, i) -> {
      HttpRequest request = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(30))
          .POST(HttpRequest.BodyPublishers.ofString((idOffset + i) + ",event " + i + " from client " + caller))
          .build();
      HttpResponse<Void> response = client.send(request, HttpResponse.BodyHandlers.discarding());
      if (response.statusCode() != 204) {
        throw new IOException(url + " answered " + response.statusCode());
      }
    }, out);
  }
}
