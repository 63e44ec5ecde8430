package io.kiln.deploy;

import java.nio.file.Path;
import picocli.CommandLine.Option;

/** Options every client command shares: where the node is, the management token, whom to trust over TLS. */
final class ClientOptions {

  @Option(names = "--address", description = "management address of a node, http://HOST:PORT or https://HOST:PORT "
      + "(default: the local node, else http://127.0.0.1:8000)")
  String address;

  @Option(names = "--token", description = "management token (default: $KILN_TOKEN)")
  String token;

  @Option(names = "--cacert", paramLabel = "PEM", description = "trust these certificates for an https:// node "
      + "(default: $KILN_CACERT; a local node's own certificate; else the JDK's trusted authorities)")
  Path cacert;

  ManagementClient client() {
    String t = token != null ? token : System.getenv("KILN_TOKEN");
    LocalNodes.Target target = LocalNodes.target(address);
    String env = System.getenv("KILN_CACERT");
    Path trust = cacert != null ? cacert : env != null && !env.isBlank() ? Path.of(env) : target.trust();
    return new ManagementClient(target.address(), t, trust);
  }
}
