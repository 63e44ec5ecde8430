package io.kiln.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.kiln.testkit.KilnProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The hosts of {@link MultiHostIT}: a {@link NetNamespaces} network with one namespace per Kiln node and one for the
 * {@link NetnsClient}, each node's hosts file (what a pod's resolver knows: localhost, its own name, and the headless
 * Service's name once per node), the nodes' processes ({@code kiln start --foreground} through {@code ip netns exec},
 * bound to their own address, fixed ports in their own port spaces) and their output. {@link #close} kills every
 * process and removes the namespaces, whatever state they are in.
 */
final class MultiHostCluster implements AutoCloseable {

  /** The one name for all the nodes, as a headless Service's. */
  static final String SERVICE = "kiln-headless.kiln.svc.cluster.local";
  static final int HTTP_PORT = 8000;
  static final int GRPC_PORT = 8001;
  static final int CLUSTER_PORT = 5701;
  static final Duration START = Duration.ofSeconds(180);

  private final List<String> nodeIds;
  private final NetNamespaces net;
  private final Path home;
  private final CliProcesses cli;
  private final NetnsClient.Remote client;
  /** Further clients, in nodes' namespaces ({@link #clientIn}), closed with the rest. */
  private final List<NetnsClient.Remote> moreClients = new ArrayList<>();
  private boolean closed;

  private MultiHostCluster(List<String> nodeIds, NetNamespaces net, Path home, CliProcesses cli,
                           NetnsClient.Remote client) {
    this.nodeIds = nodeIds;
    this.net = net;
    this.home = home;
    this.cli = cli;
    this.client = client;
  }

  /**
   * Makes the network (after removing what dead runs left) and starts the client in host {@code clientHost}; throws
   * {@link IllegalStateException} when this machine does not allow the namespaces (the caller skips).
   */
  static MultiHostCluster create(List<String> nodeIds, String clientHost) throws IOException {
    NetNamespaces.removeStale().forEach(s -> System.out.println("MultiHost: " + s));
    List<String> hosts = new ArrayList<>(nodeIds);
    hosts.add(clientHost);
    NetNamespaces net = NetNamespaces.create(hosts);
    CliProcesses cli = null;
    try {
      Path home = Path.of("target", "kiln-it", "multihost-" + net.run()).toAbsolutePath();
      cli = new CliProcesses(home);
      String hostname = Files.readString(Path.of("/proc/sys/kernel/hostname")).strip();
      for (String n : nodeIds) {
        StringBuilder h = new StringBuilder("127.0.0.1 localhost\n" + net.address(n) + " " + hostname + "\n");
        for (String m : nodeIds) {
          h.append(net.address(m)).append(' ').append(SERVICE).append('\n');
        }
        Files.writeString(home.resolve("hosts-" + n), h);
      }
      NetnsClient.Remote client = new NetnsClient.Remote(net.exec(clientHost), home.resolve("client.err"));
      System.out.println("MultiHost: run " + net.run() + ", nodes " + nodeIds.stream().map(net::address).toList()
          + ", client " + net.address(clientHost) + ", output in " + home);
      return new MultiHostCluster(nodeIds, net, home, cli, client);
    } catch (IOException | RuntimeException e) {
      try {
        if (cli != null) {
          cli.close();
        }
      } catch (Exception ignored) {
        // the namespaces go below either way
      }
      net.close();
      throw e;
    }
  }

  /** Starts node {@code id} in its namespace; {@code more} are further {@code kiln start} options. */
  KilnProcess start(String id, List<String> more) {
    List<String> args = new ArrayList<>(List.of("start", "--foreground", "--node-id", id,
        "--discovery", "k8s-dns:" + SERVICE, "--host", net.address(id), "--port", Integer.toString(HTTP_PORT),
        "--grpc-port", Integer.toString(GRPC_PORT), "--cluster-port", Integer.toString(CLUSTER_PORT), "--gpus", "0"));
    args.addAll(more);
    return cli.startNode(id, net.exec(id), List.of("-Djdk.net.hosts.file=" + home.resolve("hosts-" + id)),
        args.toArray(String[]::new));
  }

  /** Waits until node {@code id} recorded itself as running (it serves); fails at once if its process exited. */
  JsonNode awaitEntry(String id) {
    return cli.awaitEntry(id, START);
  }

  Process process(String id) {
    return cli.node(id).process();
  }

  String output(String id) {
    return cli.output(id);
  }

  String address(String host) {
    return net.address(host);
  }

  String url(String node, String path) {
    return "http://" + net.address(node) + ":" + HTTP_PORT + path;
  }

  Path home() {
    return home;
  }

  NetnsClient.Remote client() {
    return client;
  }

  /**
   * A second client, inside {@code host}'s own namespace (e.g. a node's: it reaches that node's gateway even while the
   * node's cable is pulled, as a caller on the same host would); closed with the cluster.
   */
  synchronized NetnsClient.Remote clientIn(String host) throws IOException {
    NetnsClient.Remote c = new NetnsClient.Remote(net.exec(host), home.resolve("client-" + host + ".err"));
    moreClients.add(c);
    return c;
  }

  NetNamespaces network() {
    return net;
  }

  /** {@code /api/v1/status} as {@code node}'s gateway answers it. */
  JsonNode status(String node, String token) throws Exception {
    return status(client, node, token);
  }

  /** {@code /api/v1/status} as {@code node}'s gateway answers it to {@code from}. */
  JsonNode status(NetnsClient.Remote from, String node, String token) throws Exception {
    NetnsClient.Remote.Answer a = from.http("GET", url(node, "/api/v1/status"), token, null);
    assertThat(a.status()).as(a.body()).isEqualTo(200);
    return a.json();
  }

  /** The last lines of every node's output, stack frames left out. */
  String logTails() {
    StringBuilder b = new StringBuilder();
    for (String n : nodeIds) {
      List<String> lines = cli.output(n).lines().filter(l -> !l.startsWith("\tat ")).toList();
      b.append("\n--- ").append(n).append(" (last lines) ---\n")
          .append(String.join("\n", lines.subList(Math.max(0, lines.size() - 15), lines.size())));
    }
    return b.toString();
  }

  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    List<NetnsClient.Remote> all = new ArrayList<>(moreClients);
    all.add(0, client);
    for (NetnsClient.Remote c : all) {
      try {
        c.close();
      } catch (Exception e) {
        System.err.println("MultiHost: closing a client: " + e);
      }
    }
    try {
      cli.close(); // kills the nodes still running
    } catch (Exception e) {
      System.err.println("MultiHost: stopping the nodes: " + e);
    }
    net.close();
  }
}
