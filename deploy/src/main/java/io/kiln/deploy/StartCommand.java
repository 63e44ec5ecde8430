package io.kiln.deploy;

import io.kiln.runtime.ClusterDiscovery;
import io.kiln.runtime.ClusterOptions;
import io.kiln.runtime.KilnCluster;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import io.kiln.deploy.node.WarmupOptions;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code kiln start --head | --address HOST:PORT}: starts a cluster node in the background (log in
 * {@code .kiln/logs/<node>.log}) and returns once it has joined and serves; {@code --foreground} keeps it
 * in this process.
 */
@Command(name = "start", description = "Start a cluster node: --head starts a cluster, --address HOST:PORT joins one;"
    + " with --discovery k8s-dns:NAME or k8s-api:SERVICE the members are found in Kubernetes instead.")
final class StartCommand implements Callable<Integer> {

  static final class Role {
    @Option(names = "--head", required = true, description = "start a new cluster with this node as its head")
    boolean head;

    @Option(names = "--address", required = true, paramLabel = "HOST:PORT",
        description = "join the cluster that HOST:PORT (a member's cluster port) belongs to")
    String address;
  }

  private static final Path SETSID = Path.of("/usr/bin/setsid");

  @Spec
  CommandSpec spec;

  @ArgGroup(exclusive = true, multiplicity = "0..1")
  Role role; // required with --discovery static, refused with a Kubernetes discovery

  @Mixin
  NodeCommandOptions opts = new NodeCommandOptions();

  @Option(names = "--cluster-port", description = "membership port (default ${DEFAULT-VALUE})", defaultValue = "5701")
  int clusterPort;

  @Option(names = "--cluster-name", description = "cluster name (default ${DEFAULT-VALUE})",
      defaultValue = ClusterOptions.DEFAULT_CLUSTER_NAME)
  String clusterName;

  @Option(names = "--cluster-secret", description = "shared secret members must know (default: $KILN_CLUSTER_SECRET)")
  String secret;

  @Option(names = "--foreground", description = "run in this process instead of the background")
  boolean foreground;

  @Option(names = "--discovery", paramLabel = "static|k8s-dns:NAME[:PORT]|k8s-api:SERVICE[@NAMESPACE][:PORT]",
      defaultValue = "${env:KILN_DISCOVERY:-static}", description = "how members find each other: static (--head /"
      + " --address, the default), k8s-dns:NAME (every address a headless Service's DNS name resolves to, on the"
      + " cluster port or PORT) or k8s-api:SERVICE[@NAMESPACE] (the Service's endpoints from the Kubernetes API; needs"
      + " RBAC). Never multicast. Default: $KILN_DISCOVERY, else static")
  String discovery;

  @Option(names = "--min-cluster-size", paramLabel = "N", defaultValue = "${env:KILN_MIN_CLUSTER_SIZE:-1}",
      description = "split-brain protection: wait at start for N members, and refuse writes to the actor registry and"
      + " node table while fewer than N are present (default: $KILN_MIN_CLUSTER_SIZE, else 1 = off)")
  int minClusterSize;

  @Option(names = "--bus-port", defaultValue = "0", description = "event-bus port for calls between nodes (default:"
      + " a free one; fix it where a network policy must name it)")
  int busPort;

  @Option(names = "--failure-detect-ms", paramLabel = "MS", defaultValue = "${env:KILN_FAILURE_DETECT_MS:-2000}",
      description = "the bound on noticing a node whose event-bus connection went silent (a host gone, no reset "
      + "seen): calls in flight to it fail over after at most this long; a process that dies on a reachable host is"
      + " seen at once (default: $KILN_FAILURE_DETECT_MS, else ${DEFAULT-VALUE}; at least 200)")
  long failureDetectMs;

  @Option(names = "--cluster-tls-cert", paramLabel = "PEM", description = "mutual TLS on the event bus between "
      + "nodes: this node's certificate chain (default: $KILN_CLUSTER_TLS_CERT); with --cluster-tls-key and "
      + "--cluster-tls-ca, only members whose certificate that CA signed exchange actor calls")
  Path clusterTlsCert;

  @Option(names = "--cluster-tls-key", paramLabel = "PEM", description = "the private key of --cluster-tls-cert "
      + "(default: $KILN_CLUSTER_TLS_KEY)")
  Path clusterTlsKey;

  @Option(names = "--cluster-tls-ca", paramLabel = "PEM", description = "the CA certificate(s) that sign the "
      + "cluster's members (default: $KILN_CLUSTER_TLS_CA)")
  Path clusterTlsCa;

  @Option(names = "--apply", paramLabel = "FILE", description = "deployment YAML to apply once the node serves, as"
      + " kiln deploy would (idempotent: every node of a StatefulSet may apply the same file)")
  Path apply;

  @Option(names = "--start-timeout", description = "seconds to wait for the node (default ${DEFAULT-VALUE})",
      defaultValue = "180")
  int startTimeoutSeconds;

  @Override
  public Integer call() throws Exception {
    var node = opts.node();
    if (opts.nodeId == null) {
      opts.nodeId = node.nodeId(); // fixed now, so the background child and this process agree
    }
    cluster(); // refuse bad cluster options before anything starts
    if (apply != null) {
      StartupApply.read(apply); // and an invalid deployment file
    }
    opts.libTorch(); // and a libtorch without a matching JNI (the child checks again and applies it)
    opts.warmup(WarmupOptions.PRODUCTION_DURATION); // and a bad warm-up
    opts.drain(); // and a bad drain grace
    opts.tls(); // and unreadable TLS files
    opts.otelEndpoint(); // and a bad span endpoint
    if (foreground) {
      opts.configureLogging(opts.nodeId); // and a bad log format or level (the background child checks here)
    } else {
      opts.checkLogging();
    }
    if (startTimeoutSeconds < 1) {
      throw new CliException("--start-timeout must be at least 1 second, got " + startTimeoutSeconds);
    }
    for (LocalNodes.Entry e : LocalNodes.alive()) {
      if (e.nodeId().equals(opts.nodeId)) {
        throw new CliException("node " + opts.nodeId + " is already running here (pid " + e.pid() + "); stop it with "
            + "./kiln stop --node " + opts.nodeId + " or choose another --node-id");
      }
    }
    return foreground ? runHere() : runInBackground(opts.nodeId);
  }

  private boolean head() {
    return role != null && role.head;
  }

  ClusterOptions cluster() {
    String s = secret != null ? secret : System.getenv("KILN_CLUSTER_SECRET");
    ClusterDiscovery d = discovery();
    if (d.isKubernetes() && role != null) {
      throw new CliException((role.head ? "--head" : "--address") + " is for --discovery static; with --discovery "
          + d.spelling() + " the members are found, not named");
    }
    if (!d.isKubernetes() && role == null) {
      throw new CommandLine.ParameterException(spec.commandLine(), "Missing required argument (specify one of these):"
          + " (--head | --address=HOST:PORT), or --discovery k8s-dns:NAME | k8s-api:SERVICE");
    }
    if (d.isKubernetes() && clusterPort == 0 && d.memberPort() == 0) {
      throw new CliException("--discovery " + d.spelling() + " needs a fixed --cluster-port (every member listens on"
          + " the same one), not 0");
    }
    if (minClusterSize < 1) {
      throw new CliException("--min-cluster-size must be at least 1, got " + minClusterSize);
    }
    if (busPort < 0 || busPort > 65535) {
      throw new CliException("--bus-port must be 0..65535, got " + busPort);
    }
    if (failureDetectMs < ClusterOptions.MIN_BUS_FAILURE_DETECT.toMillis()) {
      throw new CliException("--failure-detect-ms must be at least " + ClusterOptions.MIN_BUS_FAILURE_DETECT.toMillis()
          + " (a busy event loop's late answer would read as a death), got " + failureDetectMs);
    }
    try {
      ClusterOptions c = d.isKubernetes() ? ClusterOptions.discovered(opts.host, clusterPort, d)
          : role.head ? ClusterOptions.head(opts.host, clusterPort)
          : ClusterOptions.join(opts.host, clusterPort, role.address);
      return c.withClusterName(clusterName).withSecret(s).withMinClusterSize(minClusterSize).withBusPort(busPort)
          .withBusTls(busTls()).withBusFailureDetect(java.time.Duration.ofMillis(failureDetectMs));
    } catch (IllegalArgumentException e) {
      throw new CliException(e.getMessage());
    }
  }

  private ClusterDiscovery discovery() {
    try {
      return ClusterDiscovery.parse(discovery == null ? "static" : discovery);
    } catch (IllegalArgumentException e) {
      throw new CliException("--discovery: " + e.getMessage());
    }
  }

  private int runHere() throws Exception {
    ClusterOptions cluster = cluster();
    var libTorch = opts.libTorch();
    if (libTorch != null) {
      spec.commandLine().getOut().println("kiln: PyTorch engine on " + libTorch.describe());
    }
    StartupApply file = apply == null ? null : StartupApply.read(apply);
    var tls = opts.tls();
    // The node warms the file's deployments too, once its pools of them are loaded, before it reports ready.
    var warmup = opts.warmup(WarmupOptions.PRODUCTION_DURATION)
        .withDeployments(file == null ? java.util.List.of() : file.deploymentNames());
    KilnNode node;
    try {
      node = KilnNode.start(new KilnNode.Options(opts.node(), cluster, opts.httpPort, opts.grpcPort, opts.token(),
          opts.requestTimeout(), opts.gpuSampling(), warmup, tls, opts.otelEndpoint(), opts.strictReadiness, opts.apiKey(),
          opts.grpcMaxMessageMb))
          .toCompletableFuture()
          .join();
    } catch (CompletionException e) {
      throw new CliException("could not start node " + opts.nodeId + ": " + UpCommand.rootMessage(e));
    }
    int port = KilnCluster.clusterPort(node.runtime());
    PrintWriter out = spec.commandLine().getOut();
    out.println("kiln: node " + opts.nodeId + (head() ? " (head)" : "") + " joined cluster '" + clusterName + "' at "
        + opts.host + ":" + port + "; HTTP " + (tls == null ? "http://" : "https://") + opts.host + ":" + node.httpPort()
        + ", gRPC " + opts.host + ":" + node.grpcPort() + "; dashboard " + (tls == null ? "http://" : "https://")
        + opts.host + ":" + node.httpPort() + "/dashboard");
    out.flush();
    node.warmup().thenAccept(r -> {
      if (r.ran()) {
        out.println("kiln: node " + opts.nodeId + (r.warmed() ? " warmed up (" : " is ready without a full warm-up (")
            + r.describe() + ")");
        out.flush();
      }
    });
    if (file != null && !file.applyOn(node, out, spec.commandLine().getErr())) {
      node.close();
      return 1;
    }
    NodeProcess.runUntilStopped(node, LocalNodes.Entry.current(opts.nodeId, opts.host, node.httpPort(), node.grpcPort(),
        port, head(), tls), opts.drain(), spec.commandLine().getErr());
    return 0;
  }

  private int runInBackground(String nodeId) throws IOException, InterruptedException {
    PrintWriter out = spec.commandLine().getOut();
    Files.createDirectories(LocalNodes.logs());
    Path log = LocalNodes.logs().resolve(nodeId + ".log");
    List<String> cmd = new ArrayList<>();
    // A session of its own, so that closing the terminal (SIGHUP to its session) does not stop the node.
    if (Files.isExecutable(SETSID)) {
      cmd.add(SETSID.toString());
    }
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(KilnCli.class.getName());
    cmd.add("start");
    cmd.addAll(forwardedArgs());
    cmd.add("--node-id");
    cmd.add(nodeId);
    cmd.add("--foreground");
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile())
        .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
    long end = System.nanoTime() + Duration.ofSeconds(startTimeoutSeconds).toNanos();
    while (System.nanoTime() < end) {
      for (LocalNodes.Entry e : LocalNodes.alive()) {
        if (e.nodeId().equals(nodeId)) {
          out.println("kiln: started node " + nodeId + (e.head() ? " (head)" : "") + " (pid " + e.pid()
              + "); HTTP " + e.httpAddress() + ", gRPC " + e.host() + ":" + e.grpcPort() + ", cluster "
              + e.host() + ":" + e.clusterPort());
          if (e.head()) {
            out.println("  join more nodes with: ./kiln start --address " + e.host() + ":" + e.clusterPort()
                + " --port <free port> --grpc-port <free port> --cluster-port <free port>");
          }
          out.println("  log: " + log);
          return 0;
        }
      }
      if (!p.isAlive()) {
        String reason = lastCliMessage(log);
        if (reason != null) {
          throw new CliException((reason.startsWith("could not start node ") ? reason
              : "node " + nodeId + " did not start: " + reason) + " (log: " + log + ")");
        }
        throw new CliException("node " + nodeId + " exited with " + p.exitValue() + "; last lines of " + log + ":\n"
            + tail(log, 20));
      }
      java.util.concurrent.locks.LockSupport.parkNanos(200_000_000L);
    }
    p.destroy();
    p.waitFor(30, TimeUnit.SECONDS);
    throw new CliException("node " + nodeId + " did not start within " + startTimeoutSeconds + " s; see " + log);
  }

  /** This invocation's options, minus the ones the background child gets explicitly. */
  /** Mutual TLS on the event bus: all three files, or none (null). */
  private io.kiln.runtime.BusTls busTls() {
    Path cert = clusterTlsCert != null ? clusterTlsCert : NodeCommandOptions.envPath("KILN_CLUSTER_TLS_CERT");
    Path key = clusterTlsKey != null ? clusterTlsKey : NodeCommandOptions.envPath("KILN_CLUSTER_TLS_KEY");
    Path ca = clusterTlsCa != null ? clusterTlsCa : NodeCommandOptions.envPath("KILN_CLUSTER_TLS_CA");
    int given = (cert != null ? 1 : 0) + (key != null ? 1 : 0) + (ca != null ? 1 : 0);
    if (given == 0) {
      return null;
    }
    if (given < 3) {
      throw new CliException("--cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca go together; missing: "
          + String.join(", ", java.util.stream.Stream.of(cert == null ? "--cluster-tls-cert" : null,
              key == null ? "--cluster-tls-key" : null, ca == null ? "--cluster-tls-ca" : null)
              .filter(java.util.Objects::nonNull).toList()));
    }
    try {
      return new io.kiln.runtime.BusTls(cert.toAbsolutePath(), key.toAbsolutePath(), ca.toAbsolutePath());
    } catch (IllegalArgumentException e) {
      throw new CliException("--cluster-tls-*: " + e.getMessage());
    }
  }

  private List<String> forwardedArgs() {
    List<String> out = new ArrayList<>();
    if (head()) {
      out.add("--head");
    } else if (role != null) {
      out.add("--address");
      out.add(role.address);
    }
    out.addAll(List.of("--discovery", discovery().spelling(), "--min-cluster-size", Integer.toString(minClusterSize),
        "--bus-port", Integer.toString(busPort), "--failure-detect-ms", Long.toString(failureDetectMs)));
    if (apply != null) {
      out.addAll(List.of("--apply", apply.toAbsolutePath().toString()));
    }
    out.addAll(List.of("--host", opts.host, "--port", Integer.toString(opts.httpPort), "--grpc-port",
        Integer.toString(opts.grpcPort), "--cluster-port", Integer.toString(clusterPort), "--cluster-name", clusterName,
        "--request-timeout-ms", Long.toString(opts.requestTimeoutMs), "--warmup-seconds",
        Double.toString(opts.warmupSeconds(WarmupOptions.PRODUCTION_DURATION)), "--warmup-requests", Long.toString(opts.warmupRequests),
        "--drain-grace", Double.toString(opts.drainGraceSeconds), "--log-format", opts.logFormat, "--log-level",
        opts.logLevel));
    if (opts.strictReadiness) {
      out.add("--strict-readiness");
    }
    out.addAll(List.of("--grpc-max-message-mb", Integer.toString(opts.grpcMaxMessageMb)));
    if (opts.otelEndpoint != null && !opts.otelEndpoint.isBlank()) {
      out.addAll(List.of("--otel-endpoint", opts.otelEndpoint));
    }
    out.addAll(List.of("--gpus", opts.gpus == null ? "auto" : opts.gpus, "--nvidia-smi",
        opts.nvidiaSmi == null ? "nvidia-smi" : opts.nvidiaSmi, "--gpu-sample-period",
        Integer.toString(opts.gpuSamplePeriodSeconds)));
    if (opts.libtorch != null) {
      out.addAll(List.of("--libtorch", opts.libtorch.toAbsolutePath().toString()));
    }
    if (opts.libtorchVersion != null) {
      out.addAll(List.of("--libtorch-version", opts.libtorchVersion));
    }
    if (opts.libtorchFlavor != null) {
      out.addAll(List.of("--libtorch-flavor", opts.libtorchFlavor));
    }
    if (opts.cpus != null) {
      out.addAll(List.of("--cpus", Double.toString(opts.cpus)));
    }
    if (opts.resources != null) {
      out.addAll(List.of("--resources", opts.resources));
    }
    if (!opts.labels.isEmpty()) {
      out.add("--labels");
      out.add(String.join(",", opts.labels.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue()).toList()));
    }
    if (opts.token != null) {
      out.addAll(List.of("--token", opts.token));
    }
    if (secret != null) {
      out.addAll(List.of("--cluster-secret", secret));
    }
    if (opts.tlsCert != null) {
      out.addAll(List.of("--tls-cert", opts.tlsCert.toAbsolutePath().toString()));
    }
    if (opts.tlsKey != null) {
      out.addAll(List.of("--tls-key", opts.tlsKey.toAbsolutePath().toString()));
    }
    for (var f : new Object[][] {{"--cluster-tls-cert", clusterTlsCert}, {"--cluster-tls-key", clusterTlsKey},
        {"--cluster-tls-ca", clusterTlsCa}}) {
      if (f[1] != null) {
        out.addAll(List.of((String) f[0], ((Path) f[1]).toAbsolutePath().toString()));
      }
    }
    return out;
  }

  /** The last line the node's own CLI printed as an error ({@code kiln: ...}), without the prefix. */
  private static String lastCliMessage(Path log) {
    try {
      List<String> all = Files.readAllLines(log);
      for (int i = all.size() - 1; i >= 0; i--) {
        if (all.get(i).startsWith("kiln: ") && !all.get(i).startsWith("kiln: node ")) {
          return all.get(i).substring("kiln: ".length());
        }
      }
    } catch (IOException ignored) {
      // no log: the caller falls back to the exit code
    }
    return null;
  }

  private static String tail(Path log, int lines) {
    try {
      List<String> all = Files.readAllLines(log);
      return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
    } catch (IOException e) {
      return "(no log)";
    }
  }
}
