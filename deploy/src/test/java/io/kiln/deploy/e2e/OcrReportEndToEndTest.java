package io.kiln.deploy.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.sun.net.httpserver.HttpServer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The seed's whole chain as {@code deploy/examples/ocr-report/ocr-report.yaml} declares it, on an assembled node
 * with the real models (PP-OCRv4 on ONNX Runtime and Python pools, the tiny-gpt decoder), applied and run through
 * the node's HTTP API: a page image served over HTTP is fetched, read by the OCR graph on that node's pools,
 * summarised by the chat model, and the report reaches a callback server. Its page text is exactly what the graph
 * answers for the image alone, and its summary exactly what {@code /v1/chat/completions} answers (greedy) for the
 * same prompt. A prompt naming an unknown step fails the file at its line and column, nothing applied. Without the
 * models ({@code models/ocr/fetch.sh}, {@code models/llm/fetch.sh}) it skips locally and fails under {@code CI=true}.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag("slow")
class OcrReportEndToEndTest {

  static final Path EXAMPLE = ServingCluster.repositoryRoot().resolve("deploy/examples/ocr-report/ocr-report.yaml");
  static final String FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
  /** The rendered page: clear words in a clean sans font, which PP-OCRv4 reads exactly (OcrExampleTest). */
  static final List<String> PAGE = List.of("download", "analyse", "callback");

  @TempDir
  static Path tmp;

  private final Http http = new Http();
  private final Map<String, JsonObject> callbacks = new ConcurrentHashMap<>();
  private ServingCluster cluster;
  private HttpServer server;
  private int port;
  private byte[] png;

  @BeforeAll
  void start() throws Exception {
    Path root = ServingCluster.repositoryRoot();
    boolean present = Files.isRegularFile(root.resolve("models/ocr/det/model.onnx"))
        && Files.isRegularFile(root.resolve("models/ocr/rec/model.onnx"))
        && Files.isRegularFile(root.resolve("models/llm/tiny-gpt/model.onnx"));
    if (!present) {
      String why = "models missing: run models/ocr/fetch.sh and models/llm/fetch.sh (./run-tests does)";
      if ("true".equalsIgnoreCase(System.getenv("CI"))) {
        throw new AssertionError(why);
      }
      Assumptions.abort(why);
    }
    png = render(tmp.resolve("page.png"));
    server = HttpServer.create(new InetSocketAddress(ServingCluster.HOST, 0), 0);
    server.createContext("/page.png", ex -> {
      ex.getResponseHeaders().add("Content-Type", "image/png");
      ex.sendResponseHeaders(200, png.length);
      ex.getResponseBody().write(png);
      ex.close();
    });
    server.createContext("/callback", ex -> {
      JsonObject report = new JsonObject(new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
      callbacks.put(report.getString("run_id"), report);
      ex.sendResponseHeaders(204, -1);
      ex.close();
    });
    server.start();
    cluster = ServingCluster.start("node-1");
    port = cluster.node("node-1").httpPort();
    Http.Response applied = apply(example());
    assertThat(applied.status()).as(applied.text()).isEqualTo(200);
    for (String d : List.of("ocr-det", "ocr-rec", "ocr-det-pre", "ocr-crop", "ocr-ctc", "tiny-gpt")) {
      cluster.awaitReady(d, 1);
    }
  }

  @AfterAll
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
    if (server != null) {
      server.stop(0);
    }
  }

  /** The example as written, its Python pools on Debian's interpreter (OpenCV, numpy) rather than one on PATH. */
  private static String example() throws IOException {
    return Files.readString(EXAMPLE).replace("interpreter: python3", "interpreter: " + PythonInterpreter.path());
  }

  private Http.Response apply(String yaml) {
    String source = URLEncoder.encode(EXAMPLE.toString(), StandardCharsets.UTF_8);
    return http.post(port, "/api/v1/deployments?source=" + source, "application/yaml",
        yaml.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void theReportCarriesThePagesTextAndTheChatModelsSummary() {
    String base = "http://" + ServingCluster.HOST + ":" + server.getAddress().getPort();
    Http.Response started = http.postJson(port, "/api/v1/pipelines/ocr-report/runs", new JsonObject().put("input",
        new JsonObject().put("image_uri", base + "/page.png").put("callback_url", base + "/callback")).encode());
    assertThat(started.status()).as(started.text()).isEqualTo(202);
    String runId = started.json().getString("run_id");
    await().atMost(Duration.ofSeconds(180)).pollInterval(Duration.ofMillis(200)).until(() -> {
      JsonObject run = http.get(port, "/api/v1/pipelines/ocr-report/runs/" + runId).json();
      assertThat(run.getString("state")).as(run.encode()).isNotEqualTo("FAILED");
      return callbacks.containsKey(runId);
    });
    JsonObject report = callbacks.get(runId);
    JsonObject results = report.getJsonObject("results");

    // The page's text: what the OCR graph answers for this image alone, asked as any client asks it.
    List<Object> lines = data(results.getJsonObject("read"), "text");
    assertThat(lines).isEqualTo(graphAlone()).isEqualTo(List.copyOf(PAGE));

    // The summary: what /v1/chat/completions answers, greedy, for the prompt made from that text.
    JsonObject summary = results.getJsonObject("summary");
    String prompt = "Summarise this page in one sentence:\n" + String.join("\n", PAGE);
    assertThat(summary.getString("prompt")).isEqualTo(prompt);
    Http.Response chat = http.postJson(port, "/v1/chat/completions", new JsonObject().put("model", "tiny-gpt")
        .put("max_tokens", 32).put("temperature", 0).put("messages", new JsonArray().add(new JsonObject()
            .put("role", "user").put("content", prompt))).encode());
    assertThat(chat.status()).as(chat.text()).isEqualTo(200);
    JsonObject choice = chat.json().getJsonArray("choices").getJsonObject(0);
    assertThat(summary.getString("text")).isNotEmpty().isEqualTo(choice.getJsonObject("message").getString("content"));
    assertThat(summary.getString("finish_reason")).isEqualTo(choice.getString("finish_reason"));
    JsonObject usage = chat.json().getJsonObject("usage");
    assertThat(summary.getLong("prompt_tokens")).isEqualTo(usage.getLong("prompt_tokens"));
    assertThat(summary.getLong("completion_tokens")).isEqualTo(usage.getLong("completion_tokens"));

    // Every step on Kiln, on the node that holds the page, each with its timings.
    JsonObject timings = report.getJsonObject("timings");
    assertThat(timings.fieldNames()).containsExactlyInAnyOrder("fetch", "read", "summary");
    for (String step : timings.fieldNames()) {
      JsonObject t = timings.getJsonObject(step);
      assertThat(t.getString("node")).as(step).isEqualTo("node-1");
      assertThat(t.getLong("ended_at_ms")).as(step).isGreaterThanOrEqualTo(t.getLong("started_at_ms"))
          .isPositive();
      assertThat(t.getLong("took_ms")).isEqualTo(t.getLong("ended_at_ms") - t.getLong("started_at_ms"));
    }
    assertThat(results.getJsonObject("read").getString("node")).isEqualTo("node-1");
    assertThat(summary.getString("node")).isEqualTo("node-1");
  }

  @Test
  void aPromptNamingAnUnknownStepFailsTheFileAtItsLineAndColumn() throws IOException {
    String yaml = example().replace("name: ocr-report", "name: ocr-report-typo")
        .replace("{{read.text}}", "{{raed.text}}");
    List<String> lines = List.of(yaml.split("\n", -1));
    int line = 0;
    for (int i = 0; i < lines.size(); i++) {
      if (lines.get(i).contains("{{raed.text}}")) {
        line = i + 1;
      }
    }
    int column = lines.get(line - 1).indexOf("{{raed.text}}") + 1; // the reference itself, inside the prompt
    Http.Response r = apply(yaml);
    assertThat(r.status()).as(r.text()).isEqualTo(400);
    JsonArray problems = r.json().getJsonArray("problems");
    assertThat(problems).hasSize(1);
    JsonObject p = problems.getJsonObject(0);
    assertThat(p.getString("message"))
        .contains("reference '{{raed.text}}': no step named 'raed'; did you mean 'read'?");
    assertThat(p.getString("path")).isEqualTo("pipelines[0].steps[2].generate.prompt");
    assertThat(List.of(p.getInteger("line"), p.getInteger("column"))).containsExactly(line, column);
    assertThat(http.get(port, "/api/v1/pipelines/ocr-report-typo").status()).as("nothing applied").isEqualTo(404);
  }

  /** The text the graph ocr-read answers for the page on its own: a client's OIP request, the PNG as UINT8 [1, n]. */
  private List<Object> graphAlone() {
    JsonArray bytes = new JsonArray();
    for (byte b : png) {
      bytes.add(b & 0xff);
    }
    Http.Response r = http.postJson(port, "/v2/models/ocr-read/infer", new JsonObject().put("inputs", new JsonArray()
        .add(new JsonObject().put("name", "image").put("datatype", "UINT8").put("shape", new JsonArray().add(1)
            .add(png.length)).put("data", bytes))).put("outputs", new JsonArray().add(new JsonObject()
        .put("name", "text"))).encode());
    assertThat(r.status()).as(r.text()).isEqualTo(200);
    return r.json().getJsonArray("outputs").getJsonObject(0).getJsonArray("data").getList();
  }

  /** The data of an infer step's output tensor {@code name}. */
  private static List<Object> data(JsonObject step, String name) {
    for (Object o : step.getJsonArray("outputs")) {
      JsonObject t = (JsonObject) o;
      if (t.getString("name").equals(name)) {
        return t.getJsonArray("data").getList();
      }
    }
    throw new AssertionError("no output '" + name + "' in " + step);
  }

  /** Renders {@link #PAGE} black on white with DejaVu Sans (Debian's fonts-dejavu-core) via PIL. */
  private static byte[] render(Path png) throws Exception {
    StringBuilder lines = new StringBuilder();
    for (String l : PAGE) {
      lines.append("'").append(l).append("', ");
    }
    String script = String.join("\n",
        "import sys",
        "from PIL import Image, ImageDraw, ImageFont",
        "font = ImageFont.truetype(sys.argv[1], 32)",
        "lines = [" + lines + "]",
        "im = Image.new('RGB', (720, 40 + 70 * len(lines)), 'white')",
        "d = ImageDraw.Draw(im)",
        "for i, line in enumerate(lines):",
        "    d.text((24, 24 + 70 * i), line, font=font, fill='black')",
        "im.save(sys.argv[2])", "");
    Path py = Files.writeString(png.resolveSibling("render.py"), script);
    Process p = new ProcessBuilder(PythonInterpreter.path(), py.toString(), FONT, png.toString())
        .redirectErrorStream(true).start();
    assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.exitValue()).as(out).isZero();
    return Files.readAllBytes(png);
  }
}
