package io.kiln.runtime.impl.cluster;

import com.hazelcast.config.Config;
import com.hazelcast.config.JoinConfig;
import com.hazelcast.config.MapConfig;
import com.hazelcast.config.MultiMapConfig;
import com.hazelcast.config.NetworkConfig;
import com.hazelcast.config.SplitBrainProtectionConfig;
import com.hazelcast.splitbrainprotection.SplitBrainProtectionOn;
import io.kiln.runtime.ClusterDiscovery;
import io.kiln.runtime.ClusterOptions;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * The Hazelcast member configuration of a Kiln node: TCP/IP join through the listed members, or Hazelcast's
 * built-in Kubernetes discovery (DNS lookup or API mode), never multicast or auto-detection; one explicit
 * interface, phone-home off, seconds-scale failure detection, the maps Vert.x's cluster manager needs, and
 * optional split-brain protection of the cluster state listed in {@link #PROTECTED_MAPS}.
 */
public final class HazelcastConfigs {

  /** Member attribute holding the Kiln node id, so membership speaks in node ids, not member UUIDs. */
  public static final String NODE_ATTRIBUTE = "kiln.node";

  /** The split-brain protection {@link ClusterOptions#minClusterSize()} configures. */
  public static final String SPLIT_BRAIN_PROTECTION = "kiln-min-cluster-size";

  /**
   * The maps whose writes split-brain protection refuses below the minimum size: those where a write on the smaller
   * side of a partition would be silently dropped, resurrected or doubled by Hazelcast's merge (which keeps the larger
   * side's entry where both hold a key and adds the smaller side's where the larger lacks it). Names other nodes act
   * on: the named-actor registry and the node table (the runtime's {@code ActorRegistry.MAP}, {@code NodeTable.MAP}),
   * placement groups and their names ({@code GroupRecord.MAP}, {@code GroupRecord.NAMES}). Desired state: the
   * deployments (serve's {@code DesiredState.DEPLOYMENTS}), model graphs ({@code Graphs.STORE}) and pipelines
   * ({@code RunStore.PIPELINES}). Work and its
   * results: pipeline runs ({@code RunStore.RUNS}), job specs, statuses and cancel requests ({@code JobStore.SPECS},
   * {@code STATUS}, {@code CONTROL}), and the node-cache index ({@code CacheIndex.MAP}), which routes work to data.
   * A test in {@code deploy} holds every store Kiln opens either here or in docs/partition-test.md's list of the
   * unprotected ones, with the reason.
   */
  public static final List<String> PROTECTED_MAPS = List.of("kiln.actors", "kiln.nodes", "kiln.placement-groups",
      "kiln.placement-group-names", "kiln.deployments", "kiln.pipelines", "kiln.pipeline-runs", "kiln.job-specs",
      "kiln.jobs", "kiln.job-control", "kiln.cache-index", "kiln.graphs");

  /**
   * The shared maps left writable below the minimum, each with the reason a write on the smaller side is harmless
   * (docs/partition-test.md lists them too). Every map Kiln writes is in this map or in {@link #PROTECTED_MAPS}
   * (deploy's ProtectedStoresTest holds so).
   */
  public static final Map<String, String> UNPROTECTED_MAPS = Map.of(
      "kiln.deployment-status", "observations, rewritten whole by the leader's reconciler from what it sees at every"
          + " pass; whichever side's entry the merge keeps is replaced at the next pass",
      "kiln.draining-nodes", "a node's own drain mark, written by the node at SIGTERM: a node on the smaller side must"
          + " still drain; a mark the merge brings back for a node that left is removed by the leader's next pass"
          + " (entries of nodes not alive are dropped)",
      "__vertx.subs", "Vert.x's event-bus subscriptions: the smaller side needs its own to serve from its pools;"
          + " vertx-hazelcast puts a node's back when its member merges",
      "__vertx.haInfo", "Vert.x's HA bookkeeping (Kiln does not use Vert.x HA)",
      "__vertx.nodeInfo", "Vert.x's node addresses, one per node written by that node; put back on merge as the"
          + " subscriptions are");

  /** How long a DNS lookup of a Kubernetes discovery may take (Hazelcast's default, stated). */
  static final int SERVICE_DNS_TIMEOUT_SECONDS = 5;

  private HazelcastConfigs() {
  }

  public static Config memberConfig(String nodeId, ClusterOptions o) {
    Config c = new Config();
    c.setClusterName(effectiveClusterName(o));
    c.setInstanceName("kiln-" + nodeId);
    c.getMemberAttributeConfig().setAttribute(NODE_ATTRIBUTE, nodeId);

    c.setProperty("hazelcast.phone.home.enabled", "false");
    c.setProperty("hazelcast.logging.type", "slf4j");
    c.setProperty("hazelcast.shutdownhook.enabled", "false");
    c.setProperty("hazelcast.socket.bind.any", "false");
    c.setProperty("hazelcast.wait.seconds.before.join", "0");
    c.setProperty("hazelcast.max.wait.seconds.before.join", "0");
    c.setProperty("hazelcast.heartbeat.interval.seconds", Long.toString(Math.max(1, o.heartbeatInterval().toSeconds())));
    c.setProperty("hazelcast.max.no.heartbeat.seconds", Long.toString(Math.max(2, o.failureTimeout().toSeconds())));
    c.setProperty("hazelcast.heartbeat.failuredetector.type", "deadline");
    c.setProperty("hazelcast.merge.first.run.delay.seconds", "5");
    c.setProperty("hazelcast.merge.next.run.delay.seconds", "5");
    c.setProperty("hazelcast.operation.call.timeout.millis", "15000");
    c.setProperty("hazelcast.invocation.max.retry.count", "20");
    c.setProperty("hazelcast.partition.count", "71");
    c.setProperty("hazelcast.jmx", "false");

    NetworkConfig net = c.getNetworkConfig();
    net.setPort(o.port() == 0 ? 5701 : o.port());
    net.setPortAutoIncrement(o.port() == 0);
    net.setPortCount(o.port() == 0 ? 1000 : 1);
    net.getInterfaces().setEnabled(true).addInterface(o.host());
    JoinConfig join = net.getJoin();
    join.getMulticastConfig().setEnabled(false);
    join.getAutoDetectionConfig().setEnabled(false);
    ClusterDiscovery d = o.discovery();
    if (d.isKubernetes()) {
      // Hazelcast allows one join method: TCP/IP stays off. The port is stated, so DNS answers need no SRV records
      // and API endpoints need no port named for Hazelcast.
      join.getTcpIpConfig().setEnabled(false);
      var k8s = join.getKubernetesConfig().setEnabled(true)
          .setProperty("service-port", Integer.toString(o.kubernetesMemberPort()));
      if (d.mode() == ClusterDiscovery.Mode.KUBERNETES_DNS) {
        k8s.setProperty("service-dns", d.serviceDns())
            .setProperty("service-dns-timeout", Integer.toString(SERVICE_DNS_TIMEOUT_SECONDS));
      } else {
        k8s.setProperty("service-name", d.serviceName())
            // pods join before they are ready (readiness waits for models, which need the cluster)
            .setProperty("resolve-not-ready-addresses", "true");
        if (d.namespace() != null) {
          k8s.setProperty("namespace", d.namespace());
        }
      }
    } else {
      join.getTcpIpConfig().setEnabled(true);
      for (String m : o.members()) {
        join.getTcpIpConfig().addMember(m);
      }
    }

    c.addMultiMapConfig(new MultiMapConfig("__vertx.subs").setBackupCount(1)
        .setValueCollectionType(MultiMapConfig.ValueCollectionType.SET));
    c.addMapConfig(new MapConfig("__vertx.haInfo").setBackupCount(1));
    c.addMapConfig(new MapConfig("__vertx.nodeInfo").setBackupCount(1));
    c.addMapConfig(new MapConfig("kiln.*").setBackupCount(1).setReadBackupData(false));
    if (o.minClusterSize() > 1) {
      // Writes refused below N members; and a node waits at start for N, rather than fail its first writes.
      c.addSplitBrainProtectionConfig(new SplitBrainProtectionConfig(SPLIT_BRAIN_PROTECTION, true, o.minClusterSize())
          .setProtectOn(SplitBrainProtectionOn.WRITE));
      for (String name : PROTECTED_MAPS) {
        c.addMapConfig(new MapConfig(name).setBackupCount(1).setReadBackupData(false)
            .setSplitBrainProtectionName(SPLIT_BRAIN_PROTECTION));
      }
      c.setProperty("hazelcast.initial.min.cluster.size", Integer.toString(o.minClusterSize()));
    }
    return c;
  }

  /**
   * Hazelcast's open-source edition has no member authentication; a shared secret is folded into the
   * cluster name members must present, so members that do not know it are refused at join.
   */
  static String effectiveClusterName(ClusterOptions o) {
    if (o.secret() == null || o.secret().isEmpty()) {
      return o.clusterName();
    }
    try {
      byte[] digest = MessageDigest.getInstance("SHA-256")
          .digest((o.clusterName() + "\0" + o.secret()).getBytes(StandardCharsets.UTF_8));
      return o.clusterName() + "-" + HexFormat.of().formatHex(digest, 0, 16);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
