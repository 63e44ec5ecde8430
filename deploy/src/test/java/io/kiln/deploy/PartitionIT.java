package io.kiln.deploy;

import static io.kiln.deploy.PartitionChecks.alive;
import static io.kiln.deploy.PartitionChecks.converged;
import static io.kiln.deploy.PartitionChecks.deployment;
import static io.kiln.deploy.PartitionChecks.managerOf;
import static io.kiln.deploy.PartitionChecks.ownership;
import static io.kiln.deploy.PartitionChecks.poolReady;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kiln.testkit.OipRequest;
import io.kiln.testkit.RunStamp;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.assertj.core.api.SoftAssertions;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A network partition, for real: three Kiln hosts in network namespaces of their own ({@link MultiHostCluster}, as in
 * {@link MultiHostIT}), started with split-brain protection ({@code --min-cluster-size 2}), an identity deployment
 * with a pool on every node, closed-loop load through {@code n1}'s gateway (part of it pinned with {@code kiln-node}
 * to {@code n2} and {@code n3}). Then {@code n3}'s cable is pulled (its bridge port down; its process keeps running):
 * <ul>
 *   <li>the majority ({@code n1}, {@code n2}) keeps answering; requests pinned to n3 fail cleanly (503 with
 *       Retry-After, or 504) within their deadline plus slack, none hangs;
 *   <li>inside n3's own namespace (a second client there: n3's gateway is bound to its own address, which stays
 *       local), n3 answers from its local pool, and refuses writes ({@code POST /api/v1/deployments}, a pipeline run,
 *       a job) with a 503 naming the store and the minimum cluster size, while the majority accepts a run and a job
 *       ({@link PartitionWork}).
 * </ul>
 * Then the cable goes back in: Hazelcast merges n3 into the majority, and within a bound every node sees three live
 * nodes, the deployment READY with exactly one ready pool per node, each named actor of the registry held by exactly
 * one live actor (the nodes' own tables, {@code localActors} in each node's status) and no name held twice, and
 * requests through every gateway succeed; every node lists exactly the majority's runs and job, finished, with each
 * result present once and right. Over the whole run no request was lost: each one succeeded or failed cleanly
 * within deadline plus slack ({@link ClosedLoopLoad}).
 *
 * <p>Needs root and iproute2 (network namespaces); elsewhere it is skipped, saying why. Whatever happens, the
 * processes are killed and the namespaces removed. Figures: {@code PARTITION {…}} in the output and
 * {@code target/reliability/partition.json}.
 */
class PartitionIT {

  static final List<String> NODES = List.of("n1", "n2", "n3");
  static final String GATEWAY = "n1";
  static final String CUT = "n3";
  static final String CLIENT = "c";
  static final Duration DEADLINE = Duration.ofSeconds(5);
  static final Duration SLACK = Duration.ofSeconds(5);
  /** How long after the cable goes back in the cluster must have converged. */
  static final Duration HEAL_BOUND = Duration.ofSeconds(Long.getLong("kiln.partition.healSeconds", 90));
  /** How long after convergence every name must stay owned once. */
  static final Duration STAYS = Duration.ofSeconds(10);
  static final long PHASE_REQUESTS = Long.getLong("kiln.partition.requests", 100);
  static final String TOKEN = "t-" + UUID.randomUUID();
  static final String CLUSTER = "partition-" + UUID.randomUUID();
  static final String MODEL = """
        - name: %s
          version: "1"
          model:
            uri: builtin:identity
            engine: Builtin
            inputs:  [{name: x, datatype: FP32, shape: [-1, 2]}]
            outputs: [{name: y, datatype: FP32, shape: [-1, 2]}]
          pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}
          batching: {max_batch_size: 8, max_batch_delay_ms: 2}
          queue: {max_queued: 256, timeout_ms: 5000}
      """;
  static final String YAML = "deployments:\n" + MODEL.formatted("echo") + PartitionWork.PIPELINES;
  static final String INFER = OipRequest.fp32("x", new long[] {1, 2}, 7.0f, -7.0f).json();

  static MultiHostCluster hosts;
  static NetnsClient.Remote client;
  /** The client inside n3's namespace: the only one that reaches n3 while its cable is out. */
  static NetnsClient.Remote inside;
  static Thread cleanupOnExit;
  static String skipped;

  @BeforeAll
  static void makeTheNetwork() throws Exception {
    skipped = NetNamespaces.unavailable();
    if (skipped == null) {
      try {
        hosts = MultiHostCluster.create(NODES, CLIENT);
        client = hosts.client();
        cleanupOnExit = new Thread(hosts::close, "partition-cleanup");
        Runtime.getRuntime().addShutdownHook(cleanupOnExit);
        inside = hosts.clientIn(CUT);
      } catch (IllegalStateException e) {
        skipped = "this machine does not allow the test's network namespaces: " + e.getMessage();
      }
    }
    if (skipped != null) {
      System.out.println("PartitionIT skipped: " + skipped);
    }
  }

  @BeforeEach
  void onlyWhereNamespacesCanBeMade() {
    Prerequisites.need("PartitionIT", skipped);
  }

  @AfterAll
  static void tearDown() {
    if (hosts != null) {
      hosts.close();
      Runtime.getRuntime().removeShutdownHook(cleanupOnExit);
    }
  }

  final Map<String, Object> figures = new LinkedHashMap<>();
  /** n3's pool manager before the cut. */
  String managerBefore = "none";
  /** Checks that need not stop the run (the heal and the counts still tell what they can). */
  final SoftAssertions soft = new SoftAssertions();
  /** The pipeline runs and the job, asked of either side. */
  PartitionWork work;
  long began;

  @Test
  void theMinorityRefusesWritesAndAfterTheHealEveryNameHasOneOwnerAndNoRequestIsLost() throws Exception {
    began = System.nanoTime();
    for (String n : NODES) { // all at once: with a minimum cluster size of 2 none starts serving alone
      hosts.start(n, List.of("--cluster-name", CLUSTER, "--token", TOKEN, "--cpus", "2", "--min-cluster-size", "2",
          "--request-timeout-ms", Long.toString(DEADLINE.toMillis()), "--warmup-seconds", "0"));
    }
    NODES.forEach(hosts::awaitEntry);
    awaitStatus(client, GATEWAY, "all three nodes alive in n1's status", Duration.ofSeconds(90),
        s -> NODES.stream().allMatch(n -> alive(s, n)) ? null : "nodes " + s.path("nodes"));
    figures.put("clusterFormedMs", msSince(began));
    NetnsClient.Remote.Answer applied = client.http("POST", hosts.url(GATEWAY, "/api/v1/deployments"), TOKEN, YAML);
    assertThat(applied.status()).as(applied.body()).isEqualTo(200);
    awaitStatus(client, GATEWAY, "echo's pool READY on every node", Duration.ofSeconds(90),
        s -> NODES.stream().allMatch(n -> poolReady(s, n)) ? null : "pools " + deployment(s).path("pools"));
    await("echo ready at n1's gateway").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(250))
        .until(() -> client.http("GET", hosts.url(GATEWAY, "/v2/models/echo/ready"), null, null).status() == 200);
    figures.put("servingMs", msSince(began));
    work = new PartitionWork(hosts, TOKEN);

    ObjectNode load = load(hosts.url(GATEWAY, ""), "counts.json", "steady");
    var groups = load.putArray("groups");
    groups.addObject().put("model", "echo").put("clients", 2);
    groups.addObject().put("model", "echo").put("pinnedTo", "n2").put("clients", 1);
    groups.addObject().put("model", "echo").put("pinnedTo", CUT).put("clients", 2);
    client.command(load, Duration.ofSeconds(60));
    awaitCounts("counts.json", "every pool served " + PHASE_REQUESTS + " requests through n1", Duration.ofSeconds(120),
        c -> NODES.stream().allMatch(n -> ranOn(c, "steady", n) >= PHASE_REQUESTS));

    JsonNode outside;
    JsonNode within;
    try {
      split();
      heal();
    } finally { // the counts and figures so far, also when a step did not come true
      outside = client.command(client.op("stop"), Duration.ofSeconds(60)).path("counts");
      within = inside.command(inside.op("stop"), Duration.ofSeconds(60)).path("counts");
      report(outside, within);
    }
    for (Map.Entry<String, JsonNode> load1 : Map.of("through n1", outside, "inside n3", within).entrySet()) {
      JsonNode counts = load1.getValue();
      String where = load1.getKey();
      soft.assertThat(counts.path("inFlight").asLong()).as("%s: every request sent ended", where).isZero();
      long ended = 0;
      for (var p : iterable(counts.path("phases").fields())) {
        ended += p.getValue().path("ended").asLong();
        soft.assertThat(p.getValue().path("lost").asLong())
            .as("%s, %s: requests lost (hung, reset, late, wrong): %s", where, p.getKey(), p.getValue()).isZero();
        soft.assertThat(p.getValue().path("succeeded").asLong()).as("%s, %s: succeeded", where, p.getKey()).isPositive();
      }
      soft.assertThat(ended).as("%s: every request sent is counted in a phase", where)
          .isEqualTo(counts.path("sent").asLong());
    }
    JsonNode steady = outside.path("phases").path("steady");
    soft.assertThat(steady.path("failedCleanly").asLong()).as("steady: failures %s", steady.path("failures")).isZero();
    soft.assertAll();
  }

  /** Pulls n3's cable; checks both sides as the test's class comment says. */
  private void split() throws Exception {
    managerBefore = managerOf(hosts.status(client, GATEWAY, TOKEN), CUT);
    client.command(client.op("phase").put("name", "split"), Duration.ofSeconds(10));
    long cutAt = System.nanoTime();
    hosts.network().disconnect(CUT);
    awaitStatus(client, GATEWAY, "n3 dead in n1's status", Duration.ofSeconds(60),
        s -> alive(s, CUT) ? "n3 alive" : null);
    figures.put("majoritySawTheCutMs", msSince(cutAt));
    awaitStatus(inside, CUT, "n1 and n2 dead in n3's own status", Duration.ofSeconds(60),
        s -> alive(s, "n1") || alive(s, "n2") ? "nodes " + s.path("nodes") : null);
    figures.put("minoritySawTheCutMs", msSince(cutAt));

    // The minority answers from its own pool, to a caller on its own host.
    List<Integer> answers = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      NetnsClient.Remote.Answer a = inside.http("POST", hosts.url(CUT, "/v2/models/echo/infer"), null, INFER);
      answers.add(a.status());
      assertThat(a.status()).as("n3 serves from its own pool while cut off: %s", a.body()).isEqualTo(200);
      assertThat(a.json().path("parameters").path("kiln_node").asText()).isEqualTo(CUT);
    }
    ObjectNode minority = load(hosts.url(CUT, ""), "counts-n3.json", "split");
    minority.putArray("groups").addObject().put("model", "echo").put("clients", 2);
    inside.command(minority, Duration.ofSeconds(60));

    // ... and refuses writes, naming the minimum cluster size.
    long askedAt = System.nanoTime();
    NetnsClient.Remote.Answer refused = inside.http("POST", hosts.url(CUT, "/api/v1/deployments"), TOKEN,
        "deployments:\n" + MODEL.formatted("probe"));
    figures.put("minorityWrite", Map.of("status", refused.status(), "body", refused.body(),
        "retryAfter", String.valueOf(refused.retryAfter()), "tookMs", msSince(askedAt)));
    soft.assertThat(refused.status()).as("a write on the minority side: %s", refused.body()).isEqualTo(503);
    soft.assertThat(refused.body()).contains("minimum cluster size");
    soft.assertThat(refused.retryAfter()).as("Retry-After of the refusal").isNotNull();
    NetnsClient.Remote.Answer list = inside.http("GET", hosts.url(CUT, "/api/v1/deployments"), TOKEN, null);
    soft.assertThat(list.status()).as("reads still work on the minority: %s", list.body()).isEqualTo(200);
    soft.assertThat(list.body()).contains("\"echo\"").doesNotContain("\"probe\"");
    // A pipeline run and a job: refused on the minority, accepted by the majority (they finish; checked after the heal).
    work.refusedOnTheMinority(inside, CUT, soft);
    work.startOnTheMajority(client, GATEWAY);

    long okOutside = ok(counts("counts.json"), "split");
    awaitCounts("counts.json", PHASE_REQUESTS + " more answers from the majority while split", Duration.ofSeconds(120),
        c -> ok(c, "split") >= okOutside + PHASE_REQUESTS && ranOn(c, "split", "n1") > 0 && ranOn(c, "split", "n2") > 0);
    awaitCounts("counts-n3.json", PHASE_REQUESTS + " answers from n3's own pool while split", Duration.ofSeconds(120),
        c -> ranOn(c, "split", CUT) >= PHASE_REQUESTS);
    figures.put("splitMs", msSince(cutAt));
  }

  /** Puts n3's cable back; waits until the cluster converged, as the test's class comment says. */
  private void heal() throws Exception {
    client.command(client.op("phase").put("name", "healed"), Duration.ofSeconds(10));
    inside.command(inside.op("phase").put("name", "healed"), Duration.ofSeconds(10));
    long healAt = System.nanoTime();
    hosts.network().reconnect(CUT);
    for (String n : NODES) {
      awaitStatus(client, n, "converged, as " + n + " sees it", HEAL_BOUND.minus(Duration.ofNanos(System.nanoTime()
          - healAt)), s -> converged(s, n, NODES));
      figures.put("convergedAt" + n + "Ms", msSince(healAt));
    }
    // Each named actor of the registry held by exactly one live actor of the nodes' own tables, none twice.
    Map<String, JsonNode> statuses = new LinkedHashMap<>();
    AtomicReference<String> last = new AtomicReference<>();
    try {
      await("each name owned once").atMost(HEAL_BOUND.minus(Duration.ofNanos(System.nanoTime() - healAt)))
          .pollInterval(Duration.ofMillis(250)).until(() -> {
            for (String n : NODES) {
              statuses.put(n, hosts.status(client, n, TOKEN));
            }
            last.set(ownership(statuses, GATEWAY, NODES));
            return last.get() == null;
          });
    } catch (ConditionTimeoutException e) {
      throw new AssertionError("not within " + HEAL_BOUND + " of the heal: " + last.get() + hosts.logTails(), e);
    }
    figures.put("namesOwnedOnceMs", msSince(healAt));
    figures.put("registryAfterHeal", statuses.get(GATEWAY).path("actors").size());
    // Not asserted (a replaced manager is one manager too), but the heal should not need to replace it.
    String managerAfter = managerOf(statuses.get(GATEWAY), CUT);
    figures.put("n3ManagerAcrossTheHeal", managerAfter.equals(managerBefore) ? "kept " + managerAfter
        : "replaced " + managerBefore + " by " + managerAfter);
    // ... and it stays so: no second manager comes up later (a create racing the merge's return of the entries).
    try {
      await("each name still owned once").during(STAYS).atMost(STAYS.plusSeconds(30))
          .pollInterval(Duration.ofMillis(500)).until(() -> {
            for (String n : NODES) {
              statuses.put(n, hosts.status(client, n, TOKEN));
            }
            last.set(ownership(statuses, GATEWAY, NODES));
            return last.get() == null;
          });
    } catch (ConditionTimeoutException e) {
      throw new AssertionError("ownership did not stay single for " + STAYS + ": " + last.get() + hosts.logTails(), e);
    }
    work.completeOnceAfterTheHeal(client, NODES, GATEWAY, HEAL_BOUND);
    for (String n : NODES) {
      NetnsClient.Remote.Answer a = client.http("POST", hosts.url(n, "/v2/models/echo/infer"), null, INFER);
      assertThat(a.status()).as("%s's gateway after the heal: %s", n, a.body()).isEqualTo(200);
    }
    long okOutside = ok(counts("counts.json"), "healed");
    awaitCounts("counts.json", PHASE_REQUESTS + " more answers through n1 after the heal, from every pool",
        Duration.ofSeconds(120), c -> ok(c, "healed") >= okOutside + PHASE_REQUESTS
            && NODES.stream().allMatch(n -> ranOn(c, "healed", n) > 0));
    figures.put("healedMs", msSince(healAt));
  }

  ObjectNode load(String gateway, String file, String phase) {
    return client.op("load").put("gateway", gateway).put("deadlineMs", DEADLINE.toMillis())
        .put("slackMs", SLACK.toMillis()).put("out", hosts.home().resolve(file).toString()).put("phase", phase);
  }

  static JsonNode counts(String file) {
    try {
      return ClosedLoopLoad.JSON.readTree(hosts.home().resolve(file).toFile());
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

  /**
   * Waits until {@code problem} finds nothing wrong with {@code node}'s status as {@code from} reads it (a status that
   * does not answer, as while a side has not yet seen the cut, is one more try); a timeout shows the last problem.
   */
  static void awaitStatus(NetnsClient.Remote from, String node, String what, Duration atMost,
                          Function<JsonNode, String> problem) {
    AtomicReference<String> last = new AtomicReference<>();
    try {
      await(what).atMost(atMost).pollInterval(Duration.ofMillis(200)).until(() -> {
        try {
          last.set(problem.apply(hosts.status(from, node, TOKEN)));
        } catch (Exception | AssertionError e) {
          last.set("status: " + e);
        }
        return last.get() == null;
      });
    } catch (ConditionTimeoutException e) {
      throw new AssertionError("not within " + atMost + ": " + what + "\nlast seen: " + last.get() + hosts.logTails(), e);
    }
  }

  static void awaitCounts(String file, String what, Duration atMost, java.util.function.Predicate<JsonNode> done) {
    AtomicReference<JsonNode> last = new AtomicReference<>();
    try {
      await(what).atMost(atMost).pollInterval(Duration.ofMillis(100)).until(() -> {
        last.set(counts(file));
        return done.test(last.get());
      });
    } catch (ConditionTimeoutException e) {
      throw new AssertionError("not within " + atMost + ": " + what + "\nlast seen: " + last.get() + hosts.logTails(), e);
    }
  }

  static <T> Iterable<T> iterable(java.util.Iterator<T> it) {
    return () -> it;
  }

  static long msSince(long nanos) {
    return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - nanos);
  }

  private void report(JsonNode outside, JsonNode within) throws IOException {
    Map<String, Object> f = new LinkedHashMap<>();
    f.put("scenario", "partition");
    f.putAll(RunStamp.fields());
    f.put("minClusterSize", 2);
    f.put("cut", CUT + "'s bridge port down, its process running");
    f.put("deadlineMs", DEADLINE.toMillis());
    f.putAll(figures);
    if (work != null) {
      f.put("runsAndJobs", work.figures);
    }
    f.put("totalMs", msSince(began));
    f.put("throughN1", Map.of("sent", outside.path("sent"), "inFlightAtEnd", outside.path("inFlight"),
        "phases", outside.path("phases")));
    f.put("insideN3", Map.of("sent", within.path("sent"), "inFlightAtEnd", within.path("inFlight"),
        "phases", within.path("phases")));
    String json = ClosedLoopLoad.JSON.writerWithDefaultPrettyPrinter().writeValueAsString(f);
    Path out = Path.of(System.getProperty("kiln.reliability.out", "target/reliability"));
    Files.createDirectories(out);
    Files.writeString(out.resolve("partition.json"), json);
    System.out.println("PARTITION " + json);
  }
}
