package io.kiln.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.testkit.Deployment;
import io.kiln.testkit.OipRequest;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The dashboard in a real browser against a real cluster: three {@code kiln start --foreground} processes (a head and
 * two nodes, a management token, every port 0) serving an identity deployment on each node; headless Chromium
 * ({@link HeadlessChromium}, over the DevTools protocol) opens the head's {@code /dashboard?token=...}. The page must
 * show the three nodes and the deployment, drop the token from its address, plot a rising request rate once paced load
 * starts (read from the plotted series in the page's state and the SVG it drew, not from pixels), and show a node
 * killed with SIGKILL as down. Screenshots of each stage go to {@code target/dashboard-screenshots/}.
 */
class DashboardIT {

  static final Duration START = Duration.ofSeconds(180);
  static final String TOKEN = "dash-" + UUID.randomUUID();
  static final Path SHOTS = Path.of("target", "dashboard-screenshots");
  /** Each load client's pace: 40 requests/s per client. */
  static final long LOAD_PERIOD_MS = 25;
  static final ObjectMapper JSON = new ObjectMapper();
  static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();
  static final String YAML = Deployment.file(Deployment.identity("echo").batching(8, 1).queue(256, 5000));

  CliProcesses cli;
    final Map<String, Integer> ports = new ConcurrentHashMap<>();

  @Test
  void theDashboardShowsTheClusterItsLoadAndALostNode() throws Exception {
    HeadlessChromium.requireInstalled(); // first: no browser, no pass
    cli = new CliProcesses(Path.of("target", "kiln-it", "dashboard-" + UUID.randomUUID().toString().substring(0, 8)));
    ScheduledExecutorService pacer = Executors.newScheduledThreadPool(1);
    try (HeadlessChromium browser = HeadlessChromium.launch(cli.home().resolve("chromium.out"))) {
      startCluster();
      HttpResponse<String> applied = call(ports.get("head"), "POST", "/api/v1/deployments", YAML);
      assertThat(applied.statusCode()).as(applied.body()).isEqualTo(200);
      for (String g : List.of("head", "n1", "n2")) {
        await().atMost(START).pollInterval(Duration.ofMillis(250)).until(() ->
            call(ports.get(g), "GET", "/v2/models/echo/ready", null).statusCode() == 200);
      }
      await().atMost(START).pollInterval(Duration.ofMillis(250)).until(() -> readyPools() == 3);

      HeadlessChromium.Page page = browser.open(1440, 1000);
      page.navigate("http://127.0.0.1:" + ports.get("head") + "/dashboard?token=" + TOKEN);
      await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(250)).until(() ->
          number(page, "document.querySelectorAll('#nodes tr[data-node][data-state=alive]').length") == 3
          && "READY".equals(page.eval("document.querySelector('[data-deployment=echo]')?.dataset.phase")));
      assertThat(page.eval("location.search")).as("the token leaves the address bar").isEqualTo("");
      assertThat(page.eval("sessionStorage.getItem('kiln.token')")).isEqualTo(TOKEN);
      assertThat(page.eval("document.querySelectorAll('[data-deployment=echo] .workers .chip').length"))
          .isEqualTo(3);
      assertThat(page.eval("document.querySelector('[data-node=head] .leader') !== null")).isEqualTo(true);
      double idle = recentRate(page);
      page.screenshot(SHOTS.resolve("1-cluster.png"));

      // Load through two gateways: the rate plotted (all nodes' requests added up) must rise well above idle.
      AtomicLong ok = new AtomicLong();
      load(pacer, "head", ok);
      load(pacer, "n2", ok);
      await().atMost(Duration.ofSeconds(60)).until(() -> ok.get() >= 200);
      await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(500)).until(() ->
          recentRate(page) >= Math.max(10, idle * 4));
      // Enough seconds under load for the plot to show a plateau, not a spike at its edge: ten of its points.
      await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(500)).until(() ->
          number(page, "window.kiln.plotted.echo.rate.slice(-30).filter(v => v > 0).length") >= 10);
      // The SVG drew that series, and latency percentiles came with it.
      assertThat(page.eval("document.querySelectorAll('[data-deployment=echo] polyline[data-series=rate]').length"))
          .isNotEqualTo(0);
      await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(500)).until(() ->
          number(page, "(window.kiln.plotted.echo.p99 || []).filter(v => v !== null).length") > 0);
      double underLoad = recentRate(page);
      page.screenshot(SHOTS.resolve("2-under-load.png"));

      // SIGKILL n1: the page keeps it, marked down.
      cli.node("n1").kill();
      assertThat(cli.node("n1").isAlive()).isFalse();
      await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(250)).until(() ->
          "down".equals(page.eval("document.querySelector('[data-node=n1]')?.dataset.state")));
      assertThat(number(page, "document.querySelectorAll('#nodes tr[data-node][data-state=alive]').length"))
          .isEqualTo(2);
      await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(250)).until(() ->
          page.eval("document.querySelector('#summary').textContent").toString().contains("1 down"));
      // The survivors' load keeps being plotted.
      double afterLoss = recentRate(page);
      assertThat(afterLoss).isPositive();
      page.screenshot(SHOTS.resolve("3-node-down.png"));
      System.out.println("DASHBOARD idle rate " + idle + " req/s, under load " + underLoad + " req/s, after the loss " + afterLoss
          + " req/s; screenshots in "
          + SHOTS.toAbsolutePath());
    } finally {
      pacer.shutdownNow();
      if (cli != null) {
        cli.close();
      }
    }
  }

  private void startCluster() throws Exception {
    List<String> common = List.of("--host", "127.0.0.1", "--port", "0", "--grpc-port", "0", "--cluster-port", "0",
        "--cluster-name", "it-" + UUID.randomUUID(), "--cpus", "2", "--token", TOKEN, "--warmup-seconds", "0");
    start("head", List.of("start", "--head"), common);
    String join = "127.0.0.1:" + awaitEntry("head").path("clusterPort").asInt();
    start("n1", List.of("start", "--address", join), common);
    start("n2", List.of("start", "--address", join), common);
    awaitEntry("n1");
    awaitEntry("n2");
  }

  private void start(String id, List<String> first, List<String> common) throws Exception {
    List<String> args = new ArrayList<>(first);
    args.addAll(List.of("--foreground", "--node-id", id));
    args.addAll(common);
    cli.startNode(id, args.toArray(String[]::new));
  }

  private JsonNode awaitEntry(String id) {
    JsonNode e = cli.awaitEntry(id, START);
    ports.put(id, e.path("httpPort").asInt());
    return e;
  }

  private long readyPools() throws Exception {
    JsonNode s = JSON.readTree(call(ports.get("head"), "GET", "/api/v1/status", null).body());
    for (JsonNode d : s.path("deployments")) {
      if (d.path("name").asText().equals("echo")) {
        long n = 0;
        for (JsonNode p : d.path("pools")) {
          n += p.path("ready").asBoolean() ? 1 : 0;
        }
        return n;
      }
    }
    return 0;
  }

  /** The mean of the last 5 plotted seconds of echo's request rate, as the page holds it. */
  private static double recentRate(HeadlessChromium.Page page) throws Exception {
    return number(page, "(() => { const r = (window.kiln.plotted.echo || {rate: []}).rate.slice(-5);"
        + " return r.length ? r.reduce((a, b) => a + b, 0) / r.length : 0; })()");
  }

  private static double number(HeadlessChromium.Page page, String expression) throws Exception {
    Object v = page.eval(expression);
    return v instanceof Number n ? n.doubleValue() : Double.NaN;
  }

  static HttpResponse<String> call(int port, String method, String path, String body) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .timeout(Duration.ofSeconds(30)).header("Authorization", "Bearer " + TOKEN)
        .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
    return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  /**
   * Paced load through gateway {@code g} until {@code stop}: one request every {@link #LOAD_PERIOD_MS} ms, sent
   * asynchronously (so a slow answer does not stop the pace); counts answered requests. Paced rather than closed-loop
   * so the page's browser and the three nodes keep their share of the two cores.
   */
  private Future<?> load(java.util.concurrent.ScheduledExecutorService pacer, String g, AtomicLong ok) {
    String body = OipRequest.fp32("x", new long[] {1, 2}, 1f, 2f).json();
    HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + ports.get(g) + "/v2/models/echo/infer"))
        .timeout(Duration.ofSeconds(10)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body)).build();
    return pacer.scheduleAtFixedRate(() -> HTTP.sendAsync(req, HttpResponse.BodyHandlers.discarding())
        .thenAccept(r -> {
          if (r.statusCode() == 200) {
            ok.incrementAndGet();
          }
        }), 0, LOAD_PERIOD_MS, TimeUnit.MILLISECONDS);
  }
}
