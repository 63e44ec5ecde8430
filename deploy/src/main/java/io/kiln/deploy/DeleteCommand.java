package io.kiln.deploy;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code kiln delete NAME}: drain and remove a deployment. */
@Command(name = "delete", description = "Drain and remove a deployment (all its versions).")
final class DeleteCommand implements Callable<Integer> {

  @Spec
  CommandSpec spec;

  @Parameters(index = "0", paramLabel = "NAME")
  String name;

  @Mixin
  ClientOptions client = new ClientOptions();

  @Override
  public Integer call() {
    client.client().delete("api/v1/deployments/" + java.net.URLEncoder.encode(name, java.nio.charset.StandardCharsets.UTF_8));
    spec.commandLine().getOut().println("deleting " + name + ": its pools drain (queued requests finish), then go away");
    return 0;
  }
}
