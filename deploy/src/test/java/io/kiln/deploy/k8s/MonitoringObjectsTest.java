package io.kiln.deploy.k8s;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.TopologySpreadConstraint;
import io.fabric8.kubernetes.api.model.WeightedPodAffinityTerm;
import io.fabric8.kubernetes.api.model.autoscaling.v2.HorizontalPodAutoscaler;
import io.fabric8.kubernetes.api.model.autoscaling.v2.MetricSpec;
import io.kiln.deploy.k8s.ManifestsTest.Rendered;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

/**
 * The objects of {@code deploy/k8s/monitoring} (PodMonitor, PrometheusRule, HPA, the adapter's rule) against the
 * StatefulSet they serve and the alert rules promtool tests, and the pod's placement and heap: a majority of the
 * pods does not share one Kubernetes node, the heap leaves room for native engines and Python workers.
 */
@Tag("slow")
class MonitoringObjectsTest {

  static final Path MONITORING = ManifestsTest.K8S.resolve("monitoring");
  static final Path RULES = ManifestsTest.repositoryRoot().resolve("deploy/monitoring/prometheus/rules/kiln-alerts.yml");

  static Map<String, Object> yaml(String text) {
    return new Yaml(new SafeConstructor(new LoaderOptions())).load(text);
  }

  static <T extends HasMetadata> T one(String file, Class<T> type) throws IOException {
    List<HasMetadata> objects = StrictManifests.read(MONITORING.resolve(file));
    assertThat(objects).hasSize(1).first().isInstanceOf(type);
    return type.cast(objects.get(0));
  }

  @SuppressWarnings("unchecked")
  static <T> T at(Map<String, ?> m, String... path) {
    Object o = m;
    for (String p : path) {
      assertThat(o).as(String.join(".", path)).isInstanceOf(Map.class);
      o = ((Map<String, Object>) o).get(p);
    }
    return (T) o;
  }

  static String env(Rendered r, String name) {
    return r.kiln().getEnv().stream().filter(e -> e.getName().equals(name)).map(EnvVar::getValue).findFirst()
        .orElseThrow(() -> new AssertionError(r.overlay() + ": no env " + name));
  }

  @Test
  void thePodMonitorScrapesEveryKilnPodsMetricsAsJobKiln() throws IOException {
    GenericKubernetesResource pm = one("podmonitor.yaml", GenericKubernetesResource.class);
    assertThat(pm.getKind()).isEqualTo("PodMonitor");
    Map<String, Object> spec = pm.get("spec");
    Rendered r = ManifestsTest.rendered("cpu");
    Map<String, String> podLabels = r.statefulSet().getSpec().getTemplate().getMetadata().getLabels();
    Map<String, String> selector = at(spec, "selector", "matchLabels");
    assertThat(podLabels).containsAllEntriesOf(selector);
    // The rules and the dashboard's default select job="kiln": the pods' jobLabel value must be it.
    assertThat(podLabels.get((String) spec.get("jobLabel"))).isEqualTo("kiln");
    assertThat(Files.readString(RULES)).contains("job=\"kiln\"");
    List<Map<String, Object>> endpoints = at(spec, "podMetricsEndpoints");
    assertThat(endpoints).hasSize(1);
    ManifestsTest.containerPort(r.kiln(), (String) endpoints.get(0).get("port"));
    assertThat(endpoints.get(0).get("path")).isEqualTo(r.statefulSet().getSpec().getTemplate().getMetadata()
        .getAnnotations().get("prometheus.io/path"));
  }

  @Test
  void thePrometheusRuleCarriesExactlyTheRulesPromtoolTests() throws IOException {
    GenericKubernetesResource rule = one("prometheusrule.yaml", GenericKubernetesResource.class);
    assertThat(rule.getApiVersion()).isEqualTo("monitoring.coreos.com/v1");
    assertThat(rule.getKind()).isEqualTo("PrometheusRule");
    Map<String, Object> spec = rule.get("spec");
    assertThat(spec).as("deploy/k8s/monitoring/prometheusrule.yaml is stale: run deploy/k8s/monitoring/generate.sh")
        .isEqualTo(yaml(Files.readString(RULES)));
  }

  @Test
  void theHpaScalesTheStatefulSetOnQueueFillAndKeepsAMajorityThroughALoss() throws IOException {
    HorizontalPodAutoscaler hpa = one("hpa.yaml", HorizontalPodAutoscaler.class);
    Rendered r = ManifestsTest.rendered("cpu");
    var target = hpa.getSpec().getScaleTargetRef();
    assertThat(List.of(target.getApiVersion(), target.getKind(), target.getName()))
        .containsExactly(r.statefulSet().getApiVersion(), "StatefulSet", r.statefulSet().getMetadata().getName());
    int minCluster = Integer.parseInt(env(r, "KILN_MIN_CLUSTER_SIZE"));
    assertThat(hpa.getSpec().getMinReplicas()).as("one pod lost still leaves --min-cluster-size")
        .isGreaterThanOrEqualTo(minCluster + 1).isLessThanOrEqualTo(r.statefulSet().getSpec().getReplicas());
    assertThat(hpa.getSpec().getMaxReplicas()).isGreaterThan(hpa.getSpec().getMinReplicas());
    assertThat(hpa.getSpec().getMetrics()).hasSize(1);
    MetricSpec m = hpa.getSpec().getMetrics().get(0);
    assertThat(m.getType()).isEqualTo("Pods");
    assertThat(m.getPods().getMetric().getName()).isEqualTo("kiln_pool_queue_fill");
    double averageValue = m.getPods().getTarget().getAverageValue().getNumericalAmount().doubleValue();
    // Scaling must begin before KilnQueueNearlyFull (queue over 0.8 full) fires.
    assertThat(averageValue).isGreaterThan(0).isLessThan(0.8);
    assertThat(Files.readString(RULES)).contains("kiln_pool_queue_capacity{job=\"kiln\"})\n            > 0.8");
  }

  @Test
  void theAdaptersRuleServesTheHpasMetricWithValidPromql(@TempDir Path dir) throws Exception {
    Map<String, Object> values = yaml(Files.readString(MONITORING.resolve("prometheus-adapter-values.yml")));
    List<Map<String, Object>> custom = at(values, "rules", "custom");
    assertThat(custom).hasSize(1);
    Map<String, Object> rule = custom.get(0);
    assertThat((String) at(rule, "name", "as")).isEqualTo("kiln_pool_queue_fill");
    assertThat((Map<String, Object>) at(rule, "resources", "overrides")).containsKeys("namespace", "pod");
    String query = ((String) rule.get("metricsQuery")).replace("<<.GroupBy>>", "namespace, pod")
        .replace("<<.LabelMatchers>>", "namespace=\"kiln\",pod=~\"kiln-.*\"");
    Files.writeString(dir.resolve("q.yml"), "groups:\n  - name: adapter\n    rules:\n      - record: kiln_pool_queue_fill\n"
        + "        expr: '" + query.replace("'", "''") + "'\n");
    Process p = new ProcessBuilder("promtool", "check", "rules", "q.yml").directory(dir.toFile())
        .redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(out).isZero();
  }

  @ParameterizedTest
  @ValueSource(strings = {"cpu", "gpu", "api-discovery"})
  void noKubernetesNodeHoldsAMajorityOfThePods(String overlay) throws IOException {
    Rendered r = ManifestsTest.rendered(overlay);
    Map<String, String> podLabels = r.statefulSet().getSpec().getTemplate().getMetadata().getLabels();
    TopologySpreadConstraint host = r.pod().getTopologySpreadConstraints().stream()
        .filter(t -> t.getTopologyKey().equals("kubernetes.io/hostname")).findFirst().orElseThrow();
    assertThat(host.getWhenUnsatisfiable()).isEqualTo("DoNotSchedule");
    assertThat(podLabels).containsAllEntriesOf(host.getLabelSelector().getMatchLabels());
    int replicas = r.statefulSet().getSpec().getReplicas();
    int minCluster = Integer.parseInt(env(r, "KILN_MIN_CLUSTER_SIZE"));
    // maxSkew 1 over `replicas` Kubernetes nodes or more: some node holds none, so none holds more than one, and a
    // node's loss leaves replicas - 1 pods.
    assertThat(host.getMaxSkew()).isEqualTo(1);
    assertThat(replicas - host.getMaxSkew()).as(overlay + ": pods left when the fullest node dies")
        .isGreaterThanOrEqualTo(minCluster);
    List<WeightedPodAffinityTerm> anti = r.pod().getAffinity().getPodAntiAffinity()
        .getPreferredDuringSchedulingIgnoredDuringExecution();
    assertThat(anti).anySatisfy(t -> {
      assertThat(t.getPodAffinityTerm().getTopologyKey()).isEqualTo("kubernetes.io/hostname");
      assertThat(podLabels).containsAllEntriesOf(t.getPodAffinityTerm().getLabelSelector().getMatchLabels());
    });
  }

  @ParameterizedTest
  @ValueSource(strings = {"cpu", "gpu", "api-discovery"})
  void theHeapLeavesHalfTheLimitOrMoreToNativeEnginesAndPythonWorkers(String overlay) throws Exception {
    Rendered r = ManifestsTest.rendered(overlay);
    String percent = env(r, "KILN_HEAP_PERCENT");
    assertThat(Integer.parseInt(percent)).isBetween(1, 50);
    assertThat(r.kiln().getResources().getLimits()).containsKey("memory");
    // The image's entrypoint turns it into the JVM's flag: run it with this machine's java.
    assertThat(Files.readString(ManifestsTest.K8S.resolve("Dockerfile"))).doesNotContain("MaxRAMPercentage=75");
    assertThat(entrypoint(Map.of("KILN_HEAP_PERCENT", percent), "-XX:+PrintFlagsFinal", "-version").output())
        .containsPattern("MaxRAMPercentage\\s+= " + percent + "\\.0");
  }

  @Test
  void theEntrypointTakesAnExplicitHeapAndRefusesAHeapThatStarvesNativeMemory() throws Exception {
    assertThat(entrypoint(Map.of("KILN_HEAP_MAX", "512m"), "-XX:+PrintFlagsFinal", "-version").output())
        .containsPattern("MaxHeapSize\\s+= 536870912\\b");
    Run tooBig = entrypoint(Map.of("KILN_HEAP_PERCENT", "75"), "-version");
    assertThat(tooBig.exit()).isEqualTo(64);
    assertThat(tooBig.output()).contains("KILN_HEAP_PERCENT must be 1-50");
    Run notANumber = entrypoint(Map.of("KILN_HEAP_PERCENT", "40%"), "-version");
    assertThat(notANumber.exit()).isEqualTo(64);
    assertThat(notANumber.output()).contains("KILN_HEAP_PERCENT must be a whole percentage");
  }

  record Run(int exit, String output) {
  }

  static Run entrypoint(Map<String, String> env, String... javaArgs) throws Exception {
    List<String> cmd = new java.util.ArrayList<>(List.of("/bin/sh",
        ManifestsTest.K8S.resolve("kiln-entrypoint.sh").toString(),
        Path.of(System.getProperty("java.home"), "bin", "java").toString()));
    cmd.addAll(List.of(javaArgs));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.environment().remove("KILN_HEAP_PERCENT");
    pb.environment().remove("KILN_HEAP_MAX");
    pb.environment().putAll(env);
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
    return new Run(p.exitValue(), out);
  }
}
