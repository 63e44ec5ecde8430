package io.kiln.control;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kiln.control.impl.Answers;
import io.kiln.gateway.RequestBodies;
import io.kiln.pipelines.Applications;
import io.kiln.pipelines.PipelineSpec;
import io.kiln.pools.PoolManager;
import io.kiln.pools.PoolNames;
import io.kiln.runtime.ActorInfo;
import io.kiln.runtime.ActorState;
import io.kiln.runtime.BelowMinimumClusterSizeException;
import io.kiln.runtime.Futures;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.NodeView;
import io.kiln.runtime.WireCodec;
import io.kiln.serve.ApplyResult;
import io.kiln.serve.DeploymentSpec;
import io.kiln.serve.DeploymentStatus;
import io.kiln.serve.DeploymentValidationException;
import io.kiln.serve.ServeController;
import io.kiln.serve.SpecJson;
import io.vertx.core.Handler;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.nio.charset.StandardCharsets;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * The management REST API under {@code /api/v1/}, mounted on the gateway's HTTP server:
 * <ul>
 *   <li>{@code POST /api/v1/deployments[?dry_run=true|1&prune=true|1&source=PATH]} — body: deployment YAML (at most
 *       {@value #MAX_YAML_BYTES} bytes, 413 beyond), its deployments and pipelines applied together by one
 *       {@link Applications#apply}. 200 with the plan ({@code applied} false for a dry run, which changes
 *       nothing), and header {@value PipelineApi#PIPELINES_HEADER} naming the file's pipelines if it declares
 *       any; 400 with {@code problems} (file, line, column, path, message) of deployments and pipelines alike,
 *       and nothing applied. {@code source} is the file's path on the client: relative model paths resolve
 *       against it. With {@code prune}, stored deployments and pipelines absent from the file are deleted
 *       after it is stored (never internal {@code _…} pools, nor deployments the file's infer steps name), and
 *       {@code pruned} lists them (for a dry run: what would be deleted).</li>
 *   <li>{@code GET /api/v1/deployments} — desired deployments with their status.</li>
 *   <li>{@code GET /api/v1/deployments/{name}} — one of them; 404 if unknown.</li>
 *   <li>{@code DELETE /api/v1/deployments/{name}} — drain and remove; 404 if unknown.</li>
 *   <li>{@code GET /api/v1/status} — nodes, leader, deployments, named actors (a node's own warm-up pool left out).</li>
 * </ul>
 * With a token configured, every call needs {@code Authorization: Bearer <token>} (401 otherwise, compared
 * in constant time, checked before a body is read). Every error is JSON {@code {"error": "..."}}; a write refused
 * below the minimum cluster size is 503 with {@code Retry-After} ({@link Answers}).
 *
 * <p>Handlers never block: YAML parsing runs on a worker thread inside the controller; everything else reads
 * the node's mirrors of the cluster state.
 */
public final class ManagementApi {

  public static final int MAX_YAML_BYTES = 1024 * 1024;

  private static final ObjectMapper JSON = WireCodec.json();

  private final KilnRuntime runtime;
  private final ServeController serve;
  private final Applications applications;
  private final Handler<RoutingContext> authorize;

  /**
   * @param applications applies deployment files (the same {@code serve}, and this node's pipelines)
   * @param token required bearer token, or null/empty for none
   */
  public ManagementApi(KilnRuntime runtime, ServeController serve, Applications applications, String token) {
    this.runtime = runtime;
    this.serve = serve;
    this.applications = applications;
    this.authorize = Answers.authorize(token);
  }

  /** Mounts the API on {@code r} under {@code /api/v1/}, with its own authorization and error handling. */
  public void mount(Router r) {
    Router api = Router.router(runtime.vertx());
    api.route().handler(authorize);
    api.post("/deployments").handler(Answers.rawBody()).handler(RequestBodies.upTo(MAX_YAML_BYTES))
        .handler(this::apply);
    api.get("/deployments").handler(this::list);
    api.get("/deployments/:name").handler(this::one);
    api.delete("/deployments/:name").handler(this::delete);
    api.get("/status").handler(this::status);
    api.route().failureHandler(this::failure);
    r.route("/api/v1/*").subRouter(api);
  }

  private void failure(RoutingContext ctx) {
    int code = Answers.failureStatus(ctx);
    if (code == 413) {
      Answers.error(ctx, 413, "the deployment file exceeds the limit of " + MAX_YAML_BYTES + " bytes");
    } else {
      Answers.error(ctx, code,
          code == 500 && ctx.failure() != null ? "request failed: " + ctx.failure() : "request failed");
    }
  }

  private void apply(RoutingContext ctx) {
    String yaml = ctx.body().asString(StandardCharsets.UTF_8.name());
    if (yaml == null || yaml.isBlank()) {
      Answers.error(ctx, 400, "body must be a deployment YAML document");
      return;
    }
    String dry = ctx.request().getParam("dry_run");
    boolean dryRun = "true".equalsIgnoreCase(dry) || "1".equals(dry);
    String pruneParam = ctx.request().getParam("prune");
    boolean prune = "true".equalsIgnoreCase(pruneParam) || "1".equals(pruneParam);
    String source = ctx.request().getParam("source");
    Path sourcePath;
    try {
      sourcePath = source == null || source.isBlank() ? Path.of("request.yaml") : Path.of(source);
    } catch (InvalidPathException e) {
      Answers.error(ctx, 400, "source is not a valid path: " + e.getMessage());
      return;
    }
    applications.apply(yaml, sourcePath, dryRun, prune).whenComplete(Answers.guarded(ctx, (result, err) -> {
      if (err == null) {
        if (!result.pipelines().isEmpty()) {
          ctx.response().putHeader(PipelineApi.PIPELINES_HEADER,
              String.join(",", result.pipelines().stream().map(PipelineSpec::name).toList()));
        }
        ObjectNode body = applied(result.deployments());
        if (prune) {
          ObjectNode pruned = body.putObject("pruned");
          result.prunedDeployments().forEach(pruned.putArray("deployments")::add);
          result.prunedPipelines().forEach(pruned.putArray("pipelines")::add);
        }
        Answers.json(ctx, 200, body);
        return;
      }
      Throwable t = Futures.unwrap(err);
      if (t instanceof DeploymentValidationException v) {
        Answers.problems(ctx, "the deployment file", "nothing was applied", v.problems());
      } else if (t instanceof BelowMinimumClusterSizeException) {
        Answers.belowMinimum(ctx, t);
      } else if (t instanceof IllegalArgumentException) {
        Answers.error(ctx, 400, String.valueOf(t.getMessage()));
      } else {
        Answers.error(ctx, 500, "applying deployments failed: " + t);
      }
    }));
  }

  private static ObjectNode applied(ApplyResult result) {
    ObjectNode o = JSON.createObjectNode();
    o.put("applied", result.applied());
    ArrayNode names = o.putArray("deployments");
    result.deployments().forEach(d -> names.add(d.id()));
    o.set("plan", result.plan().toTree());
    o.put("planText", result.plan().toText());
    return o;
  }

  private void list(RoutingContext ctx) {
    ObjectNode o = JSON.createObjectNode();
    ArrayNode list = o.putArray("deployments");
    Map<String, DeploymentStatus> statuses = serve.statuses();
    serve.desired().forEach((name, spec) -> list.add(deployment(spec, statuses.get(name))));
    Answers.json(ctx, 200, o);
  }

  private void one(RoutingContext ctx) {
    String name = ctx.pathParam("name");
    DeploymentSpec spec = serve.desired().get(name);
    if (spec == null) {
      Answers.error(ctx, 404, "no deployment named " + name);
    } else {
      Answers.json(ctx, 200, deployment(spec, serve.statuses().get(name)));
    }
  }

  private static ObjectNode deployment(DeploymentSpec spec, DeploymentStatus status) {
    ObjectNode d = JSON.createObjectNode();
    d.set("spec", SpecJson.toTree(spec));
    d.set("status", JSON.valueToTree(status));
    return d;
  }

  private void delete(RoutingContext ctx) {
    String name = ctx.pathParam("name");
    serve.delete(name).whenComplete(Answers.guarded(ctx, (found, err) -> {
      if (Futures.unwrap(err) instanceof BelowMinimumClusterSizeException) {
        Answers.belowMinimum(ctx, Futures.unwrap(err));
      } else if (err != null) {
        Answers.error(ctx, 500, "deleting " + name + " failed: " + err);
      } else if (!found) {
        Answers.error(ctx, 404, "no deployment named " + name);
      } else {
        Answers.json(ctx, 200, JSON.createObjectNode().put("deleting", name));
      }
    }));
  }

  private void status(RoutingContext ctx) {
    runtime.namedActors().whenComplete(Answers.guarded(ctx, (actors, err) -> {
      ObjectNode o = JSON.createObjectNode();
      o.put("node", runtime.nodeId());
      List<String> members = runtime.members();
      o.put("leader", members.isEmpty() ? null : members.get(0));
      ArrayNode nodes = o.putArray("nodes");
      for (NodeView n : runtime.clusterView().nodes()) {
        ObjectNode node = nodes.addObject().put("id", n.nodeId()).put("address", n.address()).put("alive", n.alive());
        node.set("total", JSON.valueToTree(n.total().asMap()));
        node.set("available", JSON.valueToTree(n.available().asMap()));
        node.set("labels", JSON.valueToTree(n.labels()));
      }
      ArrayNode deployments = o.putArray("deployments");
      Map<String, DeploymentStatus> statuses = serve.statuses();
      for (Map.Entry<String, DeploymentSpec> e : serve.desired().entrySet()) {
        DeploymentStatus s = statuses.get(e.getKey());
        deployments.add(s != null ? JSON.valueToTree(s) : JSON.createObjectNode().put("name", e.getKey())
            .put("version", e.getValue().version()).put("phase", "PENDING"));
      }
      ArrayNode list = o.putArray("actors");
      if (actors != null) {
        // A node's own pool (its start-up warm-up) is no user's business and gone once the node is ready.
        actors.stream().filter(a -> !nodeLocalPool(a)).sorted(Comparator.comparing(ActorInfo::displayName))
            .forEach(a -> list.add(JSON.valueToTree(a)));
      }
      // The named actors living (not dead) on the answering node, as its own table holds them (the registry above is the
      // cluster's claim): after a partition heals, each name's one owner shows here on exactly one node.
      ArrayNode local = o.putArray("localActors");
      runtime.localActors().stream()
          .filter(a -> a.name() != null && a.state() != ActorState.DEAD && !nodeLocalPool(a))
          .sorted(Comparator.comparing(ActorInfo::displayName)).forEach(a -> local.add(JSON.valueToTree(a)));
      Answers.json(ctx, 200, o);
    }));
  }

  private static boolean nodeLocalPool(ActorInfo a) {
    return PoolManager.NAMESPACE.equals(a.namespace()) && a.name() != null
        && PoolNames.parse(a.name()).map(PoolNames.Parsed::isNodeLocal).orElse(false);
  }
}
