package io.kiln.gateway.reliability;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kiln.gateway.GatewayOptions;
import io.kiln.gateway.KilnGateway;
import io.kiln.gateway.support.FakeCluster;
import io.kiln.gateway.support.Figures;
import io.kiln.gateway.support.GatewayTestBase;
import io.kiln.gateway.support.TestModels;
import io.kiln.testkit.OipRequest;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetClientOptions;
import io.vertx.core.net.NetSocket;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.ext.web.client.WebClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Slow and vanishing clients against a real gateway (over the {@link FakeCluster}'s pools): slowloris
 * connections that trickle headers, bodies that stop half way, clients that close mid-body or while their
 * request waits in a pool. The gateway must close what stalls within its read timeout, keep serving others
 * meanwhile, and leak nothing: no request left in flight, none left with a pool, heap back where it was.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag("slow")
class SlowClientsTest {

  static final String HOST = GatewayTestBase.HOST;
  static final Duration READ_TIMEOUT = Duration.ofSeconds(1);
  static final int CONNECTIONS = (int) Figures.knob("slow.connections", 60);
  static final String INFER = "/v2/models/mlp/infer";
  static final String BODY = OipRequest.fp32("input", new long[] {1, 4}, 1, 2, 3, 4).json();

  Vertx vertx;
  FakeCluster cluster;
  KilnGateway gateway;
  PrometheusMeterRegistry registry;
  NetClient net;
  WebClient http;

  @BeforeAll
  void start() {
    vertx = Vertx.vertx();
    cluster = new FakeCluster(TestModels.all());
    cluster.addNode("node-a", true);
    registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    gateway = new KilnGateway(GatewayOptions.builder().host(HOST).httpPort(0).grpcPort(0)
        .defaultTimeout(Duration.ofSeconds(20)).requestReadTimeout(READ_TIMEOUT).registry(registry).build(),
        cluster, cluster, cluster);
    GatewayTestBase.join(gateway.start(vertx));
    net = vertx.createNetClient(new NetClientOptions().setConnectTimeout(10_000));
    // No keep-alive: the server closes idle connections after the (1 s) read timeout, and a pooled one reused
    // at that moment would fail the normal client for a reason this test does not study.
    http = WebClient.create(vertx, new io.vertx.ext.web.client.WebClientOptions().setKeepAlive(false));
  }

  @BeforeEach
  void reset() {
    cluster.reset();
  }

  @AfterAll
  void stop() {
    if (vertx != null) {
      GatewayTestBase.join(gateway.close());
      GatewayTestBase.join(vertx.close());
    }
  }

  /** A raw connection and when the server closed it. */
  static final class Conn {
    final NetSocket socket;
    final long openedAt = System.nanoTime();
    volatile long closedAt;
    final StringBuilder received = new StringBuilder();

    Conn(NetSocket socket) {
      this.socket = socket;
      socket.handler(b -> {
        synchronized (received) {
          received.append(b.toString());
        }
      });
      socket.closeHandler(v -> closedAt = System.nanoTime());
    }

    boolean closed() {
      return closedAt != 0;
    }

    long openMillis() {
      return TimeUnit.NANOSECONDS.toMillis(closedAt - openedAt);
    }

    String received() {
      synchronized (received) {
        return received.toString();
      }
    }
  }

  List<Conn> open(int n) {
    List<Conn> conns = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      conns.add(new Conn(GatewayTestBase.join(net.connect(gateway.httpPort(), HOST))));
    }
    return conns;
  }

  double inFlight() {
    return registry.get("kiln.gateway.requests.in.flight").gauge().value();
  }

  @Test
  void slowlorisConnectionsAreClosedByTheReadTimeoutWhileOthersAreServed() {
    long closedBefore = gateway.slowConnectionsClosed();
    long heapBefore = Figures.heapAfterGc();
    long normalOk;
    List<Conn> conns = open(CONNECTIONS);
    // Each connection sends its request line, then one header line every 200 ms, never finishing.
    AtomicInteger trickled = new AtomicInteger();
    long timer = vertx.setPeriodic(200, id -> {
      for (Conn c : conns) {
        if (!c.closed()) {
          c.socket.write(trickled.get() == 0 ? "POST " + INFER + " HTTP/1.1\r\nHost: x\r\n" : "X-Slow-" + trickled.get() + ": y\r\n");
        }
      }
      trickled.incrementAndGet();
    });
    try {
      // Meanwhile a normal client is served as usual.
      HttpResponse<Buffer> r = GatewayTestBase.join(http.post(gateway.httpPort(), HOST, INFER)
          .putHeader("Content-Type", "application/json").sendBuffer(Buffer.buffer(BODY)));
      normalOk = r.statusCode() == 200 ? 1 : 0;
      assertThat(r.statusCode()).as(r.bodyAsString()).isEqualTo(200);
      try {
        await().atMost(Duration.ofSeconds(30)).until(() -> conns.stream().allMatch(Conn::closed));
      } catch (org.awaitility.core.ConditionTimeoutException e) {
        // counted below as left open, and asserted after the figures are written
      }
    } finally {
      vertx.cancelTimer(timer);
    }
    long leftOpen = conns.stream().filter(c -> !c.closed()).count();
    long[] open = conns.stream().filter(Conn::closed).mapToLong(Conn::openMillis).sorted().toArray();
    long closedLate = java.util.Arrays.stream(open).filter(ms -> ms >= 15_000).count();
    long reachedPool = cluster.sent.size() - normalOk;
    long heapAfter = Figures.heapAfterGc();
    new Figures("slowloris").put("connections", CONNECTIONS).put("readTimeoutMs", READ_TIMEOUT.toMillis())
        .put("closedByServer", open.length).put("leftOpen", leftOpen).put("closedAfter15s", closedLate)
        .put("unfinishedRequestsThatReachedAPool", reachedPool).put("normalRequestsSent", 1)
        .put("normalRequestsSucceeded", normalOk)
        .put("closedAfterMsMin", open.length == 0 ? -1 : open[0])
        .put("closedAfterMsMax", open.length == 0 ? -1 : open[open.length - 1])
        .put("requestsLeftInFlight", inFlight()).put("heapGrowthBytes", heapAfter - heapBefore).write();
    assertThat(leftOpen).as("stalled connections the server never closed").isZero();
    assertThat(trickled.get()).as("bytes kept coming until the server closed").isGreaterThan(3);
    // The client's clock starts after the server's (at accept), so allow for a late start on a loaded machine.
    assertThat(open[0]).as("closed by the read timeout, not at once").isGreaterThanOrEqualTo(READ_TIMEOUT.toMillis() / 2);
    assertThat(open[open.length - 1]).as("every connection closed soon after its read timeout").isLessThan(15_000);
    assertThat(gateway.slowConnectionsClosed() - closedBefore).isGreaterThanOrEqualTo(CONNECTIONS);
    assertThat(cluster.sent).as("only the normal client's request reached a pool").hasSize(1);
    assertThat(inFlight()).isZero();
    assertThat(heapAfter - heapBefore).as("heap growth, bytes").isLessThan(64L << 20);
  }

  @Test
  void aBodyThatStopsHalfWayIsClosedAndAClientThatVanishesMidBodyLeavesNothing() {
    long closedBefore = gateway.slowConnectionsClosed();
    String head = "POST " + INFER + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
        + BODY.length() + "\r\n\r\n";
    List<Conn> stalled = open(CONNECTIONS / 2);
    List<Conn> vanishing = open(CONNECTIONS / 2);
    for (Conn c : stalled) {
      c.socket.write(head + BODY.substring(0, BODY.length() / 2));
    }
    for (Conn c : vanishing) {
      c.socket.write(head + BODY.substring(0, BODY.length() / 2)).onComplete(ar -> c.socket.close());
    }

    await().atMost(Duration.ofSeconds(30)).until(() -> stalled.stream().allMatch(Conn::closed)
        && vanishing.stream().allMatch(Conn::closed));
    assertThat(stalled).allSatisfy(c -> assertThat(c.openMillis()).isGreaterThanOrEqualTo(READ_TIMEOUT.toMillis() / 2));
    assertThat(gateway.slowConnectionsClosed() - closedBefore).isGreaterThanOrEqualTo(stalled.size());
    assertThat(cluster.sent).isEmpty();
    assertThat(inFlight()).isZero();
    // And the server is as good as new.
    HttpResponse<Buffer> r = GatewayTestBase.join(http.post(gateway.httpPort(), HOST, INFER)
        .putHeader("Content-Type", "application/json").sendBuffer(Buffer.buffer(BODY)));
    assertThat(r.statusCode()).isEqualTo(200);
  }

  @Test
  void clientsThatCloseWhileTheirRequestWaitsInAPoolWithdrawItAndLeaveNothingInFlight() {
    cluster.node("node-a").hold = true;
    List<Conn> conns = open(CONNECTIONS);
    String request = "POST " + INFER + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
        + BODY.length() + "\r\n\r\n" + BODY;
    conns.forEach(c -> c.socket.write(request));
    await().atMost(Duration.ofSeconds(30)).until(() -> cluster.sent.size() == CONNECTIONS);
    assertThat(inFlight()).isEqualTo(CONNECTIONS);

    conns.forEach(c -> c.socket.close());

    await().atMost(Duration.ofSeconds(30)).until(() -> inFlight() == 0
        && cluster.sent.stream().allMatch(s -> s.future().isCancelled()));
    assertThat(conns).allSatisfy(c -> assertThat(c.received()).isEmpty());
    double cancelled = registry.find("kiln.gateway.requests").tag("code", "499").counters().stream()
        .mapToDouble(io.micrometer.core.instrument.Counter::count).sum();
    assertThat(cancelled).isGreaterThanOrEqualTo(CONNECTIONS);
  }

  @Test
  void aKeptAliveConnectionAskingWithinTheReadTimeoutStaysOpenPastManyTimeoutsThenClosesOnceIdle() {
    // The read clock is re-armed lazily (one timer per timeout period, not one per request): a timer that
    // fires after the clock moved on must wait for the rest, and the connection close only once it idled.
    Conn c = open(1).get(0);
    long periodic = vertx.setPeriodic(150, id -> c.socket.write("GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n"));
    try {
      await().atMost(Duration.ofSeconds(60)).until(() -> answers(c) >= 20); // >= 3 s: three read timeouts
      assertThat(c.closed()).as("closed while it kept asking").isFalse();
    } finally {
      vertx.cancelTimer(periodic);
    }
    long closedBefore = gateway.slowConnectionsClosed();
    await().atMost(Duration.ofSeconds(30)).until(c::closed);
    assertThat(gateway.slowConnectionsClosed()).as("closed by the read clock").isGreaterThan(closedBefore);
  }

  private static int answers(Conn c) {
    String r = c.received();
    int n = 0;
    for (int i = r.indexOf("\"live\""); i >= 0; i = r.indexOf("\"live\"", i + 1)) {
      n++;
    }
    return n;
  }

  @Test
  void anIdleKeepAliveConnectionIsClosedAfterTheReadTimeout() {
    Conn c = open(1).get(0);
    long askedAt = System.nanoTime();
    c.socket.write("GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n");
    await().atMost(Duration.ofSeconds(10)).until(() -> c.received().contains("\"live\""));
    await().atMost(Duration.ofSeconds(30)).until(c::closed);
    assertThat(TimeUnit.NANOSECONDS.toMillis(c.closedAt - askedAt)).isGreaterThanOrEqualTo(READ_TIMEOUT.toMillis() - 50);
  }
}
