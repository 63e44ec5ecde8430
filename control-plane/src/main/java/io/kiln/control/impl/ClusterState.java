package io.kiln.control.impl;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kiln.gateway.spi.PoolAdmin;
import io.kiln.gateway.spi.PoolStatus;
import io.kiln.pipelines.Pipelines;
import io.kiln.pipelines.RunStatus;
import io.kiln.pipelines.StepStatus;
import io.kiln.pipelines.jobs.JobStatus;
import io.kiln.pipelines.jobs.Jobs;
import io.kiln.pools.PoolManager;
import io.kiln.pools.PoolNames;
import io.kiln.runtime.ActorInfo;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.NodeView;
import io.kiln.runtime.WireCodec;
import io.kiln.serve.DeploymentSpec;
import io.kiln.serve.DeploymentStatus;
import io.kiln.serve.ServeController;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * The dashboard's picture of the cluster, read from what the management APIs read: the node table (dead nodes stay
 * in it, not alive), the controller's desired state and status, the pools' own reports (idle and busy workers, queue
 * depth, draining; through the gateway's {@link PoolAdmin} port, as inference reaches pools through its
 * {@link io.kiln.gateway.spi.PoolDirectory}), the named-actor registry (every worker with its state and restarts),
 * and the pipeline-run and job stores. Nothing here asks other nodes; the reads are the node's mirrors and the
 * stores.
 */
public final class ClusterState {

  /** The most runs and jobs the page lists (newest first). */
  static final int MAX_RUNS = 50;
  static final int MAX_JOBS = 50;

  private static final ObjectMapper JSON = WireCodec.json();

  private final KilnRuntime runtime;
  private final ServeController serve;
  private final PoolAdmin pools;
  private final Pipelines pipelines;
  private final Jobs jobs;
  private final Clock clock;
  /** When this node first saw each node not alive (the page says "down for …"). */
  private final Map<String, Long> downSince = new ConcurrentHashMap<>();

  public ClusterState(KilnRuntime runtime, ServeController serve, PoolAdmin pools, Pipelines pipelines, Jobs jobs,
               Clock clock) {
    this.runtime = runtime;
    this.serve = serve;
    this.pools = pools;
    this.pipelines = pipelines;
    this.jobs = jobs;
    this.clock = clock;
  }

  /** Fills {@code o} with {@code nodes}, {@code leader}, {@code deployments}, {@code pipelineRuns}, {@code jobs}. */
  public CompletionStage<ObjectNode> read(ObjectNode o, Function<String, JsonNode> gpusOf) {
    CompletionStage<List<ActorInfo>> actors = runtime.namedActors().exceptionally(e -> List.of());
    CompletionStage<List<RunStatus>> runs = pipelines == null ? CompletableFuture.completedFuture(List.of())
        : pipelines.runs(null).exceptionally(e -> List.of());
    CompletionStage<List<JobStatus>> jobList = jobs == null ? CompletableFuture.completedFuture(List.of())
        : jobs.list().exceptionally(e -> List.of());
    return actors.thenCompose(a -> runs.thenCombine(jobList, (r, j) -> {
      nodes(o, gpusOf);
      deployments(o.putArray("deployments"), a);
      runs(o.putArray("pipelineRuns"), r);
      jobs(o.putArray("jobs"), j);
      return o;
    }));
  }

  private void nodes(ObjectNode o, Function<String, JsonNode> gpusOf) {
    List<String> members = runtime.members();
    String leader = members.isEmpty() ? null : members.get(0);
    o.put("leader", leader);
    ArrayNode nodes = o.putArray("nodes");
    long now = clock.millis();
    List<NodeView> views = new ArrayList<>(runtime.clusterView().nodes());
    views.sort(Comparator.comparing(NodeView::nodeId));
    for (NodeView n : views) {
      ObjectNode node = nodes.addObject().put("id", n.nodeId()).put("address", n.address()).put("alive", n.alive())
          .put("leader", n.nodeId().equals(leader)).put("self", n.nodeId().equals(runtime.nodeId()));
      if (n.alive()) {
        downSince.remove(n.nodeId());
      } else {
        node.put("downSinceMs", downSince.computeIfAbsent(n.nodeId(), k -> now));
      }
      node.set("total", JSON.valueToTree(n.total().asMap()));
      node.set("available", JSON.valueToTree(n.available().asMap()));
      node.set("labels", JSON.valueToTree(n.labels()));
      JsonNode gpus = n.alive() ? gpusOf.apply(n.nodeId()) : null;
      node.set("gpus", gpus == null ? JSON.createArrayNode() : gpus);
    }
  }

  private void deployments(ArrayNode out, List<ActorInfo> actors) {
    Map<String, List<ActorInfo>> workersByDeployment = new HashMap<>();
    for (ActorInfo a : actors) {
      if (!PoolManager.NAMESPACE.equals(a.namespace()) || a.name() == null) {
        continue;
      }
      PoolNames.parse(a.name()).filter(p -> !p.isNodeLocal() && p.workerIndex().isPresent())
          .ifPresent(p -> workersByDeployment.computeIfAbsent(p.name(), k -> new ArrayList<>()).add(a));
    }
    Map<String, DeploymentStatus> statuses = serve.statuses();
    for (Map.Entry<String, DeploymentSpec> e : serve.desired().entrySet()) {
      String name = e.getKey();
      DeploymentStatus s = statuses.get(name);
      ObjectNode d = out.addObject().put("name", name).put("version", e.getValue().version());
      d.put("servingVersion", s == null ? null : s.servingVersion());
      d.put("phase", s == null ? "PENDING" : s.phase().name());
      d.put("message", s == null ? "" : s.message());
      d.put("failure", s == null ? null : s.failure());
      d.put("lastScaling", s == null ? null : s.lastScaling());
      d.put("lastHealth", s == null ? null : s.lastHealth());
      ArrayNode pools = d.putArray("pools");
      long queued = 0;
      for (DeploymentStatus.PoolState p : s == null ? List.<DeploymentStatus.PoolState>of() : s.pools()) {
        PoolStatus live = this.pools.status(name, p.version()).stream().filter(l -> l.nodeId().equals(p.node()))
            .findFirst().orElse(null);
        int queue = live != null ? live.queueDepth() : p.queueDepth();
        queued += queue;
        ObjectNode po = pools.addObject().put("node", p.node()).put("version", p.version()).put("ready", p.ready())
            .put("workers", p.workers()).put("targetWorkers", p.targetWorkers()).put("queueDepth", queue)
            .put("inFlight", live != null ? live.inFlight() : p.inFlight());
        if (live != null) {
          po.put("idle", live.idleWorkers()).put("busy", live.busyWorkers()).put("capacity", live.capacity())
              .put("draining", live.draining());
        }
      }
      d.put("queueDepth", queued);
      ArrayNode workers = d.putArray("workers");
      int restarts = 0;
      List<ActorInfo> ws = workersByDeployment.getOrDefault(name, List.of());
      ws.sort(Comparator.comparing(ActorInfo::name));
      for (ActorInfo a : ws) {
        PoolNames.Parsed p = PoolNames.parse(a.name()).orElseThrow();
        restarts += a.restarts();
        workers.addObject().put("node", a.nodeId()).put("version", p.version())
            .put("index", p.workerIndex().getAsInt()).put("state", String.valueOf(a.state()))
            .put("restarts", a.restarts());
      }
      d.put("restarts", restarts);
    }
  }

  private static void runs(ArrayNode out, List<RunStatus> runs) {
    for (RunStatus r : runs.subList(0, Math.min(runs.size(), MAX_RUNS))) {
      ObjectNode o = out.addObject().put("runId", r.runId()).put("pipeline", r.pipeline())
          .put("state", r.state().name()).put("coordinator", r.coordinator()).put("reruns", r.reruns())
          .put("createdAtMs", r.createdAtMs()).put("endedAtMs", r.endedAtMs()).put("error", r.error());
      ArrayNode steps = o.putArray("steps");
      for (StepStatus s : r.steps()) {
        steps.addObject().put("name", s.name()).put("kind", s.kind().name()).put("state", s.state().name())
            .put("node", s.nodeId()).put("attempts", s.attempts()).put("startedAtMs", s.startedAtMs())
            .put("endedAtMs", s.endedAtMs()).put("error", s.error());
      }
    }
  }

  private static void jobs(ArrayNode out, List<JobStatus> jobs) {
    for (JobStatus j : jobs.subList(0, Math.min(jobs.size(), MAX_JOBS))) {
      ObjectNode o = out.addObject().put("id", j.id()).put("name", j.name()).put("target", j.target())
          .put("state", j.state().name()).put("coordinator", j.coordinator()).put("total", j.total())
          .put("done", j.done()).put("failed", j.failed()).put("inFlight", j.inFlight())
          .put("rowsPerSecond", j.rowsPerSecond()).put("etaSeconds", j.etaSeconds())
          .put("createdAtMs", j.createdAtMs()).put("endedAtMs", j.endedAtMs()).put("error", j.error());
      o.set("resultsByNode", JSON.valueToTree(j.resultsByNode()));
    }
  }
}
