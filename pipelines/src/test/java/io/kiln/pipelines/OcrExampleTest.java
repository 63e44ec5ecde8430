package io.kiln.pipelines;

import static io.kiln.pipelines.PipelineCluster.HEAD;
import static io.kiln.runtime.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.sun.net.httpserver.HttpServer;
import io.kiln.serve.DeploymentSpec;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The OCR example of {@code deploy/examples/ocr/} end to end with the real PP-OCRv4 models: images of known
 * text, rendered here with DejaVu Sans and served over HTTP, go fetch -> read (the model graph {@code ocr-read}:
 * det-pre, det on ONNX Runtime, crop with two inputs, rec on ONNX Runtime, ctc; all pools of the fetching node)
 * -> callback on two nodes, and the callback carries exactly the rendered lines; the graph called on its own reads
 * them too. Without the models ({@code models/ocr/fetch.sh}) it skips locally and fails under {@code CI=true}.
 */
@Tag("slow")
class OcrExampleTest {

  static final Path EXAMPLE = Path.of("..", "deploy", "examples", "ocr");
  static final Path MODELS = Path.of("..", "models", "ocr");
  static final String PYTHON = System.getProperty("kiln.test.python", "/usr/bin/python3");
  static final String FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

  /** Clear words in a clean sans font: each image's lines, top to bottom. */
  static final Map<String, List<String>> IMAGES = new LinkedHashMap<>();

  static {
    IMAGES.put("one", List.of("Hello", "Kiln"));
    IMAGES.put("two", List.of("download", "analyse", "callback"));
    IMAGES.put("three", List.of("PIPELINE", "2026"));
    IMAGES.put("sentence", List.of("warm models on every node", "same node as fetch"));
  }

  /**
   * Images whose lines hold several words. PP-OCRv4's recogniser (the Chinese/English model) reads the characters
   * but usually drops the spaces between Latin words in one box, so these lines are compared with spaces removed;
   * all other lines exactly.
   */
  static final Set<String> SPACES_DROPPED = Set.of("sentence");

  static List<String> comparable(String image, List<?> lines) {
    return lines.stream().map(Object::toString)
        .map(l -> SPACES_DROPPED.contains(image) ? l.replace(" ", "") : l).toList();
  }

  @TempDir
  Path tmp;

  @Test
  void theExampleReadsRenderedTextOnTheFetchingNode() throws Exception {
    boolean present = Files.isRegularFile(MODELS.resolve("det/model.onnx"))
        && Files.isRegularFile(MODELS.resolve("rec/model.onnx"))
        && Files.isRegularFile(MODELS.resolve("ppocr_keys_v1.txt"));
    if (!present) {
      String why = "the OCR models are missing: run models/ocr/fetch.sh (./run-tests does)";
      if ("true".equalsIgnoreCase(System.getenv("CI"))) {
        throw new AssertionError(why);
      }
      Assumptions.abort(why);
    }
    Path images = Files.createDirectories(tmp.resolve("images"));
    render(images);

    HttpServer http = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    http.createContext("/images/", ex -> {
      Path f = images.resolve(ex.getRequestURI().getPath().substring("/images/".length())).normalize();
      if (!f.startsWith(images) || !Files.isRegularFile(f)) {
        ex.sendResponseHeaders(404, -1);
      } else {
        byte[] b = Files.readAllBytes(f);
        ex.getResponseHeaders().add("Content-Type", "image/png");
        ex.sendResponseHeaders(200, b.length);
        ex.getResponseBody().write(b);
      }
      ex.close();
    });
    http.start();
    try {
      // The example as written, with Debian's interpreter (OpenCV, numpy) rather than whatever is on PATH.
      String yaml = Files.readString(EXAMPLE.resolve("ocr.yaml")).replace("interpreter: python3",
          "interpreter: " + PYTHON);
      PipelineFile f = new PipelineLoader().load(yaml, EXAMPLE.resolve("ocr.yaml"), Set.of());
      assertThat(f.deployments()).extracting(DeploymentSpec::name)
          .containsExactly("ocr-det", "ocr-rec", "ocr-det-pre", "ocr-crop", "ocr-ctc");
      assertThat(f.deployments().get(0).model().engine()).isEqualTo("OnnxRuntime");
      assertThat(f.deployments().get(1).model().engine()).isEqualTo("OnnxRuntime");
      assertThat(f.graphs()).singleElement().satisfies(g -> assertThat(g.deployments())
          .containsExactly("ocr-det-pre", "ocr-det", "ocr-crop", "ocr-rec", "ocr-ctc"));
      try (PipelineCluster c = new PipelineCluster(tmp, List.of(tmp), f.deployments(), HEAD, "w1")) {
        result(c.graphs(HEAD).apply(f.graphs()));
        await().atMost(Duration.ofSeconds(30)).until(() -> c.graphs("w1").ready("ocr-read"));
        result(c.pipelines(HEAD).apply(f.pipelines()));
        Map<String, String> runs = new LinkedHashMap<>();
        for (String name : IMAGES.keySet()) {
          String uri = "http://127.0.0.1:" + http.getAddress().getPort() + "/images/" + name + ".png";
          runs.put(result(c.pipelines("w1").startRun("ocr", RunRequest.of(Map.of("image_uri", uri,
              "callback_url", c.url("/hook/callback"))))), name);
        }
        for (var run : runs.entrySet()) {
          RunStatus s = c.awaitEnd(HEAD, run.getKey());
          assertThat(s.state()).as(s.error()).isEqualTo(RunState.SUCCEEDED);
          String fetchNode = s.step("fetch").orElseThrow().nodeId();
          Map<String, Object> read = s.step("read").orElseThrow().output();
          assertThat(s.step("read").orElseThrow().nodeId()).isEqualTo(fetchNode);
          assertThat(read.get("node")).as("every step of the graph on the fetching node").isEqualTo(fetchNode);
          assertThat(comparable(run.getValue(), (List<?>) output(new JsonObject(read), "text").getList()))
              .as(run.getValue()).isEqualTo(comparable(run.getValue(), IMAGES.get(run.getValue())));
        }
        await().atMost(Duration.ofSeconds(60)).until(() -> c.callbacks.size() == IMAGES.size());
        for (JsonObject cb : c.callbacks) {
          String name = runs.get(cb.getString("run_id"));
          JsonObject read = cb.getJsonObject("results").getJsonObject("read");
          assertThat(read.getString("graph")).isEqualTo("ocr-read");
          List<Object> lines = new ArrayList<>(output(read, "text").getList());
          assertThat(comparable(name, lines)).as(name).isEqualTo(comparable(name, IMAGES.get(name)));
          if (!SPACES_DROPPED.contains(name)) {
            assertThat(lines).as(name).isEqualTo(List.copyOf(IMAGES.get(name)));
          }
          assertThat(output(read, "boxes").size()).as("8 numbers per line's box").isEqualTo(8 * lines.size());
        }
        // The graph on its own, as a client calls it (the gateway sends it the same way): one image in, its lines out.
        byte[] png = Files.readAllBytes(images.resolve("two.png"));
        var answer = result(c.graphs("w1").infer(io.kiln.pools.RequestContext.within("direct", 60_000), "ocr-read",
            "w1", new io.kiln.pools.InferenceRequest("direct", List.of(new io.kiln.pools.Tensor("image",
                io.kiln.pools.DataType.UINT8, new long[] {1, png.length}, png)), List.of("text"), Map.of())));
        assertThat(answer.outputs()).singleElement().satisfies(t -> assertThat(t.byteElements().stream()
            .map(b -> new String(b, StandardCharsets.UTF_8)).toList()).isEqualTo(IMAGES.get("two")));
        assertThat(answer.parameters()).containsEntry("kiln_node", "w1");
      }
    } finally {
      http.stop(0);
    }
  }

  /** The data of the read step's output {@code name} (an infer step's result lists each output tensor). */
  @SuppressWarnings("unchecked")
  private static JsonArray output(JsonObject read, String name) {
    for (Object o : read.getJsonArray("outputs")) {
      JsonObject t = o instanceof JsonObject j ? j : new JsonObject((Map<String, Object>) o);
      if (t.getString("name").equals(name)) {
        return t.getJsonArray("data");
      }
    }
    throw new AssertionError("no output '" + name + "' in " + read);
  }

  /** Renders each image's lines black on white with DejaVu Sans (Debian's fonts-dejavu-core) via PIL. */
  private static void render(Path dir) throws Exception {
    StringBuilder script = new StringBuilder("""
        import sys
        from PIL import Image, ImageDraw, ImageFont
        font = ImageFont.truetype(sys.argv[1], 32)
        def draw(path, lines):
            im = Image.new('RGB', (720, 40 + 70 * len(lines)), 'white')
            d = ImageDraw.Draw(im)
            for i, line in enumerate(lines):
                d.text((24, 24 + 70 * i), line, font=font, fill='black')
            im.save(path)
        """);
    for (var e : IMAGES.entrySet()) {
      script.append("draw(").append(pyString(dir.resolve(e.getKey() + ".png").toString())).append(", [");
      for (String line : e.getValue()) {
        script.append(pyString(line)).append(", ");
      }
      script.append("])\n");
    }
    Path py = Files.writeString(dir.resolve("render.py"), script.toString(), StandardCharsets.UTF_8);
    Process p = new ProcessBuilder(PYTHON, py.toString(), FONT).redirectErrorStream(true).start();
    assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.exitValue()).as(out).isZero();
  }

  private static String pyString(String s) {
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'";
  }
}
