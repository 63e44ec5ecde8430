package io.kiln.deploy;

import static io.kiln.deploy.KilnCliTest.kiln;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kiln.runtime.ClusterDiscovery;
import io.kiln.runtime.ClusterOptions;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code kiln start}'s cluster flags as parsed ({@code --discovery}, {@code --min-cluster-size}, {@code --bus-port},
 * {@code --failure-detect-ms}, {@code --apply}) and the {@link ClusterOptions} they make, field by field (the runtime's HazelcastConfigsTest
 * follows those options into Hazelcast's Config); every bad value is one line naming its flag. In process, no
 * node starts.
 */
class StartDiscoveryOptionsTest {

  @TempDir
  Path dir;

  static StartCommand parse(String... args) {
    StartCommand c = new StartCommand();
    new CommandLine(c).parseArgs(args);
    return c;
  }

  @Test
  void theOpenAiApiKeyIsAFlagOfItsOwnBesideTheManagementToken() {
    StartCommand c = parse("--api-key", "sk-test", "--token", "mgmt");
    assertThat(c.opts.apiKey()).isEqualTo("sk-test");
    assertThat(c.opts.token()).isEqualTo("mgmt");
    assertThat(parse().opts.apiKey()).isEqualTo(System.getenv("KILN_API_KEY"));
  }

  @Test
  void kubernetesDnsIsAFoundClusterOnThePodsAddressWithTheGivenGuards() {
    ClusterOptions o = parse("--discovery", "k8s-dns:kiln-headless.kiln.svc.cluster.local", "--host", "10.1.2.3",
        "--cluster-port", "5701", "--min-cluster-size", "2", "--bus-port", "5702", "--cluster-name", "prod",
        "--cluster-secret", "s3cret").cluster();

    assertThat(o.discovery().mode()).isEqualTo(ClusterDiscovery.Mode.KUBERNETES_DNS);
    assertThat(o.discovery().serviceDns()).isEqualTo("kiln-headless.kiln.svc.cluster.local");
    assertThat(o.discovery().memberPort()).isZero();
    assertThat(o.kubernetesMemberPort()).isEqualTo(5701);
    assertThat(o.members()).isEmpty();
    assertThat(o.host()).isEqualTo("10.1.2.3");
    assertThat(o.port()).isEqualTo(5701);
    assertThat(o.minClusterSize()).isEqualTo(2);
    assertThat(o.busPort()).isEqualTo(5702);
    assertThat(o.clusterName()).isEqualTo("prod");
    assertThat(o.secret()).isEqualTo("s3cret");
    assertThat(o.heartbeatInterval()).isEqualTo(ClusterOptions.DEFAULT_HEARTBEAT);
    assertThat(o.failureTimeout()).isEqualTo(ClusterOptions.DEFAULT_FAILURE_TIMEOUT);
    assertThat(o.busFailureDetect()).isEqualTo(ClusterOptions.DEFAULT_BUS_FAILURE_DETECT);
    assertThat(parse("--head", "--failure-detect-ms", "750").cluster().busFailureDetect())
        .isEqualTo(java.time.Duration.ofMillis(750));
  }

  @Test
  void kubernetesApiNamesTheServiceAndItsNamespace() {
    ClusterOptions o = parse("--discovery", "k8s-api:kiln-headless@serving", "--host", "10.1.2.4").cluster();

    assertThat(o.discovery()).isEqualTo(ClusterDiscovery.kubernetesApi("kiln-headless", "serving"));
    assertThat(o.port()).isEqualTo(ClusterOptions.DEFAULT_PORT);
    assertThat(o.minClusterSize()).isEqualTo(1);
    assertThat(o.busPort()).isZero();
    assertThat(parse("--discovery", "k8s-api:kiln-headless", "--host", "10.1.2.4").cluster().discovery().namespace())
        .isNull();
  }

  @Test
  void withoutTheFlagItIsTodaysStaticDiscovery() {
    // (Where the test JVM has KILN_DISCOVERY set, that is the default: this test needs it unset.)
    ClusterOptions head = parse("--head", "--cluster-port", "5710").cluster();
    assertThat(head.discovery()).isSameAs(ClusterDiscovery.STATIC);
    assertThat(head.members()).isEmpty();
    assertThat(head.port()).isEqualTo(5710);
    assertThat(head.host()).isEqualTo("127.0.0.1");
    assertThat(head.minClusterSize()).isEqualTo(1);

    ClusterOptions join = parse("--address", "10.0.0.4:5701", "--discovery", "static").cluster();
    assertThat(join.discovery()).isSameAs(ClusterDiscovery.STATIC);
    assertThat(join.members()).containsExactly("10.0.0.4:5701");
  }

  @Test
  void badValuesAreOneLineNamingTheFlag() {
    assertThat(kiln("start", "--discovery", "multicast", "--foreground").errLines()).singleElement().asString()
        .isEqualTo("kiln: --discovery: unknown discovery 'multicast'; use static, k8s-dns:NAME[:PORT] or "
            + "k8s-api:SERVICE[@NAMESPACE][:PORT]");
    assertThat(kiln("start", "--discovery", "k8s-dns:", "--foreground").errLines()).singleElement().asString()
        .startsWith("kiln: --discovery: discovery 'k8s-dns:' names no DNS name");
    assertThat(kiln("start", "--discovery", "k8s-api:Kiln_Svc", "--foreground").errLines()).singleElement().asString()
        .startsWith("kiln: --discovery: discovery 'k8s-api:Kiln_Svc': k8s-api needs a Service name");
    assertThat(kiln("start", "--discovery", "k8s-dns:kiln", "--head", "--foreground").errLines()).singleElement()
        .asString().isEqualTo("kiln: --head is for --discovery static; with --discovery k8s-dns:kiln the members are "
            + "found, not named");
    assertThat(kiln("start", "--discovery", "k8s-dns:kiln", "--address", "10.0.0.1:5701").errLines()).singleElement()
        .asString().startsWith("kiln: --address is for --discovery static");
    assertThat(kiln("start", "--discovery", "k8s-dns:kiln", "--cluster-port", "0").errLines()).singleElement()
        .asString().isEqualTo("kiln: --discovery k8s-dns:kiln needs a fixed --cluster-port (every member listens on "
            + "the same one), not 0");
    assertThat(kiln("start", "--head", "--min-cluster-size", "0").errLines()).singleElement().asString()
        .isEqualTo("kiln: --min-cluster-size must be at least 1, got 0");
    KilnCliTest.Run notANumber = kiln("start", "--head", "--min-cluster-size", "two");
    assertThat(notANumber.code()).isEqualTo(2);
    assertThat(notANumber.errLines()).singleElement().asString().contains("--min-cluster-size").contains("'two'");
    assertThat(kiln("start", "--head", "--bus-port", "70000").errLines()).singleElement().asString()
        .isEqualTo("kiln: --bus-port must be 0..65535, got 70000");
    assertThat(kiln("start", "--head", "--failure-detect-ms", "50").errLines()).singleElement().asString()
        .isEqualTo("kiln: --failure-detect-ms must be at least 200 (a busy event loop's late answer would read as a "
            + "death), got 50");

    KilnCliTest.Run neither = kiln("start", "--discovery", "static");
    assertThat(neither.code()).isEqualTo(2);
    assertThat(neither.errLines()).singleElement().asString()
        .startsWith("kiln start: Missing required argument").contains("--head").contains("--address")
        .contains("--discovery k8s-dns:NAME");
  }

  @Test
  void anApplyFileIsCheckedBeforeAnyNodeStarts() throws Exception {
    assertThat(kiln("start", "--head", "--apply", dir.resolve("none.yaml").toString()).errLines()).singleElement()
        .asString().isEqualTo("kiln: --apply: no such file: " + dir.resolve("none.yaml"));

    Path bad = Files.writeString(dir.resolve("bad.yaml"), """
        deployments:
          - name: mlp
            version: "1"
            model: {uri: builtin:identity, inputs: [{name: x, datatype: FP33, shape: [-1, 4]}],
                    outputs: [{name: x, datatype: FP32, shape: [-1, 4]}]}
        """);
    KilnCliTest.Run r = kiln("start", "--head", "--apply", bad.toString());
    assertThat(r.code()).isEqualTo(1);
    assertThat(r.err()).startsWith("kiln: --apply: ").contains("bad.yaml:4:").contains("FP33");
    assertThat(r.out()).isEmpty();
  }

  @Test
  void theBackgroundChildGetsTheSameClusterFlags() throws Exception {
    Path app = Files.writeString(dir.resolve("app.yaml"), "deployments: []\n");
    StartCommand c = parse("--discovery", "k8s-dns:kiln-headless:5800", "--host", "10.1.2.3", "--min-cluster-size",
        "3", "--bus-port", "5702", "--apply", app.toString());
    List<String> child = forwarded(c);

    StartCommand again = parse(child.toArray(String[]::new));
    assertThat(again.cluster()).isEqualTo(c.cluster());
    assertThat(child).containsSequence("--apply", app.toAbsolutePath().toString()).doesNotContain("--head", "--address");
  }

  @Test
  void strictReadinessIsOffByDefaultAndForwardedToTheBackgroundNode() throws Exception {
    // (KILN_STRICT_READINESS is the picocli default: this test runs without it set.)
    assertThat(parse("--head").opts.strictReadiness).isFalse();
    assertThat(forwarded(parse("--head"))).doesNotContain("--strict-readiness");
    StartCommand strict = parse("--head", "--strict-readiness");
    assertThat(strict.opts.strictReadiness).isTrue();
    List<String> child = forwarded(strict);
    assertThat(child).contains("--strict-readiness");
    assertThat(parse(child.toArray(String[]::new)).opts.strictReadiness).isTrue();
  }

  @Test
  void theGrpcMessageLimitHoldsA64MiBTensorByDefaultAndIsForwardedToTheBackgroundNode() throws Exception {
    // (KILN_GRPC_MAX_MESSAGE_MB is the picocli default: this test runs without it set.)
    assertThat(parse("--head").opts.grpcMaxMessageMb).isEqualTo(KilnNode.Options.DEFAULT_GRPC_MAX_MESSAGE_MB)
        .isEqualTo(65);
    StartCommand big = parse("--head", "--grpc-max-message-mb", "300");
    assertThat(big.opts.grpcMaxMessageMb).isEqualTo(300);
    List<String> child = forwarded(big);
    assertThat(child).containsSequence("--grpc-max-message-mb", "300");
    assertThat(parse(child.toArray(String[]::new)).opts.grpcMaxMessageMb).isEqualTo(300);
  }

  @SuppressWarnings("unchecked")
  private static List<String> forwarded(StartCommand c) throws Exception {
    var m = StartCommand.class.getDeclaredMethod("forwardedArgs");
    m.setAccessible(true);
    return (List<String>) m.invoke(c);
  }

  @Test
  void theNodeIdIsStableWhereThePlatformGivesOne() {
    assertThat(NodeIdentity.defaultId(Map.of("KILN_NODE_ID", "gpu-a", "HOSTNAME", "kiln-0",
        "KUBERNETES_SERVICE_HOST", "10.96.0.1"))).as("KILN_NODE_ID wins").isEqualTo("gpu-a");
    assertThat(NodeIdentity.defaultId(Map.of("HOSTNAME", "kiln-0", "KUBERNETES_SERVICE_HOST", "10.96.0.1")))
        .as("a pod: its name").isEqualTo("kiln-0");
    assertThat(NodeIdentity.defaultId(Map.of("HOSTNAME", "box-7", "KILN_STABLE_NODE_ID", "1"))).isEqualTo("box-7");
    assertThat(NodeIdentity.defaultId(Map.of("HOSTNAME", "box-7"))).as("elsewhere: random, as before")
        .startsWith("node-").isNotEqualTo(NodeIdentity.defaultId(Map.of("HOSTNAME", "box-7")));
    assertThat(NodeIdentity.defaultId(Map.of("HOSTNAME", "box-7", "KILN_STABLE_NODE_ID", "0"))).startsWith("node-");
    assertThat(NodeIdentity.defaultId(Map.of("KILN_NODE_ID", " ", "HOSTNAME", "box-7"))).startsWith("node-");
    assertThat(NodeIdentity.defaultId(Map.of())).startsWith("node-");

    assertThatThrownBy(() -> NodeIdentity.defaultId(Map.of("KILN_NODE_ID", "a/b")))
        .isInstanceOf(CliException.class)
        .hasMessageStartingWith("--node-id defaults to $KILN_NODE_ID here, which is 'a/b': nodeId must be")
        .hasMessageEndingWith("; pass --node-id");
    assertThatThrownBy(() -> NodeIdentity.defaultId(Map.of("HOSTNAME", "x".repeat(70), "KUBERNETES_SERVICE_HOST", "h")))
        .hasMessageStartingWith("--node-id defaults to $HOSTNAME (in a Kubernetes pod) here");
  }
}
