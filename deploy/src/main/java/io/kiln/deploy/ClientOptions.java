package io.kiln.deploy;

import picocli.CommandLine.Option;

/** Options every client command shares: where the node is and the management token. */
final class ClientOptions {

  @Option(names = "--address", description = "management address of a node (default: the local node, else "
      + "http://127.0.0.1:8000)")
  String address;

  @Option(names = "--token", description = "management token (default: $KILN_TOKEN)")
  String token;

  ManagementClient client() {
    String t = token != null ? token : System.getenv("KILN_TOKEN");
    return new ManagementClient(LocalNodes.address(address), t);
  }
}
