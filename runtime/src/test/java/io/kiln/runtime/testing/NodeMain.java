package io.kiln.runtime.testing;

import io.kiln.runtime.ClusterOptions;
import io.kiln.runtime.KilnCluster;
import io.kiln.runtime.KilnRuntime;
import io.kiln.runtime.NodeOptions;
import io.kiln.runtime.Resources;
import java.io.InputStream;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A cluster node in its own process, for the multi-process tests: {@code --node-id --cluster --port --join
 * --resources k=v,k=v --failure-timeout-ms N} (4000 by default). Prints {@code KILN-NODE-READY <clusterPort>} once joined; shuts down cleanly
 * when its stdin closes (and dies abruptly on SIGKILL, which is the point).
 */
public final class NodeMain {

  private NodeMain() {
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> a = new HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      a.put(args[i].replaceFirst("^--", ""), args[i + 1]);
    }
    Resources res = Resources.NONE;
    for (String kv : a.getOrDefault("resources", "").split(",")) {
      if (!kv.isBlank()) {
        String[] p = kv.split("=");
        res = res.with(p[0], Double.parseDouble(p[1]));
      }
    }
    String join = a.get("join");
    ClusterOptions cluster = new ClusterOptions(a.get("cluster"), "127.0.0.1", Integer.parseInt(a.getOrDefault("port", "0")),
        join == null ? List.of() : List.of(join), Duration.ofSeconds(1),
        Duration.ofMillis(Long.parseLong(a.getOrDefault("failure-timeout-ms", "4000"))), null);
    KilnRuntime rt = KilnCluster.join(new NodeOptions(a.get("node-id"), "127.0.0.1", res, Map.of()), cluster)
        .toCompletableFuture().get();
    System.out.println("KILN-NODE-READY " + KilnCluster.clusterPort(rt));
    System.out.flush();
    InputStream in = System.in;
    while (in.read() >= 0) {
      // wait for the parent to close our stdin
    }
    rt.close();
    System.exit(0);
  }
}
