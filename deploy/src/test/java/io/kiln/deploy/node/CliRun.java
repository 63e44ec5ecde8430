package io.kiln.deploy.node;

import io.kiln.deploy.KilnCommands;
import java.io.PrintWriter;
import java.io.StringWriter;

/** One {@code kiln} command run in this JVM against a {@link ManagedNode}'s management API. */
record CliRun(int code, String out, String err) {

  static CliRun kiln(ManagedNode node, String... args) {
    String[] all = java.util.Arrays.copyOf(args, args.length + 2);
    all[args.length] = "--address";
    all[args.length + 1] = "http://127.0.0.1:" + node.gateway.httpPort();
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = KilnCommands.run(new PrintWriter(out), new PrintWriter(err), all);
    return new CliRun(code, out.toString(), err.toString());
  }
}
