package io.kiln.deploy;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code kiln deploy FILE.yaml [--dry-run]}: validate, plan and apply deployments. */
@Command(name = "deploy", description = "Deploy (or with --dry-run, plan) the deployments in a YAML file.")
final class DeployCommand implements Callable<Integer> {

  /** Same cap the server applies; refused here before reading a huge file. */
  static final long MAX_YAML_BYTES = 1024 * 1024;

  @Parameters(index = "0", paramLabel = "FILE.yaml")
  Path file;

  @Option(names = "--dry-run", description = "print the plan (which pools on which nodes) and change nothing")
  boolean dryRun;

  @Mixin
  ClientOptions client = new ClientOptions();

  @Override
  public Integer call() throws IOException {
    Path abs = file.toAbsolutePath().normalize();
    if (!Files.isRegularFile(abs)) {
      throw new CliException("no such file: " + file);
    }
    if (Files.size(abs) > MAX_YAML_BYTES) {
      throw new CliException(file + " is larger than " + MAX_YAML_BYTES + " bytes");
    }
    String yaml = Files.readString(abs);
    String path = "api/v1/deployments?" + ManagementClient.query("source", abs.toString())
        + (dryRun ? "&dry_run=true" : "");
    try {
      JsonNode result = client.client().postYaml(path, yaml);
      System.out.print(result.path("planText").asText(""));
      System.out.println(dryRun ? "dry run: nothing was changed" : "applied " + result.path("deployments").size()
          + " deployment(s); see ./kiln status");
      return 0;
    } catch (CliException e) {
      if (e.body() != null && e.body().has("problems")) {
        System.err.println(file + " is invalid; nothing was applied:");
        for (JsonNode p : e.body().get("problems")) {
          System.err.println("  " + p.path("file").asText() + ":" + p.path("line").asInt() + ":" + p.path("column").asInt()
              + ": " + (p.path("path").asText().isEmpty() ? "" : p.path("path").asText() + ": ")
              + p.path("message").asText());
        }
        return 1;
      }
      throw e;
    }
  }
}
