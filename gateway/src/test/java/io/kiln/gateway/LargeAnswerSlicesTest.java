package io.kiln.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.gateway.support.GatewayTestBase;
import io.kiln.gateway.support.TestModels;
import io.kiln.pools.DataType;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * An HTTP infer answer larger than one slice (256 KiB) leaves in slices under the connection's flow control
 * (issue #36): byte for byte the answer a single write gave, with its Content-Length, to a fast client, to a slow one
 * whose small receive buffer keeps the server's write queue full, and on a kept-alive connection after a client that
 * went away mid-body.
 */
class LargeAnswerSlicesTest extends GatewayTestBase {

  private static final int ELEMENTS = 1_000_000; // INT8: a binary answer of ~4 slices, the body under the 1 MiB limit
  private static final String PATH = "/v2/models/" + TestModels.identity(DataType.INT8) + "/infer";

  private static byte[] tensor(long seed) {
    byte[] data = new byte[ELEMENTS];
    new Random(seed).nextBytes(data);
    return data;
  }

  private static String header() {
    return "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"INT8\",\"shape\":[" + ELEMENTS + "],\"parameters\":"
        + "{\"binary_data_size\":" + ELEMENTS + "}}],\"outputs\":[{\"name\":\"y\",\"parameters\":{\"binary_data\":true}}]}";
  }

  private static byte[] body(byte[] data) {
    byte[] json = header().getBytes(StandardCharsets.US_ASCII);
    byte[] body = Arrays.copyOf(json, json.length + data.length);
    System.arraycopy(data, 0, body, json.length, data.length);
    return body;
  }

  /** The tensor bytes after the answer's JSON header, checked to name output y with all of them. */
  private static byte[] outputBytes(byte[] answer, int headerLength) {
    JsonObject out = new JsonObject(Buffer.buffer(Arrays.copyOf(answer, headerLength))).getJsonArray("outputs")
        .getJsonObject(0);
    assertThat(out.getString("name")).isEqualTo("y");
    assertThat(out.getJsonObject("parameters").getInteger("binary_data_size")).isEqualTo(ELEMENTS);
    return Arrays.copyOfRange(answer, headerLength, answer.length);
  }

  @Test
  void aLargeBinaryAnswerArrivesWholeWithItsLengthTwiceOnOneConnection() {
    for (long seed = 1; seed <= 2; seed++) {
      byte[] data = tensor(seed);
      HttpResponse<Buffer> r = post(PATH, Buffer.buffer(body(data)),
          Map.of("Inference-Header-Content-Length", Integer.toString(header().length())));
      assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(200);
      assertThat(r.getHeader("Content-Type")).isEqualTo("application/octet-stream");
      assertThat(r.getHeader("Content-Length")).isEqualTo(Integer.toString(r.body().length()));
      assertThat(r.getHeader("Transfer-Encoding")).isNull();
      int headerLength = Integer.parseInt(r.getHeader("Inference-Header-Content-Length"));
      assertThat(outputBytes(r.body().getBytes(), headerLength)).isEqualTo(data);
    }
  }

  @Test
  void aSlowReaderGetsEveryByteAndAClientGoneMidBodyLeavesTheServerServing() throws IOException {
    byte[] data = tensor(3);
    try (Socket slow = new Socket()) {
      slow.setReceiveBufferSize(4096); // before connecting: the window the server may fill stays small
      slow.setSoTimeout(20_000);
      slow.connect(new java.net.InetSocketAddress(HOST, gateway.httpPort()));
      send(slow.getOutputStream(), body(data));
      Answer a = read(slow.getInputStream(), 1024, Integer.MAX_VALUE);
      assertThat(a.status).isEqualTo(200);
      assertThat(a.body).hasSize(Integer.parseInt(a.headers.get("content-length")));
      assertThat(outputBytes(a.body, Integer.parseInt(a.headers.get("inference-header-content-length"))))
          .isEqualTo(data);
    }

    try (Socket gone = new Socket(HOST, gateway.httpPort())) {
      gone.setSoTimeout(20_000);
      send(gone.getOutputStream(), body(data));
      Answer part = read(gone.getInputStream(), 8192, 100_000);
      assertThat(part.status).isEqualTo(200);
      assertThat(part.body).hasSize(100_000); // and it closes with the rest of the answer unread
    }

    try (Socket next = new Socket(HOST, gateway.httpPort())) {
      next.setSoTimeout(20_000);
      byte[] other = tensor(4);
      for (int i = 0; i < 2; i++) { // a kept-alive connection: the second answer follows the first's last byte
        send(next.getOutputStream(), body(other));
        Answer a = read(next.getInputStream(), 65536, Integer.MAX_VALUE);
        assertThat(a.status).isEqualTo(200);
        assertThat(outputBytes(a.body, Integer.parseInt(a.headers.get("inference-header-content-length"))))
            .isEqualTo(other);
      }
    }
  }

  private static void send(OutputStream out, byte[] body) throws IOException {
    String head = "POST " + PATH + " HTTP/1.1\r\nHost: kiln\r\nContent-Type: application/octet-stream\r\n"
        + "Inference-Header-Content-Length: " + header().length() + "\r\nContent-Length: " + body.length + "\r\n\r\n";
    out.write(head.getBytes(StandardCharsets.US_ASCII));
    out.write(body);
    out.flush();
  }

  private record Answer(int status, Map<String, String> headers, byte[] body) {
  }

  /** One answer: head, then its body read {@code step} bytes at a time, at most {@code most} bytes of it. */
  private static Answer read(InputStream in, int step, int most) throws IOException {
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    while (true) {
      int b = in.read();
      assertThat(b).as("the connection closed inside the answer's head").isNotNegative();
      head.write(b);
      byte[] h = head.toByteArray();
      int n = h.length;
      if (n >= 4 && h[n - 4] == '\r' && h[n - 3] == '\n' && h[n - 2] == '\r' && h[n - 1] == '\n') {
        break;
      }
    }
    String[] lines = head.toString(StandardCharsets.US_ASCII).split("\r\n");
    int status = Integer.parseInt(lines[0].split(" ")[1]);
    Map<String, String> headers = new LinkedHashMap<>();
    for (int i = 1; i < lines.length; i++) {
      int colon = lines[i].indexOf(':');
      headers.put(lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT), lines[i].substring(colon + 1).trim());
    }
    int length = Math.min(most, Integer.parseInt(headers.get("content-length")));
    byte[] body = new byte[length];
    int read = 0;
    while (read < length) {
      int n = in.read(body, read, Math.min(step, length - read));
      assertThat(n).as("the connection closed after " + read + " of " + length + " body bytes").isPositive();
      read += n;
    }
    return new Answer(status, headers, body);
  }
}
