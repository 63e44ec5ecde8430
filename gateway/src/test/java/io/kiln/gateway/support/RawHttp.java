package io.kiln.gateway.support;

import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;

/**
 * One HTTP/1.1 connection driven byte by byte (plain or TLS), for what a library client hides: when each part of a
 * request is sent, and every answer read as it comes, {@code 100 Continue} included. Reads block for at most
 * {@link #READ_TIMEOUT_MILLIS}; a test thread only.
 */
public final class RawHttp implements Closeable {

  public static final int READ_TIMEOUT_MILLIS = 20_000;

  private final Socket socket;
  private final InputStream in;
  private final OutputStream out;

  private RawHttp(Socket socket) throws IOException {
    this.socket = socket;
    socket.setSoTimeout(READ_TIMEOUT_MILLIS);
    socket.setTcpNoDelay(true);
    this.in = socket.getInputStream();
    this.out = socket.getOutputStream();
  }

  public static RawHttp connect(String host, int port) throws IOException {
    return new RawHttp(new Socket(host, port));
  }

  /** A TLS connection trusting what {@code trust} trusts; the handshake is done before this returns. */
  public static RawHttp connectTls(String host, int port, SSLContext trust) throws IOException {
    SSLSocket s = (SSLSocket) trust.getSocketFactory().createSocket(host, port);
    s.startHandshake();
    return new RawHttp(s);
  }

  /** A request's head: request line, {@code headers} ("Name: value" each), the blank line. */
  public static String head(String method, String path, String... headers) {
    StringBuilder b = new StringBuilder(method).append(' ').append(path).append(" HTTP/1.1\r\nHost: kiln\r\n");
    for (String h : headers) {
      b.append(h).append("\r\n");
    }
    return b.append("\r\n").toString();
  }

  public RawHttp send(String ascii) throws IOException {
    return send(ascii.getBytes(StandardCharsets.US_ASCII));
  }

  public RawHttp send(byte[] bytes) throws IOException {
    out.write(bytes);
    out.flush();
    return this;
  }

  /** Sends {@code bytes} as one chunk of a chunked body. */
  public RawHttp chunk(byte[] bytes) throws IOException {
    send(Integer.toHexString(bytes.length) + "\r\n");
    send(bytes);
    return send("\r\n");
  }

  /** Ends a chunked body. */
  public RawHttp lastChunk() throws IOException {
    return send("0\r\n\r\n");
  }

  /** One answer as the server sends it: status line and headers, and a body only for a final (non-1xx) answer. */
  public record Answer(String statusLine, int status, Map<String, String> headers, String body) {
    public String header(String name) {
      return headers.get(name.toLowerCase(Locale.ROOT));
    }
  }

  /** Reads the next answer (an interim {@code 100 Continue} is one); its body by Content-Length or chunks. */
  public Answer read() throws IOException {
    String statusLine = line();
    Map<String, String> headers = new LinkedHashMap<>();
    for (String h = line(); !h.isEmpty(); h = line()) {
      int colon = h.indexOf(':');
      headers.put(h.substring(0, colon).trim().toLowerCase(Locale.ROOT), h.substring(colon + 1).trim());
    }
    int status = Integer.parseInt(statusLine.split(" ")[1]);
    if (status < 200) {
      return new Answer(statusLine, status, headers, "");
    }
    byte[] body;
    if ("chunked".equalsIgnoreCase(headers.get("transfer-encoding"))) {
      ByteArrayOutputStream all = new ByteArrayOutputStream();
      for (int size = Integer.parseInt(line(), 16); size > 0; size = Integer.parseInt(line(), 16)) {
        all.write(exactly(size));
        line();
      }
      line();
      body = all.toByteArray();
    } else {
      body = exactly(Integer.parseInt(headers.getOrDefault("content-length", "0")));
    }
    return new Answer(statusLine, status, headers, new String(body, StandardCharsets.UTF_8));
  }

  /**
   * Whether the server closed the connection: the next read finds its end (or a reset) rather than bytes. Blocks
   * until one or the other, at most {@link #READ_TIMEOUT_MILLIS} (then false: still open).
   */
  public boolean closedByServer() throws IOException {
    try {
      return in.read() < 0;
    } catch (java.net.SocketTimeoutException e) {
      return false;
    } catch (IOException e) {
      return true; // reset, or TLS ended without its close_notify: closed all the same
    }
  }

  private byte[] exactly(int n) throws IOException {
    byte[] b = in.readNBytes(n);
    if (b.length < n) {
      throw new IOException("connection closed after " + b.length + " of " + n + " body bytes");
    }
    return b;
  }

  private String line() throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    for (int c = in.read(); c != '\n'; c = in.read()) {
      if (c < 0) {
        throw new IOException("connection closed mid-answer (read so far: '" + b.toString(StandardCharsets.US_ASCII)
            + "')");
      }
      if (c != '\r') {
        b.write(c);
      }
    }
    return b.toString(StandardCharsets.US_ASCII);
  }

  @Override
  public void close() throws IOException {
    socket.close();
  }
}
