package io.kiln.deploy;

import io.kiln.serve.DeploymentStatus;
import io.kiln.serve.DeploymentValidationException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletionException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code kiln up}: one process, one node, the quickstart deployment, the gateway on :8000 — and a curl
 * line that works. Runs until Ctrl-C (or {@code kiln stop}). A deployment the node could never host (more resources
 * than its total, a GPU it lacks, labels it does not carry) ends it at once with exit code 1: no other node joins a
 * {@code kiln up} node, so there is nothing to wait for.
 */
@Command(name = "up", description = "Run a single-node Kiln with the quickstart deployment (Ctrl-C to stop).")
final class UpCommand implements Callable<Integer> {

  @Spec
  CommandSpec spec;

  @Mixin
  NodeCommandOptions opts = new NodeCommandOptions();

  @Option(names = "--file", description = "deployment YAML to serve (default: deploy/examples/quickstart.yaml)")
  Path file;

  @Option(names = "--ready-timeout", description = "seconds to wait for the deployment to be ready "
      + "(default ${DEFAULT-VALUE})", defaultValue = "300")
  int readyTimeoutSeconds;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    Path yaml = (file != null ? file : LocalNodes.home().resolve("deploy/examples/quickstart.yaml")).toAbsolutePath();
    if (!Files.isRegularFile(yaml)) {
      throw new CliException("no such deployment file: " + yaml);
    }
    var libTorch = opts.libTorch();
    if (libTorch != null) {
      out.println("kiln: PyTorch engine on " + libTorch.describe());
    }
    var drain = opts.drain();
    // The node warms the file's deployments too, once its pools of them are loaded, before it reports ready.
    java.util.List<String> names;
    try {
      names = new io.kiln.serve.DeploymentLoader().load(yaml).deployments().stream().map(d -> d.name()).toList();
    } catch (io.kiln.serve.DeploymentValidationException v) {
      names = java.util.List.of(); // the apply below reports it, as ever
    }
    var warmup = opts.warmup(io.kiln.deploy.node.WarmupOptions.DEFAULT_DURATION).withDeployments(names);
    var tls = opts.tls();
    String scheme = tls == null ? "http://" : "https://";
    var nodeOptions = opts.node();
    opts.configureLogging(nodeOptions.nodeId());
    KilnNode node;
    try {
      node = KilnNode.start(new KilnNode.Options(nodeOptions, null, opts.httpPort, opts.grpcPort, opts.token(),
          opts.requestTimeout(), opts.gpuSampling(), warmup, tls, opts.otelEndpoint(), opts.strictReadiness, opts.apiKey(),
          opts.grpcMaxMessageMb))
          .toCompletableFuture()
          .join();
    } catch (CompletionException e) {
      throw new CliException("could not start the node: " + rootMessage(e));
    }
    String nodeId = node.runtime().nodeId();
    out.println("kiln: node " + nodeId + " up; HTTP " + scheme + opts.host + ":" + node.httpPort() + ", gRPC "
        + opts.host + ":" + node.grpcPort() + "; dashboard " + scheme + opts.host + ":" + node.httpPort() + "/dashboard");
    try {
      // The one apply operation kiln deploy uses: the file's pipelines are applied with its deployments.
      var applied = new io.kiln.pipelines.Applications(node.runtime(), node.serve(), node.pipelines())
          .apply(Files.readString(yaml), yaml, false).toCompletableFuture().join();
      out.print(applied.deployments().plan().toText());
      if (!applied.pipelines().isEmpty()) {
        out.println("kiln: pipelines " + applied.pipelines().stream().map(p -> p.name()).toList() + " applied");
      }
      var deployments = applied.deployments().deployments();
      String name = deployments.get(0).name();
      DeploymentStatus ready = null;
      for (var d : deployments) {
        DeploymentStatus s = awaitReady(node, d.name(), Duration.ofSeconds(readyTimeoutSeconds), out);
        ready = d.name().equals(name) ? s : ready;
      }
      // The gateway reports ready only once its start-up warm-up is over: wait for it, so "Try it" works at once.
      var warmed = node.warmup().toCompletableFuture().join();
      if (warmed.ran()) {
        out.println("kiln: " + (warmed.warmed() ? "warmed up the serving path (" : "serving without a full warm-up (")
            + warmed.describe() + ")");
      }
      out.println("kiln: deployment " + name + " version " + ready.servingVersion() + " is ready ("
          + ready.message() + ")");
      printTry(name, scheme, tls, node.httpPort(), out);
    } catch (CompletionException e) {
      if (e.getCause() instanceof DeploymentValidationException v) {
        RefusedApply.lines("kiln: " + yaml, v.problems(), "this node (kiln up runs a single node, which no other"
            + " node joins)").forEach(err::println);
      } else {
        err.println("kiln: deploying " + yaml + " failed: " + rootMessage(e));
      }
      node.close();
      return 1;
    }
    NodeProcess.runUntilStopped(node, LocalNodes.Entry.current(nodeId, opts.host, node.httpPort(), node.grpcPort(), 0,
        true, tls), drain, err);
    return 0;
  }

  private void printTry(String name, String scheme, io.kiln.gateway.TlsFiles tls, int port, PrintWriter out) {
    String curl = "  curl -s " + (tls == null ? "" : "--cacert " + tls.certChain() + " ") + scheme;
    Path request = LocalNodes.home().resolve("deploy/examples/mlp-request.json");
    out.println();
    out.println("Try it:");
    if (name.equals("mlp") && Files.isRegularFile(request)) {
      out.println(curl + opts.host + ":" + port + "/v2/models/mlp/infer"
          + " -H 'Content-Type: application/json' -d @" + request);
    } else {
      out.println(curl + opts.host + ":" + port + "/v2/models/" + name);
    }
    out.println("  ./kiln status");
    out.println("Stop with Ctrl-C or ./kiln stop.");
  }

  static DeploymentStatus awaitReady(KilnNode node, String name, Duration timeout, PrintWriter out)
      throws InterruptedException {
    long end = System.nanoTime() + timeout.toNanos();
    String last = "";
    while (System.nanoTime() < end) {
      DeploymentStatus s = node.serve().statuses().get(name);
      if (s != null) {
        if (s.phase() == DeploymentStatus.Phase.READY) {
          return s;
        }
        if (s.phase() == DeploymentStatus.Phase.FAILED) {
          throw new CompletionException(new CliException(name + " " + s.phase() + ": " + s.message()));
        }
        if (s.phase() == DeploymentStatus.Phase.UNSCHEDULABLE) {
          // No node can join kiln up's one node, so what its status waits for never comes (pool.wait_for_capacity).
          throw new CompletionException(new CliException(name + " can never run here, as kiln up runs a single node"
              + " which no other node joins: " + s.phase() + ": " + s.message()));
        }
        String line = s.phase() + ": " + s.message();
        if (!line.equals(last)) {
          out.println("kiln: " + name + " " + line);
          last = line;
        }
      }
      java.util.concurrent.locks.LockSupport.parkNanos(200_000_000L);
    }
    throw new CompletionException(new CliException(name + " was not ready within " + timeout.toSeconds() + " s"));
  }

  static String rootMessage(Throwable t) {
    while (t.getCause() != null && t.getCause() != t) {
      t = t.getCause();
    }
    return t.getMessage() != null ? t.getMessage() : t.toString();
  }
}
