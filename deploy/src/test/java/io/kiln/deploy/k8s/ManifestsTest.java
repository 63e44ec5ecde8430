package io.kiln.deploy.k8s;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceAccount;
import io.fabric8.kubernetes.api.model.ServicePort;
import io.fabric8.kubernetes.api.model.apps.StatefulSet;
import io.fabric8.kubernetes.api.model.policy.v1.PodDisruptionBudget;
import io.fabric8.kubernetes.api.model.rbac.PolicyRule;
import io.fabric8.kubernetes.api.model.rbac.Role;
import io.fabric8.kubernetes.api.model.rbac.RoleBinding;
import io.kiln.deploy.KilnCommands;
import io.kiln.pipelines.PipelineFile;
import io.kiln.pipelines.PipelineLoader;
import io.kiln.runtime.ClusterDiscovery;
import io.kiln.runtime.ClusterOptions;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import io.kiln.serve.DeploymentLoader;
import io.kiln.serve.DeploymentSpec;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The manifests of {@code deploy/k8s}, read into fabric8's typed Kubernetes model with unknown fields failing
 * ({@link StrictManifests}), and what must hold between them: ports agree between the StatefulSet's container,
 * its arguments, its probes and both Services; the discovery flag names the headless Service's DNS name (or, in
 * the API variant, its name, with RBAC that lets the pod read its endpoints); the GPU overlay requests
 * {@code nvidia.com/gpu} and passes {@code --gpus auto}; the ConfigMap's deployment file is valid for Kiln's own
 * loader, its model folders are where the image puts them, and the pod mounts it where {@code --apply} reads;
 * the container's arguments are accepted by {@code kiln start} itself; the image runs the {@code kiln} script's
 * JVM flags.
 *
 * <p>Overlays: the test reads {@code deploy/k8s/rendered/<overlay>.yaml}, the overlays as kustomize renders them
 * ({@code deploy/k8s/render.sh}); where {@code kubectl} is installed (its built-in kustomize), it also renders
 * each overlay afresh and fails if the committed file differs, so the two cannot drift. Without kubectl that
 * one check is skipped, the rest runs.
 */
@Tag("slow")
class ManifestsTest {

  static final Path K8S = repositoryRoot().resolve("deploy/k8s");
  static final List<String> OVERLAYS = List.of("cpu", "gpu", "api-discovery");
  /** Where the image puts the repository's files (deploy/k8s/Dockerfile): {@code -Dkiln.home=/opt/kiln}. */
  static final String IMAGE_HOME = "/opt/kiln/";

  static Path repositoryRoot() {
    for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
      if (Files.isDirectory(p.resolve("deploy/k8s")) && Files.isDirectory(p.resolve("models/mlp"))) {
        return p;
      }
    }
    throw new IllegalStateException("no deploy/k8s above " + Path.of("").toAbsolutePath());
  }

  /** One rendered overlay, typed. */
  record Rendered(String overlay, List<HasMetadata> objects) {

    <T extends HasMetadata> List<T> all(Class<T> type) {
      return objects.stream().filter(type::isInstance).map(type::cast).toList();
    }

    <T extends HasMetadata> T one(Class<T> type) {
      assertThat(all(type)).as(overlay + ": one " + type.getSimpleName()).hasSize(1);
      return all(type).get(0);
    }

    Service service(String name) {
      return all(Service.class).stream().filter(s -> s.getMetadata().getName().equals(name)).findFirst()
          .orElseThrow(() -> new AssertionError(overlay + ": no Service " + name));
    }

    StatefulSet statefulSet() {
      return one(StatefulSet.class);
    }

    PodSpec pod() {
      return statefulSet().getSpec().getTemplate().getSpec();
    }

    Container kiln() {
      return pod().getContainers().stream().filter(c -> c.getName().equals("kiln")).findFirst().orElseThrow();
    }

    String namespace() {
      return statefulSet().getMetadata().getNamespace();
    }
  }

  static Rendered rendered(String overlay) throws IOException {
    return new Rendered(overlay, StrictManifests.read(K8S.resolve("rendered/" + overlay + ".yaml")));
  }

  /**
   * The container's arguments as the kubelet passes them: {@code $(VAR)} replaced by the container's env (its own
   * references expanded in order), downward-API fields by the values a pod would get.
   */
  static List<String> expandedArgs(Rendered r, Map<String, String> podFields) {
    Map<String, String> env = new HashMap<>();
    for (EnvVar e : r.kiln().getEnv()) {
      String v;
      if (e.getValue() != null) {
        v = expand(e.getValue(), env);
      } else if (e.getValueFrom().getFieldRef() != null) {
        v = podFields.get(e.getValueFrom().getFieldRef().getFieldPath());
      } else if (e.getValueFrom().getResourceFieldRef() != null) {
        Quantity q = r.kiln().getResources().getRequests().get(e.getValueFrom().getResourceFieldRef().getResource()
            .replace("requests.", ""));
        v = Long.toString((long) Math.ceil(q.getNumericalAmount().doubleValue()));
      } else {
        v = "<secret " + e.getValueFrom().getSecretKeyRef().getKey() + ">";
      }
      env.put(e.getName(), v);
    }
    return r.kiln().getArgs().stream().map(a -> expand(a, env)).toList();
  }

  private static String expand(String s, Map<String, String> env) {
    Matcher m = Pattern.compile("\\$\\(([A-Za-z_][A-Za-z0-9_]*)\\)").matcher(s);
    StringBuilder out = new StringBuilder();
    while (m.find()) {
      m.appendReplacement(out, Matcher.quoteReplacement(env.getOrDefault(m.group(1), m.group())));
    }
    m.appendTail(out);
    return out.toString();
  }

  static Map<String, String> podFields(Rendered r) {
    return Map.of("status.podIP", "10.244.1.7", "metadata.name", "kiln-0", "metadata.namespace", r.namespace(),
        "spec.nodeName", "worker-3");
  }

  static String flag(List<String> args, String name) {
    return args.stream().filter(a -> a.startsWith(name + "=")).map(a -> a.substring(name.length() + 1)).findFirst()
        .orElseThrow(() -> new AssertionError("no " + name + " in " + args));
  }

  static int containerPort(Container c, String name) {
    return c.getPorts().stream().filter(p -> name.equals(p.getName())).map(ContainerPort::getContainerPort)
        .findFirst().orElseThrow(() -> new AssertionError("no container port named " + name));
  }

  /** A Service or probe port: a number, or the name of a container port. */
  static int resolve(IntOrString port, Container c) {
    return port.getIntVal() != null ? port.getIntVal() : containerPort(c, port.getStrVal());
  }

  @Test
  void everyManifestAndPatchIsTypedWithNoUnknownField() throws IOException {
    List<Path> files;
    try (Stream<Path> s = Files.walk(K8S)) {
      files = s.filter(p -> p.toString().endsWith(".yaml")).filter(p -> !p.getFileName().toString()
          .equals("kustomization.yaml")).filter(p -> !p.getFileName().toString().startsWith("app")).sorted().toList();
    }
    assertThat(files).extracting(p -> K8S.relativize(p).toString()).contains("base/statefulset.yaml",
        "base/service-headless.yaml", "base/service-gateway.yaml", "base/poddisruptionbudget.yaml",
        "base/namespace.yaml", "overlays/gpu/statefulset-gpu.yaml", "overlays/api-discovery/rbac.yaml",
        "rendered/cpu.yaml", "rendered/gpu.yaml", "rendered/api-discovery.yaml", "security/networkpolicy.yaml",
        "monitoring/podmonitor.yaml", "monitoring/prometheusrule.yaml", "monitoring/hpa.yaml");
    for (Path f : files) {
      assertThat(StrictManifests.read(f)).as(f.toString()).isNotEmpty();
    }
  }

  @Test
  void theNetworkPolicyLetsOnlyKilnPodsReachTheClusterAndBusPortsAndNamesRealPorts() throws IOException {
    var policy = (io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy) StrictManifests
        .read(K8S.resolve("security/networkpolicy.yaml")).get(0);
    Rendered r = rendered("cpu");
    Map<String, String> podLabels = r.statefulSet().getSpec().getTemplate().getMetadata().getLabels();
    assertThat(podLabels).containsAllEntriesOf(policy.getSpec().getPodSelector().getMatchLabels());
    java.util.Set<String> named = new java.util.HashSet<>();
    r.kiln().getPorts().forEach(p -> named.add(p.getName()));
    Map<String, Map<String, String>> fromByPort = new java.util.HashMap<>();
    for (var rule : policy.getSpec().getIngress()) {
      assertThat(rule.getFrom()).singleElement().satisfies(peer -> assertThat(peer.getNamespaceSelector()).isNull());
      for (var port : rule.getPorts()) {
        assertThat(named).as("the policy names a port the pod declares").contains(port.getPort().getStrVal());
        fromByPort.put(port.getPort().getStrVal(), rule.getFrom().get(0).getPodSelector().getMatchLabels());
      }
    }
    assertThat(fromByPort).containsOnlyKeys("http", "grpc", "cluster", "bus");
    assertThat(fromByPort.get("cluster")).isEqualTo(policy.getSpec().getPodSelector().getMatchLabels());
    assertThat(fromByPort.get("bus")).isEqualTo(policy.getSpec().getPodSelector().getMatchLabels());
  }

  @Test
  void theStrictReaderRefusesAMisspelledField() {
    String yaml = """
        apiVersion: v1
        kind: Service
        metadata: {name: kiln-headless}
        spec:
          clusterIP: None
          publishNotReadyAdresses: true
          ports: [{name: cluster, port: 5701, targetPot: cluster}]
        """;
    assertThatThrownBy(() -> StrictManifests.read(yaml, "typo.yaml"))
        .hasMessageContaining("typo.yaml document 1 (v1/Service): unknown field(s)")
        .hasMessageContaining("v1/Service.spec.publishNotReadyAdresses")
        .hasMessageContaining("v1/Service.spec.ports[0].targetPot");
    assertThatThrownBy(() -> StrictManifests.read("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n", "d"))
        .hasMessageContaining("unexpected kind apps/v1/Deployment");
  }

  @ParameterizedTest
  @ValueSource(strings = {"cpu", "gpu", "api-discovery"})
  void portsAgreeBetweenTheStatefulSetItsArgumentsProbesAndServices(String overlay) throws IOException {
    Rendered r = rendered(overlay);
    Container c = r.kiln();
    List<String> args = expandedArgs(r, podFields(r));
    assertThat(Integer.parseInt(flag(args, "--port"))).isEqualTo(containerPort(c, "http")).isEqualTo(8000);
    assertThat(Integer.parseInt(flag(args, "--grpc-port"))).isEqualTo(containerPort(c, "grpc")).isEqualTo(8001);
    assertThat(Integer.parseInt(flag(args, "--cluster-port"))).isEqualTo(containerPort(c, "cluster")).isEqualTo(5701);
    assertThat(Integer.parseInt(flag(args, "--bus-port"))).isEqualTo(containerPort(c, "bus")).isEqualTo(5702);
    assertThat(flag(args, "--host")).as("the pod IP from the downward API").isEqualTo("10.244.1.7");

    Service gateway = r.service("kiln");
    assertThat(gateway.getSpec().getType()).isEqualTo("ClusterIP");
    Map<String, ServicePort> gw = new HashMap<>();
    gateway.getSpec().getPorts().forEach(p -> gw.put(p.getName(), p));
    assertThat(gw).containsOnlyKeys("http", "grpc");
    assertThat(resolve(gw.get("http").getTargetPort(), c)).isEqualTo(8000);
    assertThat(gw.get("http").getPort()).isEqualTo(8000);
    assertThat(resolve(gw.get("grpc").getTargetPort(), c)).isEqualTo(8001);
    assertThat(gw.get("grpc").getPort()).isEqualTo(8001);
    assertThat(gw.get("grpc").getAppProtocol()).isEqualTo("grpc");

    Service headless = r.service("kiln-headless");
    for (ServicePort p : headless.getSpec().getPorts()) {
      assertThat(resolve(p.getTargetPort(), c)).as(p.getName()).isEqualTo(p.getPort())
          .isEqualTo(containerPort(c, p.getName()));
    }
    assertThat(headless.getSpec().getPorts()).extracting(ServicePort::getName).containsExactlyInAnyOrder("cluster", "bus");

    assertThat(c.getStartupProbe().getHttpGet().getPath()).isEqualTo("/v2/health/live");
    assertThat(c.getLivenessProbe().getHttpGet().getPath()).isEqualTo("/v2/health/live");
    assertThat(c.getReadinessProbe().getHttpGet().getPath()).isEqualTo("/v2/health/ready");
    for (var probe : List.of(c.getStartupProbe(), c.getLivenessProbe(), c.getReadinessProbe())) {
      assertThat(resolve(probe.getHttpGet().getPort(), c)).isEqualTo(8000);
    }
    Map<String, String> annotations = r.statefulSet().getSpec().getTemplate().getMetadata().getAnnotations();
    assertThat(Integer.parseInt(annotations.get("prometheus.io/port"))).isEqualTo(containerPort(c, "http"));
    assertThat(annotations).containsEntry("prometheus.io/path", "/metrics");
  }

  @ParameterizedTest
  @ValueSource(strings = {"cpu", "gpu", "api-discovery"})
  void servicesAndTheBudgetSelectThePodsAndTheHeadlessServiceFindsThemUnready(String overlay) throws IOException {
    Rendered r = rendered(overlay);
    StatefulSet sts = r.statefulSet();
    Map<String, String> podLabels = sts.getSpec().getTemplate().getMetadata().getLabels();
    assertThat(podLabels).containsAllEntriesOf(sts.getSpec().getSelector().getMatchLabels());
    for (Service s : r.all(Service.class)) {
      assertThat(podLabels).as(s.getMetadata().getName()).containsAllEntriesOf(s.getSpec().getSelector());
      assertThat(s.getMetadata().getNamespace()).isEqualTo(r.namespace());
    }
    Service headless = r.service("kiln-headless");
    assertThat(headless.getSpec().getClusterIP()).isEqualTo("None");
    assertThat(headless.getSpec().getPublishNotReadyAddresses()).isTrue();
    assertThat(sts.getSpec().getServiceName()).isEqualTo("kiln-headless");
    assertThat(sts.getSpec().getPodManagementPolicy()).as("peers start together (min cluster size)").isEqualTo("Parallel");

    PodDisruptionBudget pdb = r.one(PodDisruptionBudget.class);
    assertThat(podLabels).containsAllEntriesOf(pdb.getSpec().getSelector().getMatchLabels());
    assertThat(pdb.getSpec().getMaxUnavailable().getIntVal()).isEqualTo(1);
    int minClusterSize = Integer.parseInt(flag(expandedArgs(r, podFields(r)), "--min-cluster-size"));
    assertThat(sts.getSpec().getReplicas() - pdb.getSpec().getMaxUnavailable().getIntVal())
        .as("a voluntary disruption keeps the minimum cluster size").isGreaterThanOrEqualTo(minClusterSize);
    assertThat(minClusterSize).as("a majority or off").isIn(1, sts.getSpec().getReplicas() / 2 + 1);
  }

  @Test
  void dnsDiscoveryNamesTheHeadlessServicesDnsNameAndNeedsNoApiAccess() throws IOException {
    for (String overlay : List.of("cpu", "gpu")) {
      Rendered r = rendered(overlay);
      String discovery = flag(expandedArgs(r, podFields(r)), "--discovery");
      assertThat(discovery).isEqualTo("k8s-dns:" + r.service("kiln-headless").getMetadata().getName() + "."
          + r.namespace() + ".svc.cluster.local");
      ClusterDiscovery d = ClusterDiscovery.parse(discovery);
      assertThat(d.mode()).isEqualTo(ClusterDiscovery.Mode.KUBERNETES_DNS);
      assertThat(d.serviceDns()).isEqualTo("kiln-headless.kiln.svc.cluster.local");
      assertThat(r.pod().getAutomountServiceAccountToken()).isFalse();
      assertThat(r.all(Role.class)).isEmpty();
      assertThat(r.all(RoleBinding.class)).isEmpty();
      assertThat(r.all(ServiceAccount.class)).isEmpty();
    }
  }

  @Test
  void apiDiscoveryNamesTheServiceAndMayReadItsEndpointsAndPods() throws IOException {
    Rendered r = rendered("api-discovery");
    ClusterDiscovery d = ClusterDiscovery.parse(flag(expandedArgs(r, podFields(r)), "--discovery"));
    assertThat(d.mode()).isEqualTo(ClusterDiscovery.Mode.KUBERNETES_API);
    assertThat(d.serviceName()).isEqualTo(r.service("kiln-headless").getMetadata().getName());
    assertThat(d.namespace()).as("the pod's own").isNull();

    ServiceAccount sa = r.one(ServiceAccount.class);
    assertThat(r.pod().getServiceAccountName()).isEqualTo(sa.getMetadata().getName());
    assertThat(r.pod().getAutomountServiceAccountToken()).isTrue();
    Role role = r.one(Role.class);
    RoleBinding binding = r.one(RoleBinding.class);
    assertThat(binding.getRoleRef().getKind()).isEqualTo("Role");
    assertThat(binding.getRoleRef().getName()).isEqualTo(role.getMetadata().getName());
    assertThat(binding.getSubjects()).singleElement().satisfies(s -> {
      assertThat(s.getKind()).isEqualTo("ServiceAccount");
      assertThat(s.getName()).isEqualTo(sa.getMetadata().getName());
      assertThat(s.getNamespace()).isEqualTo(r.namespace());
    });
    for (String resource : List.of("endpoints", "pods")) {
      assertThat(role.getRules()).as(resource).anySatisfy(rule -> {
        assertThat(rule.getApiGroups()).contains("");
        assertThat(rule.getResources()).contains(resource);
        assertThat(rule.getVerbs()).containsExactlyInAnyOrder("get", "list", "watch");
      });
    }
    assertThat(role.getRules()).anySatisfy(rule -> {
      assertThat(rule.getApiGroups()).contains("discovery.k8s.io");
      assertThat(rule.getResources()).contains("endpointslices");
    });
    assertThat(role.getRules()).flatExtracting(PolicyRule::getVerbs).as("read-only")
        .containsOnly("get", "list", "watch");
    assertThat(role.getMetadata().getNamespace()).isEqualTo(r.namespace());
  }

  @Test
  void theGpuOverlayRequestsAGpuAndPassesGpusAuto() throws IOException {
    Rendered gpu = rendered("gpu");
    Container c = gpu.kiln();
    assertThat(c.getResources().getLimits()).containsEntry("nvidia.com/gpu", new Quantity("1"));
    assertThat(c.getResources().getRequests()).containsEntry("nvidia.com/gpu", new Quantity("1"));
    List<String> args = expandedArgs(gpu, podFields(gpu));
    assertThat(flag(args, "--gpus")).isEqualTo("auto");
    assertThat(gpu.pod().getTolerations()).anySatisfy(t -> assertThat(t.getKey()).isEqualTo("nvidia.com/gpu"));
    assertThat(c.getImage()).isEqualTo("kiln:0.1.0-cu124");
    DeploymentSpec mlp = deployments(gpu).get(0);
    assertThat(mlp.pool().workerResources().get(Resources.GPU)).isEqualTo(1.0);

    Rendered cpu = rendered("cpu");
    assertThat(flag(expandedArgs(cpu, podFields(cpu)), "--gpus")).isEqualTo("0");
    assertThat(cpu.kiln().getResources().getLimits()).doesNotContainKey("nvidia.com/gpu");
    assertThat(cpu.kiln().getImage()).isEqualTo("kiln:0.1.0");
    assertThat(deployments(cpu).get(0).pool().workerResources().get(Resources.GPU)).isZero();
    // The node advertises the CPUs the pod requested, which the workers fit in.
    assertThat(Double.parseDouble(flag(expandedArgs(cpu, podFields(cpu)), "--cpus")))
        .isGreaterThanOrEqualTo(deployments(cpu).get(0).pool().workerResources().get(Resources.CPU) * 2);
  }

  /** The ConfigMap's deployment file, read by Kiln's own loader with the image's paths made this checkout's. */
  static List<DeploymentSpec> deployments(Rendered r) {
    ConfigMap app = r.one(ConfigMap.class);
    String yaml = app.getData().get("app.yaml");
    assertThat(yaml).as(r.overlay() + ": the ConfigMap holds app.yaml").isNotNull();
    assertThat(yaml).contains("uri: " + IMAGE_HOME + "models/");
    String here = yaml.replace(IMAGE_HOME, repositoryRoot() + "/");
    PipelineFile file = new PipelineLoader(PipelineLoader.Options.DEFAULT.withDeployments(DeploymentLoader.Options.DEFAULT))
        .load(here, repositoryRoot().resolve("deploy/k8s/app.yaml"), Set.of());
    return file.deployments();
  }

  @ParameterizedTest
  @ValueSource(strings = {"cpu", "gpu", "api-discovery"})
  void theDeploymentFileIsValidForKilnAndMountedWhereApplyReadsIt(String overlay) throws IOException {
    Rendered r = rendered(overlay);
    List<DeploymentSpec> specs = deployments(r);
    assertThat(specs).extracting(DeploymentSpec::name).containsExactly("mlp");
    assertThat(String.valueOf(specs.get(0).model().uri())).isEqualTo(repositoryRoot().resolve("models/mlp").toString());

    String apply = flag(expandedArgs(r, podFields(r)), "--apply");
    var mount = r.kiln().getVolumeMounts().stream().filter(m -> apply.startsWith(m.getMountPath() + "/"))
        .findFirst().orElseThrow(() -> new AssertionError("no volume mounted where --apply=" + apply + " reads"));
    var volume = r.pod().getVolumes().stream().filter(v -> v.getName().equals(mount.getName())).findFirst().orElseThrow();
    assertThat(volume.getConfigMap().getName()).isEqualTo(r.one(ConfigMap.class).getMetadata().getName());
    assertThat(apply.substring(mount.getMountPath().length() + 1)).isIn(r.one(ConfigMap.class).getData().keySet());
    assertThat(mount.getReadOnly()).isTrue();
  }

  @ParameterizedTest
  @ValueSource(strings = {"cpu", "gpu", "api-discovery"})
  void kilnStartAcceptsTheContainersArgumentsAndTheyMakeTheIntendedCluster(String overlay) throws IOException {
    Rendered r = rendered(overlay);
    List<String> args = expandedArgs(r, podFields(r));
    assertThat(args.get(0)).isEqualTo("start");
    assertThat(args).contains("--foreground");

    KilnCommands.Start start = KilnCommands.parseStart(args.subList(1, args.size()));
    ClusterOptions cluster = start.cluster();
    assertThat(cluster.host()).isEqualTo("10.244.1.7");
    assertThat(cluster.port()).isEqualTo(5701);
    assertThat(cluster.busPort()).isEqualTo(5702);
    assertThat(cluster.members()).isEmpty();
    assertThat(cluster.discovery().isKubernetes()).isTrue();
    assertThat(cluster.clusterName()).isEqualTo("kiln");
    NodeOptions node = start.node(Map.of("HOSTNAME", "kiln-0", "KUBERNETES_SERVICE_HOST", "10.96.0.1"));
    assertThat(node.nodeId()).as("the pod's name").isEqualTo("kiln-0");
    assertThat(node.labels()).containsEntry("k8s_node", "worker-3").containsEntry("k8s_pod", "kiln-0");

    // The secrets come from the Secret, never from the manifest.
    Map<String, EnvVar> env = new HashMap<>();
    r.kiln().getEnv().forEach(e -> env.put(e.getName(), e));
    for (var e : Map.of("KILN_TOKEN", "management-token", "KILN_CLUSTER_SECRET", "cluster-secret").entrySet()) {
      var ref = env.get(e.getKey()).getValueFrom().getSecretKeyRef();
      assertThat(ref.getName()).isEqualTo("kiln-secrets");
      assertThat(ref.getKey()).isEqualTo(e.getValue());
    }
    assertThat(args).noneMatch(a -> a.startsWith("--token") || a.startsWith("--cluster-secret"));
  }

  @Test
  void shutdownHasTheGracePeriodADrainNeeds() throws IOException {
    for (String overlay : OVERLAYS) {
      Rendered r = rendered(overlay);
      long grace = r.pod().getTerminationGracePeriodSeconds();
      long preStop = r.kiln().getLifecycle().getPreStop().getSleep().getSeconds();
      long queueTimeoutSeconds = deployments(r).get(0).queue().timeout().toSeconds();
      List<String> args = expandedArgs(r, podFields(r));
      java.time.Duration drain = KilnCommands.parseStart(args.subList(1, args.size())).drain().grace();
      assertThat(drain.toSeconds()).as(overlay + ": the drain lets a queued request finish or time out")
          .isGreaterThanOrEqualTo(queueTimeoutSeconds);
      assertThat(grace).as(overlay + ": the pod outlives its preStop pause, its drain and leaving the cluster")
          .isGreaterThanOrEqualTo(preStop + drain.toSeconds() + 10);
    }
  }

  @Test
  void theImageRunsTheKilnScriptsJvmFlagsAsTheManifestsUser() throws IOException {
    String script = Files.readString(repositoryRoot().resolve("kiln"));
    Matcher m = Pattern.compile("flags=\\((.*?)\\)", Pattern.DOTALL).matcher(script);
    assertThat(m.find()).isTrue();
    List<String> flags = new ArrayList<>(List.of(m.group(1).replace("\\\n", " ").trim().split("\\s+")));
    flags.removeIf(f -> f.startsWith("-Dkiln.home="));
    String dockerfile = Files.readString(K8S.resolve("Dockerfile"));
    Matcher entry = Pattern.compile("ENTRYPOINT \\[(.*?)]", Pattern.DOTALL).matcher(dockerfile);
    assertThat(entry.find()).isTrue();
    List<String> entrypoint = Pattern.compile("\"([^\"]*)\"").matcher(entry.group(1)).results()
        .map(x -> x.group(1)).toList();
    assertThat(entrypoint).startsWith("/opt/kiln/bin/kiln-entrypoint", "java").containsSubsequence(flags).contains("-Dkiln.home=/opt/kiln")
        .endsWith("-jar", "/opt/kiln/kiln.jar");
    assertThat(dockerfile).contains("cp -r models /out/kiln/models").contains("COPY --from=build --chown=root:root /out/kiln /opt/kiln");
    Rendered r = rendered("cpu");
    assertThat(dockerfile).contains("USER " + r.pod().getSecurityContext().getRunAsUser() + ":"
        + r.pod().getSecurityContext().getRunAsGroup());
    assertThat(dockerfile).contains("DJL_CACHE_DIR=/var/cache/kiln/djl").contains("KILN_CACHE_DIR=/var/cache/kiln ");
    assertThat(r.kiln().getVolumeMounts()).anySatisfy(v -> assertThat(v.getMountPath()).isEqualTo("/var/cache/kiln"));
    assertThat(r.kiln().getVolumeMounts()).anySatisfy(v -> assertThat(v.getMountPath()).isEqualTo("/opt/kiln/.kiln"));
  }

  @ParameterizedTest
  @ValueSource(strings = {"cpu", "gpu", "api-discovery"})
  void theRenderedFilesAreWhatKustomizeMakesOfTheOverlays(String overlay) throws Exception {
    Path kubectl = Stream.of("/usr/bin/kubectl", "/usr/local/bin/kubectl").map(Path::of).filter(Files::isExecutable)
        .findFirst().orElse(null);
    assumeThat(kubectl).as("kubectl (its built-in kustomize) is installed").isNotNull();
    Process p = new ProcessBuilder(kubectl.toString(), "kustomize", K8S.resolve("overlays/" + overlay).toString())
        .redirectErrorStream(true).start();
    String fresh = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(fresh).isZero();
    String committed = Files.readString(K8S.resolve("rendered/" + overlay + ".yaml"));
    assertThat(committed.substring(committed.indexOf('\n') + 1))
        .as("deploy/k8s/rendered/%s.yaml is stale: run deploy/k8s/render.sh", overlay).isEqualTo(fresh);
  }
}
