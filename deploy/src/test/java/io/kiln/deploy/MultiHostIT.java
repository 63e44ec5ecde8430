package io.kiln.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;
import org.assertj.core.api.SoftAssertions;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Three Kiln hosts for real, on one machine: each node runs in a network namespace of its own with its own address
 * ({@link NetNamespaces}: veth pairs on a bridge the test makes, a private /24 per run), bound to that address and
 * nothing else (every TCP listener in its namespace is checked), and the three find each other through ONE name that
 * resolves to all three addresses, as a headless Service's DNS name does ({@code --discovery k8s-dns:NAME}; Hazelcast
 * 5.5 looks the name up with {@code InetAddress.getAllByName}, which reads each JVM's hosts file,
 * {@code -Djdk.net.hosts.file}, written by the test as a pod's {@code /etc/hosts} is written). Every node listens on
 * the same fixed ports, each in its own port space. Load comes from a fourth namespace ({@link NetnsClient}: the
 * test's JVM has no route into the network), closed loop, through one gateway ({@code n1}): an identity deployment,
 * part of its traffic pinned ({@code kiln-node}) to {@code n2} and {@code n3} so that all three pools serve, and one
 * client of a {@code builtin:sleep} deployment holding n3's worker 1.5 s per request. Then n2's host is lost (its
 * link cut, then SIGKILL; {@code -Dkiln.multihost.kill=process} only kills): every request meanwhile succeeds or
 * fails cleanly (503 with Retry-After, 504) within its deadline plus slack, none hangs or is lost. Once the cluster
 * has seen n2 dead, n3 gets SIGTERM with requests in flight on it (those pinned to it route freely from that moment,
 * as a terminating pod stops being sent new work): the target is a drain without one failed request and an exit
 * code 0 ({@code -Dkiln.multihost.drain=report} only reports the drain's figures). Any hidden loopback assumption (a
 * part binding or advertising 127.0.0.1) shows as nodes that cannot reach each other, or a listener off their address.
 *
 * <p>Needs root and iproute2 (network namespaces); elsewhere it is skipped, saying why. Whatever happens, the
 * processes are killed and the namespaces removed; namespaces that older runs left behind are removed first.
 */
class MultiHostIT {

  static final List<String> NODES = List.of("n1", "n2", "n3");
  static final String GATEWAY = "n1";
  static final String KILLED = "n2";
  static final String DRAINED = "n3";
  static final String CLIENT = "c";
  static final Duration DEADLINE = Duration.ofSeconds(5);
  static final Duration SLACK = Duration.ofSeconds(5);
  /** Successful requests each phase needs before the next step (and per node in the steady phase). */
  static final long PHASE_REQUESTS = Long.getLong("kiln.multihost.requests", 200);
  /**
   * Whether n2's host is lost, not only its process: its link is cut before the SIGKILL, so no reset tells the others
   * (failure detection by missed heartbeats, as when a machine dies); {@code -Dkiln.multihost.kill=process} only kills.
   */
  static final boolean HOST_LOSS = !"process".equals(System.getProperty("kiln.multihost.kill", "host"));
  static final boolean ASSERT_DRAIN = !"report".equals(System.getProperty("kiln.multihost.drain", "assert"));
  static final String TOKEN = "t-" + UUID.randomUUID();
  static final String CLUSTER = "multihost-" + UUID.randomUUID();
  static final String YAML = """
      deployments:
        - name: echo
          version: "1"
          model:
            uri: builtin:identity
            engine: Builtin
            inputs:  [{name: x, datatype: FP32, shape: [-1, 2]}]
            outputs: [{name: y, datatype: FP32, shape: [-1, 2]}]
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}
          batching: {max_batch_size: 8, max_batch_delay_ms: 2}
          queue: {max_queued: 256, timeout_ms: 5000}
        - name: slow
          version: "1"
          model:
            uri: builtin:sleep
            engine: Builtin
            inputs:  [{name: x, datatype: FP32, shape: [-1, 2]}]
            outputs: [{name: y, datatype: FP32, shape: [-1, 2]}]
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}
          batching: {max_batch_size: 1, max_batch_delay_ms: 0}
          queue: {max_queued: 16, timeout_ms: 5000}
      """;
  /** How long each request of the {@code slow} deployment holds its worker: one is likely in flight at the SIGTERM. */
  static final int SLOW_MILLIS = 1500;
  static final List<String> DEPLOYMENTS = List.of("echo", "slow");

  static MultiHostCluster hosts;
  static NetnsClient.Remote client;
  static Thread cleanupOnExit;
  /** Why this machine cannot run the test, or null. */
  static String skipped;

  @BeforeAll
  static void makeTheNetwork() throws Exception {
    skipped = NetNamespaces.unavailable();
    if (skipped == null) {
      try {
        hosts = MultiHostCluster.create(NODES, CLIENT);
        client = hosts.client();
        cleanupOnExit = new Thread(hosts::close, "multihost-cleanup");
        Runtime.getRuntime().addShutdownHook(cleanupOnExit); // a killed test run leaves no namespaces behind either
      } catch (IllegalStateException e) {
        skipped = "this machine does not allow the test's network namespaces: " + e.getMessage();
      }
    }
    if (skipped != null) {
      System.out.println("MultiHostIT skipped: " + skipped);
    }
  }

  @BeforeEach
  void onlyWhereNamespacesCanBeMade() {
    // Here rather than in @BeforeAll, so that the report shows the test as skipped, with the reason.
    Prerequisites.need("MultiHostIT", skipped);
  }

  @AfterAll
  static void tearDown() {
    if (hosts != null) {
      hosts.close();
      Runtime.getRuntime().removeShutdownHook(cleanupOnExit);
    }
  }

  static void start(String id) throws IOException {
    hosts.start(id, List.of("--cluster-name", CLUSTER, "--token", TOKEN, "--cpus", "2",
        "--request-timeout-ms", Long.toString(DEADLINE.toMillis()), "--warmup-seconds", "0"));
  }

  static String url(String node, String path) {
    return hosts.url(node, path);
  }

  static JsonNode status() throws Exception {
    return hosts.status(GATEWAY, TOKEN);
  }

  static boolean alive(JsonNode status, String node) {
    for (JsonNode n : status.path("nodes")) {
      if (n.path("id").asText().equals(node)) {
        return n.path("alive").asBoolean();
      }
    }
    return false;
  }

  static boolean poolReady(JsonNode status, String deployment, String node) {
    for (JsonNode d : status.path("deployments")) {
      if (d.path("name").asText().equals(deployment)) {
        for (JsonNode p : d.path("pools")) {
          if (p.path("node").asText().equals(node)) {
            return p.path("ready").asBoolean();
          }
        }
      }
    }
    return false;
  }

  /** The load's counts file, as last written. */
  static JsonNode counts() {
    try {
      return ClosedLoopLoad.JSON.readTree(hosts.home().resolve("counts.json").toFile());
    } catch (IOException e) {
      return ClosedLoopLoad.JSON.createObjectNode(); // not written yet
    }
  }

  static long ok(JsonNode counts, String phase) {
    return counts.path("phases").path(phase).path("succeeded").asLong();
  }

  static long ranOn(JsonNode counts, String phase, String node) {
    return counts.path("phases").path(phase).path("ranOn").path(node).asLong();
  }

  /** Waits until {@code done} holds for what {@code read} returns; a timeout fails showing the last value and the nodes' logs. */
  static JsonNode awaitThat(String what, Duration atMost, Callable<JsonNode> read, Predicate<JsonNode> done) {
    AtomicReference<JsonNode> last = new AtomicReference<>();
    try {
      await(what).atMost(atMost).pollInterval(Duration.ofMillis(100)).until(() -> {
        last.set(read.call());
        return done.test(last.get());
      });
    } catch (ConditionTimeoutException e) {
      throw new AssertionError("not within " + atMost + ": " + what + "\nlast seen: " + last.get() + hosts.logTails(), e);
    }
    return last.get();
  }

  static JsonNode awaitStatus(String what, Duration atMost, Predicate<JsonNode> done) {
    return awaitThat(what, atMost, MultiHostIT::status, done);
  }

  static JsonNode awaitCounts(String what, Duration atMost, Predicate<JsonNode> done) {
    return awaitThat(what, atMost, MultiHostIT::counts, done);
  }

  static JsonNode command(ObjectNode c) throws Exception {
    return client.command(c, Duration.ofSeconds(60));
  }

  static long msSince(long nanos) {
    return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - nanos);
  }

  /** Figures of this run, printed and written to {@code target/reliability/multi-host.json}. */
  final Map<String, Object> figures = new LinkedHashMap<>();
  long began;

  @Test
  void threeHostsFindEachOtherByOneNameThenOneIsKilledAndOneDrainedUnderLoad() throws Exception {
    began = System.nanoTime();
    formTheClusterByOneName();
    deployAPoolOnEveryNode();
    ObjectNode load = client.op("load").put("gateway", url(GATEWAY, "")).put("deadlineMs", DEADLINE.toMillis())
        .put("slackMs", SLACK.toMillis()).put("out", hosts.home().resolve("counts.json").toString()).put("phase", "steady");
    var groups = load.putArray("groups");
    groups.addObject().put("model", "echo").put("clients", 2);
    groups.addObject().put("model", "echo").put("pinnedTo", KILLED).put("clients", 2);
    groups.addObject().put("model", "echo").put("pinnedTo", DRAINED).put("clients", 2);
    groups.addObject().put("model", "slow").put("pinnedTo", DRAINED).put("clients", 1).put("holdMillis", SLOW_MILLIS);
    command(load);
    awaitCounts("every pool served " + PHASE_REQUESTS + " requests through n1's gateway", Duration.ofSeconds(120),
        c -> NODES.stream().allMatch(n -> ranOn(c, "steady", n) >= PHASE_REQUESTS));
    killOne();
    Integer exitCode = drainOne();
    JsonNode stopped = command(client.op("stop")).path("counts");
    JsonNode phases = stopped.path("phases");
    report(stopped);

    SoftAssertions soft = new SoftAssertions();
    soft.assertThat(stopped.path("inFlight").asLong()).as("every request sent ended (%s sent)", stopped.path("sent"))
        .isZero();
    long ended = 0;
    for (String p : List.of("steady", "sigkill", "sigterm")) {
      JsonNode t = phases.path(p);
      ended += t.path("ended").asLong();
      soft.assertThat(t.path("lost").asLong()).as("%s: requests lost (hung, reset, late, wrong): %s", p, t).isZero();
      soft.assertThat(t.path("succeeded").asLong()).as("%s: succeeded", p).isPositive();
    }
    soft.assertThat(ended).as("every request sent is counted in a phase").isEqualTo(stopped.path("sent").asLong());
    JsonNode steady = phases.path("steady");
    soft.assertThat(steady.path("failedCleanly").asLong()).as("steady: failures %s", steady.path("failures")).isZero();
    soft.assertThat(exitCode).as("the SIGTERMed node exited within 60 s").isNotNull();
    soft.assertAll();

    if (ASSERT_DRAIN) {
      JsonNode sigterm = phases.path("sigterm");
      SoftAssertions drain = new SoftAssertions();
      drain.assertThat(sigterm.path("failedCleanly").asLong() + sigterm.path("lost").asLong())
          .as("sigterm: failed requests during the drain of n3 (target 0): %s", sigterm).isZero();
      drain.assertThat(exitCode).as("exit code of the SIGTERMed node (target 0)").isEqualTo(0);
      drain.assertAll();
    }
  }

  /** The first node finds no one at the name's other addresses and starts the cluster; the others join it. */
  private void formTheClusterByOneName() throws Exception {
    start(GATEWAY);
    Map<String, JsonNode> entries = new LinkedHashMap<>();
    entries.put(GATEWAY, hosts.awaitEntry(GATEWAY));
    start(KILLED);
    start(DRAINED);
    for (String n : List.of(KILLED, DRAINED)) {
      entries.put(n, hosts.awaitEntry(n));
    }
    for (String n : NODES) {
      assertThat(entries.get(n).path("host").asText()).isEqualTo(hosts.address(n));
      assertThat(hosts.output(n)).contains("kiln: node " + n + " joined cluster '" + CLUSTER + "' at "
          + hosts.address(n) + ":" + MultiHostCluster.CLUSTER_PORT);
    }
    JsonNode status = awaitStatus("all three nodes alive in n1's status", Duration.ofSeconds(90),
        s -> NODES.stream().allMatch(n -> alive(s, n)));
    figures.put("clusterFormedMs", msSince(began));
    Map<String, String> advertised = new LinkedHashMap<>();
    status.path("nodes").forEach(n -> advertised.put(n.path("id").asText(), n.path("address").asText()));
    assertThat(advertised).as("every node advertises its own address, none loopback")
        .containsOnlyKeys(NODES).allSatisfy((id, address) -> assertThat(address).contains(hosts.address(id)));
  }

  private void deployAPoolOnEveryNode() throws Exception {
    NetnsClient.Remote.Answer applied = client.http("POST", url(GATEWAY, "/api/v1/deployments"), TOKEN, YAML);
    assertThat(applied.status()).as(applied.body()).isEqualTo(200);
    awaitStatus("echo's and slow's pools READY on every node", Duration.ofSeconds(90),
        s -> NODES.stream().allMatch(n -> DEPLOYMENTS.stream().allMatch(d -> poolReady(s, d, n))));
    for (String d : DEPLOYMENTS) {
      await(d + " ready at n1's gateway").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(250))
          .until(() -> client.http("GET", url(GATEWAY, "/v2/models/" + d + "/ready"), null, null).status() == 200);
    }
    figures.put("servingMs", msSince(began));
    // Bound to its own address and nothing else: no wildcard, no loopback listener in any node's namespace.
    Map<String, List<String>> listening = new LinkedHashMap<>();
    for (String n : NODES) {
      listening.put(n, hosts.network().listeners(n));
    }
    figures.put("listening", listening);
    assertThat(listening).allSatisfy((n, sockets) -> assertThat(sockets).as("TCP listeners in %s's namespace", n)
        .isNotEmpty().allSatisfy(a -> assertThat(a).startsWith(hosts.address(n) + ":")));
  }

  /** SIGKILL n2; the phase lasts until the survivors served PHASE_REQUESTS more after the cluster saw it dead. */
  private void killOne() throws Exception {
    command(client.op("phase").put("name", "sigkill"));
    long killedAt = System.nanoTime();
    if (HOST_LOSS) {
      hosts.network().disconnect(KILLED);
    }
    hosts.process(KILLED).destroyForcibly();
    assertThat(hosts.process(KILLED).waitFor(30, TimeUnit.SECONDS)).as("n2 died of SIGKILL").isTrue();
    awaitStatus("n2 dead in n1's status", Duration.ofSeconds(60), s -> !alive(s, KILLED));
    figures.put("killedDeadInStatusMs", msSince(killedAt));
    command(client.op("unpin").put("node", KILLED)); // its clients stop asking for a node that is gone
    awaitStatus("n2's pools not ready in n1's status", Duration.ofSeconds(60),
        s -> DEPLOYMENTS.stream().noneMatch(d -> poolReady(s, d, KILLED)));
    figures.put("killedPoolNotReadyMs", msSince(killedAt));
    long okAtDetection = ok(counts(), "sigkill");
    awaitCounts(PHASE_REQUESTS + " more answers after n2 was seen dead, some from n3", Duration.ofSeconds(120),
        c -> ok(c, "sigkill") >= okAtDetection + PHASE_REQUESTS && ranOn(c, "sigkill", DRAINED) > 0);
  }

  /**
   * SIGTERM n3 while a slow request pinned to it is in flight on its worker (from then on its clients route freely, as
   * a terminating pod stops being sent new work; the fast pinned requests have ended, so no request can reach n1's
   * router pinned to a node that is already draining); then PHASE_REQUESTS more answers once it is gone. Returns its
   * exit code, or null if it did not exit within 60 s (it is then killed).
   */
  private Integer drainOne() throws Exception {
    command(client.op("phase").put("name", "sigterm"));
    awaitCounts("n3 serving in the sigterm phase", Duration.ofSeconds(60),
        c -> ranOn(c, "sigterm", DRAINED) >= Math.min(50, PHASE_REQUESTS));
    // The slow request surely at n3's worker, the fast ones pinned there ended: n3 has exactly one request in flight.
    ObjectNode unpin = client.op("unpin").put("node", DRAINED);
    unpin.putObject("whenHeld").put("group", "slow pinned " + DRAINED).put("millis", 200).put("atMostMillis", 500);
    JsonNode held = command(unpin);
    long termAt = System.nanoTime();
    Process drained = hosts.process(DRAINED);
    drained.destroy(); // SIGTERM
    boolean exited = drained.waitFor(60, TimeUnit.SECONDS);
    figures.put("drainedInFlightAtSigterm", held.path("pinnedInFlight"));
    figures.put("drainedHeldRequestAgeAtSigtermMs", held.path("heldMillis").asLong());
    figures.put("drainedExitedMs", exited ? msSince(termAt) : null);
    Integer exitCode = exited ? drained.exitValue() : null;
    figures.put("drainedExitCode", exitCode);
    if (!exited) {
      drained.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
    }
    awaitStatus("n3 gone from n1's status", Duration.ofSeconds(60), s -> !alive(s, DRAINED));
    figures.put("drainedGoneInStatusMs", msSince(termAt));
    long okAtExit = ok(counts(), "sigterm");
    awaitCounts(PHASE_REQUESTS + " more answers after n3 left", Duration.ofSeconds(120),
        c -> ok(c, "sigterm") >= okAtExit + PHASE_REQUESTS);
    return exitCode;
  }

  private void report(JsonNode stopped) throws IOException {
    Map<String, Object> f = new LinkedHashMap<>();
    f.put("scenario", "multi-host");
    f.put("at", java.time.Instant.now().toString());
    f.put("loadAverage", ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
    f.put("addresses", NODES.stream().map(hosts::address).toList());
    f.put("discovery", "k8s-dns:" + MultiHostCluster.SERVICE);
    f.put("deadlineMs", DEADLINE.toMillis());
    f.put("killed", HOST_LOSS ? "host lost: link cut, then SIGKILL" : "SIGKILL");
    f.putAll(figures);
    f.put("totalMs", msSince(began));
    f.put("sent", stopped.path("sent").asLong());
    f.put("inFlightAtEnd", stopped.path("inFlight").asLong());
    f.put("phases", stopped.path("phases"));
    String json = ClosedLoopLoad.JSON.writerWithDefaultPrettyPrinter().writeValueAsString(f);
    Path out = Path.of(System.getProperty("kiln.reliability.out", "target/reliability"));
    Files.createDirectories(out);
    Files.writeString(out.resolve("multi-host.json"), json);
    System.out.println("MULTIHOST " + json);
  }
}
