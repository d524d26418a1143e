package dev.ringbatch.sink;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

/**
 * A TCP proxy in front of a database that can lose a reply: when a client's message contains the trigger
 * text (say {@code COMMIT}) and {@link #dropNext} (or the random {@code chance}) says so, the message goes on
 * to the server, the server's reply is read and thrown away, and both connections are cut. The server did the
 * work; the client never hears of it. That is a lost acknowledgement, the case a sink must report as
 * "outcome unknown".
 */
public final class ReplyDroppingProxy implements AutoCloseable {
  private final ServerSocket listener;
  private final int targetPort;
  private final byte[] trigger;
  private final BooleanSupplier chance;
  private final AtomicInteger dropNext = new AtomicInteger();
  private final AtomicInteger dropped = new AtomicInteger();
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();
  private volatile boolean closed;

  public ReplyDroppingProxy(int targetPort, String trigger, BooleanSupplier chance) throws IOException {
    this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    this.targetPort = targetPort;
    this.trigger = trigger.getBytes(StandardCharsets.US_ASCII);
    this.chance = chance;
    Thread acceptor = new Thread(this::accept, "proxy-accept");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  public int port() {
    return listener.getLocalPort();
  }

  /** Loses the reply to the next {@code count} messages that contain the trigger. */
  public void dropNext(int count) {
    dropNext.addAndGet(count);
  }

  /** How many replies were lost so far. */
  public int dropped() {
    return dropped.get();
  }

  private void accept() {
    while (!closed) {
      try {
        Socket client = listener.accept();
        Socket server = new Socket(InetAddress.getLoopbackAddress(), targetPort);
        client.setTcpNoDelay(true);
        server.setTcpNoDelay(true);
        sockets.add(client);
        sockets.add(server);
        Connection link = new Connection(client, server);
        start("proxy-up", link::clientToServer);
        start("proxy-down", link::serverToClient);
      } catch (IOException e) {
        if (!closed) {
          System.err.println("proxy: accept failed: " + e);
        }
      }
    }
  }

  private static void start(String name, Runnable pump) {
    Thread t = new Thread(pump, name);
    t.setDaemon(true);
    t.start();
  }

  private final class Connection {
    private final Socket client;
    private final Socket server;
    private volatile boolean swallowing;

    Connection(Socket client, Socket server) {
      this.client = client;
      this.server = server;
    }

    void clientToServer() {
      byte[] buffer = new byte[64 * 1024];
      try (InputStream in = client.getInputStream(); OutputStream out = server.getOutputStream()) {
        int n;
        while ((n = in.read(buffer)) > 0) {
          if (contains(buffer, n) && shouldDrop()) {
            swallowing = true; // from now on the server's bytes go nowhere; cut once its reply arrived
          }
          out.write(buffer, 0, n);
          out.flush();
        }
      } catch (IOException e) {
        // a cut connection ends the pump
      } finally {
        cut();
      }
    }

    void serverToClient() {
      byte[] buffer = new byte[64 * 1024];
      try (InputStream in = server.getInputStream(); OutputStream out = client.getOutputStream()) {
        int n;
        while ((n = in.read(buffer)) > 0) {
          if (swallowing) {
            dropped.incrementAndGet(); // the server answered: the work is done, the client never hears of it
            break;
          }
          out.write(buffer, 0, n);
          out.flush();
        }
      } catch (IOException e) {
        // a cut connection ends the pump
      } finally {
        cut();
      }
    }

    private boolean shouldDrop() {
      while (true) {
        int pending = dropNext.get();
        if (pending <= 0) {
          return chance.getAsBoolean();
        }
        if (dropNext.compareAndSet(pending, pending - 1)) {
          return true;
        }
      }
    }

    private void cut() {
      closeQuietly(client);
      closeQuietly(server);
    }
  }

  private boolean contains(byte[] data, int length) {
    outer:
    for (int i = 0; i + trigger.length <= length; i++) {
      for (int j = 0; j < trigger.length; j++) {
        if (data[i + j] != trigger[j]) {
          continue outer;
        }
      }
      return true;
    }
    return false;
  }

  private static void closeQuietly(Socket socket) {
    try {
      socket.close();
    } catch (IOException e) {
      // already closed: nothing to release
    }
  }

  @Override
  public void close() throws IOException {
    closed = true;
    listener.close();
    sockets.forEach(ReplyDroppingProxy::closeQuietly);
  }
}
