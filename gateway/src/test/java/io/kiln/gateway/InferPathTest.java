package io.kiln.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.kiln.gateway.support.GatewayTestBase;
import io.kiln.testkit.OipRequest;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The infer path as the server's own request handler serves it (no router, no body handler): its path forms,
 * the router's answers for everything around it, the body limit, and connections that carry many requests.
 */
@Tag("slow")
class InferPathTest extends GatewayTestBase {

  private static final String BODY = OipRequest.fp32("input", new long[] {1, 4}, 1f, 2f, 3f, 4f).json();

  @Test
  void theServingVersionAnExplicitOneAnEncodedNameAndAQueryAreServed() {
    JsonObject plain = ok("/v2/models/mlp/infer");
    assertThat(plain.getString("model_name")).isEqualTo("mlp");
    assertThat(ok("/v2/models/mlp/versions/2/infer").getString("model_version")).isEqualTo("2");
    assertThat(ok("/v2/models/m%6Cp/infer").getString("model_name")).isEqualTo("mlp");
    assertThat(ok("/v2/models/mlp/infer?trace=1").getString("model_name")).isEqualTo("mlp");
    assertThat(cluster.sent).hasSize(4);
  }

  @Test
  void unknownNamesAreDecodedAsTheRouterDecodesThem() {
    for (String name : List.of("no%20pe", "a+b", "a%2Fb", "%C3%A9t%C3%A9")) {
      HttpResponse<Buffer> infer = postJson("/v2/models/" + name + "/infer", BODY);
      HttpResponse<Buffer> metadata = get("/v2/models/" + name); // the router's path parameter
      assertThat(infer.statusCode()).as(name).isEqualTo(404);
      assertThat(infer.bodyAsJsonObject().getString("error")).as(name)
          .isEqualTo(metadata.bodyAsJsonObject().getString("error"));
    }
    assertThat(postJson("/v2/models/no%20pe/infer", BODY).bodyAsJsonObject().getString("error"))
        .isEqualTo("model 'no pe' not found");
    assertThat(postJson("/v2/models/mlp/versions/9/infer", BODY).bodyAsJsonObject().getString("error"))
        .isEqualTo("model 'mlp' has no version '9'");
  }

  @Test
  void otherMethodsAre405AndOtherPathsAre404InTheUsualShape() {
    for (HttpMethod m : List.of(HttpMethod.GET, HttpMethod.PUT, HttpMethod.DELETE)) {
      HttpResponse<Buffer> r = join(http.request(m, gateway.httpPort(), HOST, "/v2/models/mlp/infer").send());
      assertThat(r.statusCode()).as(m.name()).isEqualTo(405);
      assertThat(r.bodyAsJsonObject().fieldNames()).containsExactly("error");
      assertThat(r.bodyAsJsonObject().getString("error")).contains(m.name());
    }
    // (Spellings with empty segments are the router's too: it collapses them, then answers for what is left.)
    for (String path : List.of("/v2/models/mlp/inferx", "/v2/models/mlp/x/2/infer", "/v2/models/mlp/versions/2/infer/x")) {
      HttpResponse<Buffer> r = postJson(path, BODY);
      assertThat(r.statusCode()).as(path).isEqualTo(404);
      assertThat(r.bodyAsJsonObject().fieldNames()).as(path).containsExactly("error");
    }
    assertThat(cluster.sent).isEmpty();
  }

  @Test
  void aBodyOverTheLimitIs413NamingItWhetherDeclaredOrChunkedAndIsCounted() throws IOException {
    double before = tooLarge();
    HttpResponse<Buffer> declared = post("/v2/models/mlp/infer", Buffer.buffer(new byte[MAX_BODY + 1]), Map.of());
    assertThat(declared.statusCode()).isEqualTo(413);
    assertThat(declared.bodyAsJsonObject().getString("error"))
        .isEqualTo("request body exceeds the limit of " + MAX_BODY + " bytes");
    try (Socket s = connect()) {
      OutputStream out = s.getOutputStream();
      out.write(("POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          + "Transfer-Encoding: chunked\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      byte[] chunk = new byte[64 * 1024];
      for (int sent = 0; sent <= MAX_BODY; sent += chunk.length) {
        out.write((Integer.toHexString(chunk.length) + "\r\n").getBytes(StandardCharsets.US_ASCII));
        out.write(chunk);
        out.write("\r\n".getBytes(StandardCharsets.US_ASCII));
      }
      out.write("0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
      out.flush();
      Answer a = read(s.getInputStream());
      assertThat(a.status()).isEqualTo(413);
      assertThat(new JsonObject(a.body()).getString("error")).contains("limit of " + MAX_BODY + " bytes");
    }
    assertThat(tooLarge() - before).isEqualTo(2.0);
    assertThat(cluster.sent).isEmpty();
    assertThat(postJson("/v2/models/mlp/infer", BODY).statusCode()).isEqualTo(200);
  }

  @Test
  void oneKeptAliveConnectionCarriesPipelinedRequestsAnsweredInOrder() throws IOException {
    try (Socket s = connect()) {
      StringBuilder pipelined = new StringBuilder();
      pipelined.append(request("/v2/models/mlp/infer", BODY));
      pipelined.append("GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n");
      pipelined.append(request("/v2/models/nope/infer", BODY));
      pipelined.append(request("/v2/models/mlp/versions/2/infer", OipRequest.fp32("input", new long[] {1, 4}, 1f, 2f, 3f, 4f).id("r4").json()));
      s.getOutputStream().write(pipelined.toString().getBytes(StandardCharsets.US_ASCII));
      s.getOutputStream().flush();
      InputStream in = s.getInputStream();
      Answer first = read(in);
      Answer live = read(in);
      Answer missing = read(in);
      Answer fourth = read(in);
      assertThat(first.status()).isEqualTo(200);
      assertThat(new JsonObject(first.body()).getString("model_name")).isEqualTo("mlp");
      assertThat(live.status()).isEqualTo(200);
      assertThat(new JsonObject(live.body()).getBoolean("live")).isTrue();
      assertThat(missing.status()).isEqualTo(404);
      assertThat(new JsonObject(missing.body()).getString("error")).isEqualTo("model 'nope' not found");
      assertThat(fourth.status()).isEqualTo(200);
      assertThat(new JsonObject(fourth.body()).getString("id")).isEqualTo("r4");
      assertThat(new JsonObject(fourth.body()).getString("model_version")).isEqualTo("2");

      // The same connection, again, with a body in several chunks.
      String head = "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          + "Transfer-Encoding: chunked\r\n\r\n";
      StringBuilder chunked = new StringBuilder(head);
      for (int i = 0; i < BODY.length(); i += 7) {
        String part = BODY.substring(i, Math.min(BODY.length(), i + 7));
        chunked.append(Integer.toHexString(part.length())).append("\r\n").append(part).append("\r\n");
      }
      chunked.append("0\r\n\r\n");
      s.getOutputStream().write(chunked.toString().getBytes(StandardCharsets.US_ASCII));
      Answer inChunks = read(in);
      assertThat(inChunks.status()).isEqualTo(200);
      assertThat(new JsonObject(inChunks.body()).getJsonArray("outputs")).hasSize(1);
    }
    assertThat(cluster.sent).hasSize(3);
  }

  @Test
  void anEmptyBodyIsNamedAsMalformedAndNeverReachesAPool() {
    HttpResponse<Buffer> r = post("/v2/models/mlp/infer", Buffer.buffer(), Map.of());
    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(r.bodyAsJsonObject().fieldNames()).containsExactly("error");
    assertThat(cluster.sent).isEmpty();
  }

  private JsonObject ok(String path) {
    HttpResponse<Buffer> r = postJson(path, BODY);
    assertThat(r.statusCode()).as(path + ": " + r.bodyAsString()).isEqualTo(200);
    assertThat(r.getHeader("Content-Type")).isEqualTo("application/json");
    return r.bodyAsJsonObject();
  }

  private double tooLarge() {
    var c = registry.find("kiln.gateway.requests").tags("model", "mlp", "outcome", "too_large").counter();
    return c == null ? 0 : c.count();
  }

  private Socket connect() throws IOException {
    Socket s = new Socket(HOST, gateway.httpPort());
    s.setSoTimeout(30_000);
    return s;
  }

  private static String request(String path, String body) {
    return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
        + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body;
  }

  private record Answer(int status, Map<String, String> headers, String body) {
  }

  /** One HTTP/1.1 answer with a Content-Length body (the gateway's answers all have one). */
  private static Answer read(InputStream in) throws IOException {
    String status = line(in);
    Map<String, String> headers = new LinkedHashMap<>();
    for (String h = line(in); !h.isEmpty(); h = line(in)) {
      int colon = h.indexOf(':');
      headers.put(h.substring(0, colon).trim().toLowerCase(Locale.ROOT), h.substring(colon + 1).trim());
    }
    int length = Integer.parseInt(headers.getOrDefault("content-length", "0"));
    byte[] body = in.readNBytes(length);
    assertThat(body).hasSize(length);
    return new Answer(Integer.parseInt(status.split(" ")[1]), headers, new String(body, StandardCharsets.UTF_8));
  }

  private static String line(InputStream in) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    for (int c = in.read(); c != '\n'; c = in.read()) {
      if (c < 0) {
        throw new IOException("connection closed mid-answer");
      }
      if (c != '\r') {
        b.write(c);
      }
    }
    return b.toString(StandardCharsets.US_ASCII);
  }
}
