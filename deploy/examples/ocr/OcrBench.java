import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtSession;
import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * bench.sh's harness (run with the java source launcher): for the OCR example's det and rec models, calls/s of
 * Kiln over HTTP (OIP binary extension) vs ONNX Runtime in this process (one session, the same intra/inter-op
 * threads as ocr.yaml), at closed-loop concurrency 1 and 16, interleaved; then images/s through the whole
 * pipeline vs det+rec called directly.
 * Args: kilnPort workDir seconds
 */
public class OcrBench {
  static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  record Input(String name, long[] shape, byte[] data) { }

  public static void main(String[] a) throws Exception {
    int port = Integer.parseInt(a[0]);
    Path work = Path.of(a[1]);
    double seconds = Double.parseDouble(a[2]);
    Input det = read(work.resolve("det"));
    Input rec = read(work.resolve("rec"));
    OrtEnvironment env = OrtEnvironment.getEnvironment();
    OrtSession.SessionOptions o = new OrtSession.SessionOptions();
    o.setIntraOpNumThreads(2);
    o.setInterOpNumThreads(1);
    OrtSession detS = env.createSession("models/ocr/det/model.onnx", o);
    OrtSession recS = env.createSession("models/ocr/rec/model.onnx", o);
    for (int round = 0; round < 2; round++) {           // round 0 warms both sides
      for (int c : new int[] {1, 16}) {
        for (var m : Map.of("ocr-det", new Object[] {det, detS, "sigmoid_0.tmp_0"},
            "ocr-rec", new Object[] {rec, recS, "softmax_11.tmp_0"}).entrySet()) {
          Input in = (Input) m.getValue()[0];
          OrtSession s = (OrtSession) m.getValue()[1];
          String out = (String) m.getValue()[2];
          double direct = rate(c, seconds, () -> direct(env, s, in));
          double kiln = rate(c, seconds, () -> http(port, m.getKey(), in, out));
          if (round == 1) {
            System.out.printf("[ocr] %s c=%d direct_ort=%.2f/s kiln_http_binary=%.2f/s ratio=%.1f%%%n", m.getKey(), c,
                direct, kiln, 100 * kiln / direct);
          }
        }
      }
    }
    // The pipeline: fetch (local HTTP) -> read (5 pools) -> callback, vs det + rec directly (no pre/post).
    byte[] png = Files.readAllBytes(work.resolve("image.png"));
    AtomicInteger callbacks = new AtomicInteger();
    HttpServer srv = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    srv.createContext("/image.png", ex -> {
      ex.sendResponseHeaders(200, png.length);
      ex.getResponseBody().write(png);
      ex.close();
    });
    var ended = new java.util.concurrent.ConcurrentHashMap<String, java.util.concurrent.CompletableFuture<String>>();
    srv.createContext("/hook", ex -> {
      String cb = new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
      String runId = cb.replaceAll("(?s).*\"run_id\"\\s*:\\s*\"([^\"]+)\".*", "$1");
      ended.computeIfAbsent(runId, k -> new java.util.concurrent.CompletableFuture<>()).complete(cb);
      callbacks.incrementAndGet();
      ex.sendResponseHeaders(204, -1);
      ex.close();
    });
    srv.start();
    String base = "http://127.0.0.1:" + srv.getAddress().getPort();
    for (int c : new int[] {1, 4}) {
      double direct = rate(c, seconds, () -> {
        direct(env, detS, det);
        direct(env, recS, rec);
      });
      int before = callbacks.get();
      long t0 = System.nanoTime();
      int n = Math.max(4, (int) (seconds * 2));
      CountDownLatch done = new CountDownLatch(n);
      AtomicInteger next = new AtomicInteger();
      for (int t = 0; t < c; t++) {
        new Thread(() -> {
          while (next.getAndIncrement() < n) {
            try {
              int want = callbacks.get() + 1;
              String body = "{\"input\":{\"image_uri\":\"" + base + "/image.png\",\"callback_url\":\"" + base + "/hook\"}}";
              HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port
                  + "/api/v1/pipelines/ocr/runs")).POST(HttpRequest.BodyPublishers.ofString(body))
                  .header("Content-Type", "application/json").build(), HttpResponse.BodyHandlers.ofString());
              if (r.statusCode() >= 300) {
                throw new IllegalStateException("run: " + r.statusCode() + " " + r.body());
              }
              String id = r.body().replaceAll("(?s).*\"run_id\"\\s*:\\s*\"([^\"]+)\".*", "$1");
              // The run has ended when its callback (the last step) arrives; it carries the recognised text.
              String cb = ended.computeIfAbsent(id, k -> new java.util.concurrent.CompletableFuture<>())
                  .get(120, java.util.concurrent.TimeUnit.SECONDS);
              if (!cb.contains("Hello")) {
                throw new IllegalStateException("callback without the text: " + cb);
              }
            } catch (Exception e) {
              e.printStackTrace();
              System.exit(1);
            } finally {
              done.countDown();
            }
          }
        }).start();
      }
      done.await();
      double kiln = n / ((System.nanoTime() - t0) / 1e9);
      System.out.printf("[ocr] pipeline c=%d direct_det+rec=%.2f images/s kiln_pipeline=%.2f images/s ratio=%.1f%%"
          + " (callbacks %d)%n", c, direct, kiln, 100 * kiln / direct, callbacks.get() - before);
    }
    srv.stop(0);
    System.exit(0);
  }

  interface Call { void run() throws Exception; }

  static double rate(int c, double seconds, Call call) throws Exception {
    AtomicLong count = new AtomicLong();
    long end = System.nanoTime() + (long) (seconds * 1e9);
    Thread[] ts = new Thread[c];
    long t0 = System.nanoTime();
    for (int i = 0; i < c; i++) {
      ts[i] = new Thread(() -> {
        try {
          while (System.nanoTime() < end) {
            call.run();
            count.incrementAndGet();
          }
        } catch (Exception e) {
          e.printStackTrace();
          System.exit(1);
        }
      });
      ts[i].start();
    }
    for (Thread t : ts) {
      t.join();
    }
    return count.get() / ((System.nanoTime() - t0) / 1e9);
  }

  static void direct(OrtEnvironment env, OrtSession s, Input in) throws Exception {
    FloatBuffer fb = ByteBuffer.wrap(in.data()).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
    try (OnnxTensor t = OnnxTensor.createTensor(env, fb, in.shape()); OrtSession.Result r = s.run(Map.of("x", t))) {
      r.get(0).getValue();
    }
  }

  static void http(int port, String model, Input in, String out) throws Exception {
    StringBuilder shape = new StringBuilder();
    for (long d : in.shape()) {
      shape.append(shape.length() == 0 ? "" : ",").append(d);
    }
    byte[] header = ("{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[" + shape
        + "],\"parameters\":{\"binary_data_size\":" + in.data().length + "}}],\"outputs\":[{\"name\":\"" + out
        + "\",\"parameters\":{\"binary_data\":true}}]}").getBytes(StandardCharsets.UTF_8);
    byte[] body = new byte[header.length + in.data().length];
    System.arraycopy(header, 0, body, 0, header.length);
    System.arraycopy(in.data(), 0, body, header.length, in.data().length);
    HttpResponse<byte[]> r = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v2/models/"
        + model + "/infer")).POST(HttpRequest.BodyPublishers.ofByteArray(body))
        .header("Content-Type", "application/octet-stream")
        .header("Inference-Header-Content-Length", Integer.toString(header.length)).build(),
        HttpResponse.BodyHandlers.ofByteArray());
    if (r.statusCode() != 200) {
      throw new IllegalStateException(model + ": " + r.statusCode() + " " + new String(r.body(), StandardCharsets.UTF_8));
    }
  }

  static Input read(Path prefix) throws Exception {
    String[] dims = Files.readString(Path.of(prefix + ".shape")).trim().split(",");
    long[] shape = new long[dims.length];
    for (int i = 0; i < dims.length; i++) {
      shape[i] = Long.parseLong(dims[i].trim());
    }
    return new Input("x", shape, Files.readAllBytes(Path.of(prefix + ".f32")));
  }
}
