package io.kiln.deploy.e2e;

import io.kiln.testkit.PromText;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/** A blocking HTTP/1.1 client for end-to-end tests, and helpers for binary tensors (Prometheus text: testkit's PromText). */
final class Http {

  /** One response, read whole. */
  record Response(int status, HttpHeaders headers, byte[] body) {

    String text() {
      return new String(body, StandardCharsets.UTF_8);
    }

    JsonObject json() {
      return new JsonObject(text());
    }

    String header(String name) {
      return headers.firstValue(name).orElse(null);
    }
  }

  private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(10)).build();

  Response get(int port, String path) {
    return send(request(port, path).GET());
  }

  /** POSTs {@code body}; {@code headers} are name, value pairs. */
  Response post(int port, String path, String contentType, byte[] body, String... headers) {
    HttpRequest.Builder b = request(port, path).header("Content-Type", contentType)
        .POST(HttpRequest.BodyPublishers.ofByteArray(body));
    for (int i = 0; i + 1 < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return send(b);
  }

  Response postJson(int port, String path, String json, String... headers) {
    return post(port, path, "application/json", json.getBytes(StandardCharsets.UTF_8), headers);
  }

  private static HttpRequest.Builder request(int port, String path) {
    return HttpRequest.newBuilder(URI.create("http://" + ServingCluster.HOST + ":" + port + path))
        .timeout(Duration.ofSeconds(90));
  }

  private Response send(HttpRequest.Builder b) {
    try {
      HttpResponse<byte[]> r = client.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
      return new Response(r.statusCode(), r.headers(), r.body());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  /**
   * A JSON inference request sent on a connection of its own and left waiting for its answer; {@link #close}
   * drops the connection, as a client that gives up does.
   */
  static final class Held implements AutoCloseable {
    private final Socket socket;

    Held(int port, String path, String json, String... headers) {
      try {
        socket = new Socket(ServingCluster.HOST, port);
        byte[] body = json.getBytes(StandardCharsets.UTF_8);
        StringBuilder head = new StringBuilder("POST " + path + " HTTP/1.1\r\nHost: " + ServingCluster.HOST + ":" + port
            + "\r\nContent-Type: application/json\r\nContent-Length: " + body.length + "\r\n");
        for (int i = 0; i + 1 < headers.length; i += 2) {
          head.append(headers[i]).append(": ").append(headers[i + 1]).append("\r\n");
        }
        head.append("\r\n");
        OutputStream out = socket.getOutputStream();
        out.write(head.toString().getBytes(StandardCharsets.US_ASCII));
        out.write(body);
        out.flush();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    @Override
    public void close() {
      try {
        socket.close();
      } catch (IOException ignored) {
        // closing is the point
      }
    }
  }

  static byte[] littleEndian(float[] values) {
    ByteBuffer b = ByteBuffer.allocate(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
    for (float v : values) {
      b.putFloat(v);
    }
    return b.array();
  }

  static float[] floats(byte[] bytes, int offset, int length) {
    float[] out = new float[length / 4];
    ByteBuffer.wrap(bytes, offset, length).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(out);
    return out;
  }
}
