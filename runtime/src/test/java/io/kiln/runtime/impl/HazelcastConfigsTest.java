package io.kiln.runtime.impl;

import static org.assertj.core.api.Assertions.assertThat;

import com.hazelcast.config.Config;
import com.hazelcast.config.DiscoveryStrategyConfig;
import com.hazelcast.config.JoinConfig;
import com.hazelcast.config.MapConfig;
import com.hazelcast.config.SplitBrainProtectionConfig;
import com.hazelcast.internal.config.AliasedDiscoveryConfigUtils;
import com.hazelcast.splitbrainprotection.SplitBrainProtectionOn;
import io.kiln.runtime.ClusterDiscovery;
import io.kiln.runtime.ClusterOptions;
import io.kiln.runtime.impl.cluster.HazelcastConfigs;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The Hazelcast member {@link Config} each kind of discovery and split-brain protection produces, read back
 * field by field from real Config objects (and checked by Hazelcast's own join validation). In this package
 * because the names of the protected maps are the registry's and node table's own constants.
 */
class HazelcastConfigsTest {

  @Test
  void staticDiscoveryIsTcpIpThroughTheListedMembersOnly() {
    Config c = HazelcastConfigs.memberConfig("n1", ClusterOptions.join("10.0.0.5", 5701, "10.0.0.4:5701"));

    JoinConfig join = c.getNetworkConfig().getJoin();
    join.verify();
    assertThat(join.getTcpIpConfig().isEnabled()).isTrue();
    assertThat(join.getTcpIpConfig().getMembers()).containsExactly("10.0.0.4:5701");
    assertThat(join.getKubernetesConfig().isEnabled()).isFalse();
    assertThat(join.getMulticastConfig().isEnabled()).isFalse();
    assertThat(join.getAutoDetectionConfig().isEnabled()).isFalse();
    assertThat(c.getNetworkConfig().getPort()).isEqualTo(5701);
    assertThat(c.getNetworkConfig().isPortAutoIncrement()).isFalse();
    assertThat(c.getNetworkConfig().getInterfaces().isEnabled()).isTrue();
    assertThat(c.getNetworkConfig().getInterfaces().getInterfaces()).containsExactly("10.0.0.5");
    assertThat(c.getMemberAttributeConfig().getAttribute(HazelcastConfigs.NODE_ATTRIBUTE)).isEqualTo("n1");
    assertThat(c.getSplitBrainProtectionConfigs()).isEmpty();
    assertThat(c.getProperty("hazelcast.initial.min.cluster.size")).isNull();
    assertThat(c.getMapConfigs()).doesNotContainKeys("kiln.actors", "kiln.nodes");
  }

  @Test
  void kubernetesDnsResolvesTheHeadlessServiceOnTheClusterPort() {
    ClusterOptions o = ClusterOptions.discovered("10.1.2.3", 5701,
        ClusterDiscovery.kubernetesDns("kiln-headless.kiln.svc.cluster.local"));

    Config c = HazelcastConfigs.memberConfig("kiln-0", o);

    JoinConfig join = c.getNetworkConfig().getJoin();
    join.verify(); // Hazelcast's own rule: one join method at a time
    assertThat(join.getTcpIpConfig().isEnabled()).isFalse();
    assertThat(join.getTcpIpConfig().getMembers()).isEmpty();
    assertThat(join.getMulticastConfig().isEnabled()).isFalse();
    assertThat(join.getAutoDetectionConfig().isEnabled()).isFalse();
    assertThat(join.getKubernetesConfig().isEnabled()).isTrue();
    assertThat(join.getKubernetesConfig().getProperties()).containsExactlyInAnyOrderEntriesOf(Map.of(
        "service-dns", "kiln-headless.kiln.svc.cluster.local",
        "service-dns-timeout", "5",
        "service-port", "5701"));
    assertThat(c.getNetworkConfig().getPort()).isEqualTo(5701);
    assertThat(c.getNetworkConfig().isPortAutoIncrement()).isFalse();
    assertThat(c.getNetworkConfig().getInterfaces().getInterfaces()).containsExactly("10.1.2.3");
    assertThat(c.getProperty("hazelcast.socket.bind.any")).isEqualTo("false");

    // What Hazelcast makes of it at start: one discovery strategy, its Kubernetes one, with these properties.
    List<DiscoveryStrategyConfig> strategies = AliasedDiscoveryConfigUtils.createDiscoveryStrategyConfigs(join);
    assertThat(strategies).singleElement().satisfies(s -> {
      assertThat(s.getClassName()).isEqualTo("com.hazelcast.kubernetes.HazelcastKubernetesDiscoveryStrategy");
      assertThat(s.getProperties()).containsEntry("service-dns", "kiln-headless.kiln.svc.cluster.local")
          .containsEntry("service-port", "5701").doesNotContainKeys("service-name", "namespace");
    });
  }

  @Test
  void kubernetesDnsWithAMemberPortLooksThereInsteadOfOnItsOwnPort() {
    ClusterOptions o = new ClusterOptions("kiln", "127.0.0.1", 0, List.of(), ClusterOptions.DEFAULT_HEARTBEAT,
        ClusterOptions.DEFAULT_FAILURE_TIMEOUT, null, ClusterDiscovery.kubernetesDns("localhost").withMemberPort(5800),
        1, 0);

    Config c = HazelcastConfigs.memberConfig("n2", o);

    assertThat(c.getNetworkConfig().getJoin().getKubernetesConfig().getProperty("service-port")).isEqualTo("5800");
    assertThat(c.getNetworkConfig().isPortAutoIncrement()).as("its own port is still picked freely").isTrue();
  }

  @Test
  void kubernetesApiReadsTheServicesEndpointsInItsNamespace() {
    Config inNamespace = HazelcastConfigs.memberConfig("kiln-1", ClusterOptions.discovered("10.1.2.4", 5701,
        ClusterDiscovery.kubernetesApi("kiln-headless", "serving")));

    JoinConfig join = inNamespace.getNetworkConfig().getJoin();
    join.verify();
    assertThat(join.getTcpIpConfig().isEnabled()).isFalse();
    assertThat(join.getKubernetesConfig().isEnabled()).isTrue();
    assertThat(join.getKubernetesConfig().getProperties()).containsExactlyInAnyOrderEntriesOf(Map.of(
        "service-name", "kiln-headless",
        "namespace", "serving",
        "resolve-not-ready-addresses", "true",
        "service-port", "5701"));

    Config ownNamespace = HazelcastConfigs.memberConfig("kiln-1", ClusterOptions.discovered("10.1.2.4", 5701,
        ClusterDiscovery.kubernetesApi("kiln-headless", null)));
    assertThat(ownNamespace.getNetworkConfig().getJoin().getKubernetesConfig().getProperties())
        .doesNotContainKey("namespace").doesNotContainKey("service-dns").containsEntry("service-name", "kiln-headless");
  }

  @Test
  void aMinimumClusterSizeProtectsTheRegistryAndNodeTableAndWaitsAtStart() {
    // and the stores of the modules above, named here by their values (deploy's ProtectedStoresTest holds the
    // constants equal): serve's desired deployments, pipelines' pipelines, runs, jobs, cache index and graphs
    assertThat(HazelcastConfigs.PROTECTED_MAPS).containsExactlyInAnyOrder(ActorRegistry.MAP, NodeTable.MAP,
        GroupRecord.MAP, GroupRecord.NAMES, "kiln.deployments", "kiln.pipelines", "kiln.pipeline-runs",
        "kiln.job-specs", "kiln.jobs", "kiln.job-control", "kiln.cache-index", "kiln.graphs");

    Config c = HazelcastConfigs.memberConfig("kiln-0", ClusterOptions.discovered("10.1.2.3", 5701,
        ClusterDiscovery.kubernetesDns("kiln-headless")).withMinClusterSize(2));

    SplitBrainProtectionConfig sbp = c.getSplitBrainProtectionConfig(HazelcastConfigs.SPLIT_BRAIN_PROTECTION);
    assertThat(c.getSplitBrainProtectionConfigs()).containsOnlyKeys(HazelcastConfigs.SPLIT_BRAIN_PROTECTION);
    assertThat(sbp.isEnabled()).isTrue();
    assertThat(sbp.getMinimumClusterSize()).isEqualTo(2);
    assertThat(sbp.getProtectOn()).isEqualTo(SplitBrainProtectionOn.WRITE);
    for (String name : HazelcastConfigs.PROTECTED_MAPS) {
      MapConfig m = c.getMapConfigs().get(name);
      assertThat(m).as(name).isNotNull();
      assertThat(m.getSplitBrainProtectionName()).as(name).isEqualTo(HazelcastConfigs.SPLIT_BRAIN_PROTECTION);
      assertThat(m.getBackupCount()).as(name).isEqualTo(1);
      assertThat(m.isReadBackupData()).as(name).isFalse();
      // Hazelcast's own lookup picks the exact name over the kiln.* wildcard.
      assertThat(c.findMapConfig(name).getSplitBrainProtectionName()).as(name)
          .isEqualTo(HazelcastConfigs.SPLIT_BRAIN_PROTECTION);
    }
    assertThat(c.findMapConfig("kiln.deployment-status").getSplitBrainProtectionName()).isNull();
    assertThat(c.getProperty("hazelcast.initial.min.cluster.size")).isEqualTo("2");
  }
}
