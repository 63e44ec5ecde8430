package io.kiln.deploy;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

/** {@code kiln delete NAME}: drain and remove a deployment. */
@Command(name = "delete", description = "Drain and remove a deployment (all its versions).")
final class DeleteCommand implements Callable<Integer> {

  @Parameters(index = "0", paramLabel = "NAME")
  String name;

  @Mixin
  ClientOptions client = new ClientOptions();

  @Override
  public Integer call() {
    client.client().delete("api/v1/deployments/" + java.net.URLEncoder.encode(name, java.nio.charset.StandardCharsets.UTF_8));
    System.out.println("deleting " + name + ": its pools drain (queued requests finish), then go away");
    return 0;
  }
}
