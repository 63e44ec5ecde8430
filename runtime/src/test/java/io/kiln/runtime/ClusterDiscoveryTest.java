package io.kiln.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The spellings of {@code --discovery} / {@code KILN_DISCOVERY}, and the cluster options they combine with. */
class ClusterDiscoveryTest {

  @Test
  void everySpellingReadsToItsValueAndBack() {
    assertThat(ClusterDiscovery.parse("static")).isSameAs(ClusterDiscovery.STATIC);
    assertThat(ClusterDiscovery.parse(" STATIC ")).isSameAs(ClusterDiscovery.STATIC);

    ClusterDiscovery dns = ClusterDiscovery.parse("k8s-dns:kiln-headless.kiln.svc.cluster.local");
    assertThat(dns.mode()).isEqualTo(ClusterDiscovery.Mode.KUBERNETES_DNS);
    assertThat(dns.serviceDns()).isEqualTo("kiln-headless.kiln.svc.cluster.local");
    assertThat(dns.serviceName()).isNull();
    assertThat(dns.namespace()).isNull();
    assertThat(dns.memberPort()).isZero();

    ClusterDiscovery dnsPort = ClusterDiscovery.parse("k8s-dns:localhost:5800");
    assertThat(dnsPort.serviceDns()).isEqualTo("localhost");
    assertThat(dnsPort.memberPort()).isEqualTo(5800);

    ClusterDiscovery api = ClusterDiscovery.parse("k8s-api:kiln-headless@serving");
    assertThat(api.mode()).isEqualTo(ClusterDiscovery.Mode.KUBERNETES_API);
    assertThat(api.serviceName()).isEqualTo("kiln-headless");
    assertThat(api.namespace()).isEqualTo("serving");
    assertThat(api.serviceDns()).isNull();

    ClusterDiscovery apiOwnNamespace = ClusterDiscovery.parse("k8s-api:kiln-headless");
    assertThat(apiOwnNamespace.namespace()).isNull();
    assertThat(ClusterDiscovery.parse("k8s-api:kiln@serving:5702").memberPort()).isEqualTo(5702);

    for (String s : List.of("static", "k8s-dns:kiln-headless.kiln.svc.cluster.local", "k8s-dns:localhost:5800",
        "k8s-api:kiln-headless", "k8s-api:kiln-headless@serving", "k8s-api:kiln@serving:5702")) {
      assertThat(ClusterDiscovery.parse(s).spelling()).isEqualTo(s);
      assertThat(ClusterDiscovery.parse(ClusterDiscovery.parse(s).spelling())).isEqualTo(ClusterDiscovery.parse(s));
    }
  }

  @Test
  void badSpellingsSayWhatIsWrongAndWhatIsAccepted() {
    assertThatThrownBy(() -> ClusterDiscovery.parse("multicast")).hasMessage("unknown discovery 'multicast'; use "
        + "static, k8s-dns:NAME[:PORT] or k8s-api:SERVICE[@NAMESPACE][:PORT]");
    assertThatThrownBy(() -> ClusterDiscovery.parse("k8s-dns")).hasMessageStartingWith("discovery 'k8s-dns' names no DNS name");
    assertThatThrownBy(() -> ClusterDiscovery.parse("k8s-dns:")).hasMessageContaining("names no DNS name");
    assertThatThrownBy(() -> ClusterDiscovery.parse("k8s-api:")).hasMessageContaining("names no Service");
    assertThatThrownBy(() -> ClusterDiscovery.parse("k8s-dns:kiln:0")).hasMessageContaining("port must be 1..65535, got '0'");
    assertThatThrownBy(() -> ClusterDiscovery.parse("k8s-dns:kiln:99999")).hasMessageContaining("port must be 1..65535");
    assertThatThrownBy(() -> ClusterDiscovery.parse("k8s-dns:kiln:http")).hasMessageContaining("got 'http'");
    assertThatThrownBy(() -> ClusterDiscovery.parse("k8s-dns:bad_name.svc"))
        .hasMessageContaining("k8s-dns needs a DNS name").hasMessageContaining("'bad_name.svc'");
    assertThatThrownBy(() -> ClusterDiscovery.parse("k8s-api:Kiln")).hasMessageContaining("k8s-api needs a Service name");
    assertThatThrownBy(() -> ClusterDiscovery.parse("k8s-api:kiln@Serving"))
        .hasMessageContaining("namespace must be lower-case");
    assertThatThrownBy(() -> ClusterDiscovery.parse("k8s-api:kiln@")).hasMessageContaining("namespace");
  }

  @Test
  void kubernetesDiscoveryTakesNoMemberListAndAFixedPort() {
    ClusterDiscovery dns = ClusterDiscovery.kubernetesDns("kiln-headless");
    assertThatThrownBy(() -> ClusterOptions.join("10.0.0.1", 5701, "10.0.0.2:5701").withDiscovery(dns))
        .hasMessage("with discovery k8s-dns:kiln-headless the members are found, not listed; got members [10.0.0.2:5701]");
    assertThatThrownBy(() -> ClusterOptions.discovered("10.0.0.1", 0, dns))
        .hasMessageContaining("needs a fixed cluster port");
    assertThat(ClusterOptions.discovered("10.0.0.1", 0, dns.withMemberPort(5701)).kubernetesMemberPort()).isEqualTo(5701);
    assertThat(ClusterOptions.discovered("10.0.0.1", 5710, dns).kubernetesMemberPort()).isEqualTo(5710);
  }

  @Test
  void minimumClusterSizeAndBusPortAreChecked() {
    ClusterOptions o = ClusterOptions.head("10.0.0.1", 5701);
    assertThat(o.discovery()).isSameAs(ClusterDiscovery.STATIC);
    assertThat(o.minClusterSize()).isEqualTo(1);
    assertThat(o.busPort()).isZero();
    assertThat(o.withMinClusterSize(3).minClusterSize()).isEqualTo(3);
    assertThat(o.withBusPort(5702).busPort()).isEqualTo(5702);
    assertThatThrownBy(() -> o.withMinClusterSize(0)).hasMessage("minimum cluster size must be at least 1, got 0");
    assertThatThrownBy(() -> o.withBusPort(70000)).hasMessage("event bus port must be 0..65535, got 70000");
    // Every wither keeps the other new fields.
    ClusterOptions all = ClusterOptions.discovered("10.0.0.1", 5701, ClusterDiscovery.kubernetesDns("kiln"))
        .withMinClusterSize(2).withBusPort(5702).withClusterName("c").withSecret("s")
        .withFailureDetection(Duration.ofSeconds(1), Duration.ofSeconds(3));
    assertThat(all.discovery().spelling()).isEqualTo("k8s-dns:kiln");
    assertThat(all.minClusterSize()).isEqualTo(2);
    assertThat(all.busPort()).isEqualTo(5702);
    assertThat(all.toString()).contains("discovery=k8s-dns:kiln", "minClusterSize=2", "busPort=5702", "secret=***")
        .doesNotContain("=s,");
  }
}
