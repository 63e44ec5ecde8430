package io.kiln.deploy;

import io.vertx.core.Vertx;
import io.vertx.core.http.WebSocket;
import io.vertx.core.http.WebSocketClient;
import io.vertx.core.http.WebSocketClientOptions;
import io.vertx.core.http.WebSocketConnectOptions;
import io.vertx.core.json.JsonObject;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Base64;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Debian's headless Chromium ({@value #BINARY}) driven over the Chrome DevTools Protocol on a Vert.x WebSocket
 * client: no WebDriver, no browser-automation dependency. {@link #launch} starts it with a fresh profile and
 * {@code --remote-debugging-port=0} and reads the DevTools address from its {@code DevTools listening on ws://...}
 * line; {@link #open} makes a page (a target, attached with a flat session) of a given size; the page navigates,
 * evaluates JavaScript (values returned by value) and takes PNG screenshots of the whole document.
 *
 * <p>A missing browser is an error, never a skip: {@code ./run-tests} installs it. Calls block the calling (test)
 * thread up to {@link #CALL_TIMEOUT}.
 */
final class HeadlessChromium implements AutoCloseable {

  static final String BINARY = "/usr/bin/chromium";
  static final Duration START_TIMEOUT = Duration.ofSeconds(60);
  static final Duration CALL_TIMEOUT = Duration.ofSeconds(60);

  private final Process process;
  private final Path profile;
  private final Vertx vertx;
  private final WebSocket socket;
  private final AtomicLong ids = new AtomicLong();
  private final Map<Long, CompletableFuture<JsonObject>> pending = new ConcurrentHashMap<>();

  private HeadlessChromium(Process process, Path profile, Vertx vertx, WebSocket socket) {
    this.process = process;
    this.profile = profile;
    this.vertx = vertx;
    this.socket = socket;
    socket.textMessageHandler(text -> {
      JsonObject m = new JsonObject(text);
      Long id = m.getLong("id");
      CompletableFuture<JsonObject> f = id == null ? null : pending.remove(id);
      if (f != null) {
        f.complete(m);
      }
    });
    socket.closeHandler(v -> pending.values().forEach(f -> f.completeExceptionally(
        new IllegalStateException("the DevTools connection closed"))));
  }

  /** Fails (AssertionError) when Chromium is not installed: the browser tests must not pass without a browser. */
  static void requireInstalled() {
    if (!Files.isExecutable(Path.of(BINARY))) {
      throw new AssertionError("headless Chromium is missing (" + BINARY + "); the dashboard's browser test needs it:"
          + " apt-get install -y chromium (./run-tests installs it when run as root)");
    }
  }

  /** Starts Chromium; its output goes to {@code log}. */
  static HeadlessChromium launch(Path log) throws Exception {
    requireInstalled();
    Path profile = Files.createTempDirectory("kiln-chromium-");
    List<String> cmd = List.of(BINARY, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
        "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage", "--hide-scrollbars", "--user-data-dir=" + profile, "--remote-debugging-port=0",
        "about:blank");
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectInput(ProcessBuilder.Redirect.from(
        new java.io.File("/dev/null"))).start();
    CompletableFuture<String> url = new CompletableFuture<>();
    Files.createDirectories(log.toAbsolutePath().getParent());
    Thread reader = new Thread(() -> {
      try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
           Writer out = Files.newBufferedWriter(log, StandardCharsets.UTF_8)) {
        for (String line; (line = in.readLine()) != null; ) {
          out.write(line + "\n");
          out.flush();
          int at = line.indexOf("DevTools listening on ");
          if (at >= 0) {
            url.complete(line.substring(at + "DevTools listening on ".length()).trim());
          }
        }
      } catch (IOException e) {
        // the browser went away: the url future fails below if it never came
      } finally {
        url.completeExceptionally(new IllegalStateException("chromium exited before listening; see " + log));
      }
    }, "chromium-output");
    reader.setDaemon(true);
    reader.start();
    Vertx vertx = Vertx.vertx();
    try {
      String ws = url.get(START_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
      WebSocketClient client = vertx.createWebSocketClient(new WebSocketClientOptions()
          .setMaxFrameSize(64 * 1024 * 1024).setMaxMessageSize(128 * 1024 * 1024));
      // No Origin header: Chromium refuses DevTools connections from web origins it was not told to allow.
      WebSocket socket = client.connect(new WebSocketConnectOptions().setAbsoluteURI(ws).setAllowOriginHeader(false))
          .toCompletionStage().toCompletableFuture().get(START_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
      return new HeadlessChromium(p, profile, vertx, socket);
    } catch (Exception e) {
      p.destroyForcibly();
      vertx.close();
      deleteTree(profile);
      throw e;
    }
  }

  /** One DevTools command; its {@code result}, or an IllegalStateException with the protocol's error. */
  JsonObject call(String sessionId, String method, JsonObject params) throws Exception {
    long id = ids.incrementAndGet();
    JsonObject msg = new JsonObject().put("id", id).put("method", method).put("params", params == null
        ? new JsonObject() : params);
    if (sessionId != null) {
      msg.put("sessionId", sessionId);
    }
    CompletableFuture<JsonObject> f = new CompletableFuture<>();
    pending.put(id, f);
    socket.writeTextMessage(msg.encode());
    JsonObject reply;
    try {
      reply = f.get(CALL_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    } finally {
      pending.remove(id);
    }
    if (reply.containsKey("error")) {
      throw new IllegalStateException(method + " failed: " + reply.getValue("error"));
    }
    return reply.getJsonObject("result", new JsonObject());
  }

  /** A new page of {@code width}×{@code height} CSS pixels, showing about:blank. */
  Page open(int width, int height) throws Exception {
    String target = call(null, "Target.createTarget", new JsonObject().put("url", "about:blank")).getString("targetId");
    String session = call(null, "Target.attachToTarget", new JsonObject().put("targetId", target).put("flatten", true))
        .getString("sessionId");
    Page page = new Page(session);
    call(session, "Page.enable", null);
    call(session, "Runtime.enable", null);
    call(session, "Emulation.setDeviceMetricsOverride", new JsonObject().put("width", width).put("height", height)
        .put("deviceScaleFactor", 1).put("mobile", false));
    return page;
  }

  /** A page attached with a flat session. */
  final class Page {
    private final String session;

    private Page(String session) {
      this.session = session;
    }

    void navigate(String url) throws Exception {
      JsonObject r = call(session, "Page.navigate", new JsonObject().put("url", url));
      if (r.containsKey("errorText")) {
        throw new IllegalStateException("navigating to " + url + " failed: " + r.getString("errorText"));
      }
    }

    /** Evaluates {@code expression} in the page and returns its value (JSON types: String, Number, Boolean, ...). */
    Object eval(String expression) throws Exception {
      JsonObject r = call(session, "Runtime.evaluate", new JsonObject().put("expression", expression)
          .put("returnByValue", true).put("awaitPromise", true));
      if (r.containsKey("exceptionDetails")) {
        throw new IllegalStateException("evaluating " + expression + " threw: " + r.getValue("exceptionDetails"));
      }
      return r.getJsonObject("result", new JsonObject()).getValue("value");
    }

    /** A PNG of the whole document (beyond the viewport), written to {@code file}. */
    Path screenshot(Path file) throws Exception {
      JsonObject metrics = call(session, "Page.getLayoutMetrics", null);
      JsonObject size = metrics.getJsonObject("cssContentSize", metrics.getJsonObject("contentSize"));
      JsonObject clip = new JsonObject().put("x", 0).put("y", 0).put("width", size.getDouble("width"))
          .put("height", size.getDouble("height")).put("scale", 1);
      String data = call(session, "Page.captureScreenshot", new JsonObject().put("format", "png")
          .put("captureBeyondViewport", true).put("clip", clip)).getString("data");
      Files.createDirectories(file.toAbsolutePath().getParent());
      return Files.write(file, Base64.getDecoder().decode(data));
    }
  }

  @Override
  public void close() throws Exception {
    try {
      call(null, "Browser.close", null);
    } catch (Exception e) {
      // killed below anyway
    }
    if (!process.waitFor(10, TimeUnit.SECONDS)) {
      process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }
    vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    deleteTree(profile);
  }

  private static void deleteTree(Path dir) {
    try (var files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    } catch (IOException ignored) {
      // a temporary profile left behind is harmless
    }
  }
}
